package actor

import (
	"fmt"
	"math/rand/v2"
	"strconv"
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
	anonymous := name == ""
	if anonymous {
		// Unique by construction: '$' is reserved for these names, and the id is
		// unique in the system.
		var buf [16]byte
		name = string(strconv.AppendUint(append(buf[:0], '$'), c.sys.nextID.Add(1), 36))
	} else if err := validateName(name); err != nil {
		return Ref{}, err
	}
	child := &cell{sys: c.sys, parent: c, props: props, name: name, uid: newUID()}
	if props.hasCustomMailbox() {
		box, err := props.newMailbox()
		if err != nil {
			return Ref{}, err
		}
		child.box = box
	}
	x := c.extras()
	x.mu.Lock()
	if x.closed || (!c.isGuardian() && c.state.Load() >= stateStopping) {
		x.mu.Unlock()
		return Ref{}, fmt.Errorf("%w: %s", ErrStopping, c.path())
	}
	if !anonymous {
		if _, taken := x.children[name]; taken {
			x.mu.Unlock()
			return Ref{}, fmt.Errorf("%w: %q under %s", ErrNameTaken, name, c.path())
		}
	}
	if x.children == nil {
		x.children = make(map[string]*cell)
	}
	x.children[name] = child
	x.mu.Unlock()
	child.sched.Store(schedRunning)
	c.sys.disp.submit(child)
	return Ref{child}, nil
}

// newUID returns a random nonzero actor uid.
func newUID() uint64 {
	for {
		if u := rand.Uint64(); u != 0 {
			return u
		}
	}
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
