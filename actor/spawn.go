package actor

import (
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/mailbox"
)

// spawnChild creates a child of c and schedules it to receive Started.
func (c *cell) spawnChild(props *Props, name string) (Ref, error) {
	if props == nil {
		return Ref{}, fmt.Errorf("%w: nil props", ErrInvalidProps)
	}
	if err := props.Validate(); err != nil {
		return Ref{}, err
	}
	child := &cell{sys: c.sys, parent: c, props: props}
	if name != "" {
		if err := validateName(name); err != nil {
			return Ref{}, err
		}
		named := name // allocated only here: &name would move every call's name to the heap
		child.name = &named
	}
	m := c.sys.metrics
	switch {
	case m != nil && props.MetricsKind != "":
		box, err := newTimedBox(props, m.kind(props.MetricsKind), m)
		if err != nil {
			return Ref{}, err
		}
		child.x.Store(&extras{box: box})
		child.state.Store(stateNew | stateBox)
	case props.hasCustomMailbox():
		box, err := props.newMailbox()
		if err != nil {
			return Ref{}, err
		}
		child.x.Store(&extras{box: box})
		child.state.Store(stateNew | stateBox)
	}
	x := c.extras()
	x.mu.Lock()
	if x.closed || (!c.isGuardian() && c.lifecycle() >= stateStopping) {
		x.mu.Unlock()
		return Ref{}, fmt.Errorf("%w: %s", ErrStopping, c.path())
	}
	if child.name != nil && x.children.named.get(name) != nil {
		x.mu.Unlock()
		return Ref{}, fmt.Errorf("%w: %q under %s", ErrNameTaken, name, c.path())
	}
	// Drawn under the lock, so that anonymous siblings are indexed in id order.
	child.id = c.sys.newID()
	x.children.add(child)
	x.mu.Unlock()
	if m != nil {
		m.spawned.Add(1)
	}
	c.sys.disp.submit(child) // child.sched is schedRunning, its zero value: we own it
	return Ref{child}, nil
}

// validateName accepts names made of letters, digits and "-_.:@+=~" that do not start
// with "$" (reserved for anonymous actors).
func validateName(name string) error {
	if name == "" || strings.HasPrefix(name, "$") {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("-_.:@+=~", r):
		default:
			return fmt.Errorf("%w: %q has %q", ErrInvalidName, name, r)
		}
	}
	return nil
}

var _ mailbox.Mailbox[envelope] = (*mailbox.Queue[envelope])(nil)
