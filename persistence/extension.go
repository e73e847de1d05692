package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// Settings are what event-sourced actors of one system persist with.
type Settings struct {
	// Journal stores events. Required.
	Journal Journal
	// Snapshots stores snapshots; nil disables them (SaveSnapshot then fails).
	Snapshots SnapshotStore
	// Registry serialises events and snapshots. Required: only registered types
	// are persisted; any other is rejected.
	Registry *serialization.Registry
	// ReplayBatch is how many replayed events travel in one message to the actor
	// during recovery. Default 256.
	ReplayBatch int
	// CloseOnShutdown hands the plug-ins to the system: once coordinated shutdown has
	// stopped every actor, the journal and the snapshot store are closed (once, when
	// they are the same value) if they implement io.Closer. Otherwise the caller
	// closes them after the system has shut down.
	CloseOnShutdown bool

	resolver refResolver // resolves actor paths in decoded events and snapshots
}

// refResolver resolves the actor paths stored in events and snapshots in the
// system: a local actor, a remote one with remoting, or dead letters for an actor
// that is gone (a Ref in an old event may outlive its actor).
type refResolver struct{ sys *actor.System }

func (r refResolver) ResolveRef(uri string) (actor.Ref, error) {
	ref, err := r.sys.Resolve(uri)
	if errors.Is(err, actor.ErrNotFound) {
		return r.sys.DeadLetters(), nil
	}
	return ref, err
}

// Validate reports missing plug-ins and out-of-range values.
func (s Settings) Validate() error {
	switch {
	case s.Journal == nil:
		return fmt.Errorf("%w: Settings.Journal is nil", ErrNotConfigured)
	case s.Registry == nil:
		return fmt.Errorf("%w: Settings.Registry is nil", ErrNotConfigured)
	case s.ReplayBatch < 0:
		return fmt.Errorf("%w: negative ReplayBatch %d", ErrNotConfigured, s.ReplayBatch)
	}
	return nil
}

// ErrNotConfigured is returned by Setup for invalid settings, and stops an
// event-sourced actor started in a system without Setup.
var ErrNotConfigured = errors.New("persistence: not configured")

// ErrPersistenceIDInUse stops an event-sourced actor whose persistence id is already
// used by a live actor of the same system: two writers would corrupt its history.
var ErrPersistenceIDInUse = errors.New("persistence: persistence id already in use")

// errShortResults reports a journal that answered a call with fewer results than
// writes: a broken plug-in, treated as a failed call.
var errShortResults = errors.New("persistence: journal returned the wrong number of results")

// ErrRejected is returned by Persist and its variants when an event cannot be
// serialised. Nothing is written and the actor keeps running.
var ErrRejected = errors.New("persistence: event rejected")

// Persistence is the per-system extension holding the plug-ins and the registry of
// live persistence ids.
type Persistence struct {
	mu       sync.Mutex
	settings *Settings
	live     map[string]actor.Ref
	batcher  *batcher
	writing  map[string]writeState // persistence ids with a write in flight
}

var extensionID = actor.NewExtensionID("persistence", func(*actor.System) *Persistence {
	return &Persistence{live: make(map[string]actor.Ref), writing: make(map[string]writeState)}
})

// Get returns the system's persistence extension.
func Get(sys *actor.System) *Persistence { return extensionID.Get(sys) }

// Setup configures persistence for sys. Call it once, before starting event-sourced
// actors. The caller owns the plug-ins and closes them after the system has shut
// down, unless Settings.CloseOnShutdown hands them to the system.
func Setup(sys *actor.System, s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.ReplayBatch == 0 {
		s.ReplayBatch = 256
	}
	p := Get(sys)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settings != nil {
		return fmt.Errorf("%w: Setup called twice", ErrNotConfigured)
	}
	if s.CloseOnShutdown {
		err := sys.CoordinatedShutdown().AddTask(actor.PhaseActorSystemTerminate, "persistence-close", func(ctx context.Context) error {
			select {
			case <-sys.Terminated():
			case <-ctx.Done():
				return ctx.Err()
			}
			return closePlugins(s.Journal, s.Snapshots)
		})
		if err != nil {
			return err
		}
	}
	s.resolver = refResolver{sys: sys}
	p.settings = &s
	p.batcher = &batcher{journal: s.Journal}
	return nil
}

// sameValue reports whether a and b are one comparable value (comparing values of a
// type that cannot be compared would panic).
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.IsValid() && vb.IsValid() && va.Type() == vb.Type() && va.Comparable() && va.Equal(vb)
}

// closePlugins closes the journal and the snapshot store, once if they are one value.
func closePlugins(j Journal, snaps SnapshotStore) error {
	var errs []error
	if c, ok := j.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := snaps.(io.Closer); ok && !sameValue(snaps, j) {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

func (p *Persistence) config() (*Settings, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settings == nil {
		return nil, fmt.Errorf("%w: call persistence.Setup first", ErrNotConfigured)
	}
	return p.settings, nil
}

// claim registers ref as the one live writer of pid.
func (p *Persistence) claim(pid string, ref actor.Ref) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.live[pid]; ok && owner != ref {
		return fmt.Errorf("%w: %q is used by %v", ErrPersistenceIDInUse, pid, owner)
	}
	p.live[pid] = ref
	return nil
}

func (p *Persistence) release(pid string, ref actor.Ref) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live[pid] == ref {
		delete(p.live, pid)
	}
}

// writeState counts the writes of one persistence id in flight; ch, made only when a
// recovery waits, is closed when the count drops to zero.
type writeState struct {
	n  int
	ch chan struct{}
}

// writeStarted records that pid has a write in flight, until writeFinished. An entity
// has at most one write in flight, and a restarted entity does not start a write
// before its recovery, which waits for the previous one (awaitWrite); a count keeps
// the bookkeeping right even when an entity skips recovery.
func (p *Persistence) writeStarted(pid string) {
	p.mu.Lock()
	st := p.writing[pid]
	st.n++
	p.writing[pid] = st
	p.mu.Unlock()
}

// writeFinished marks the end of a write of pid that writeStarted recorded.
func (p *Persistence) writeFinished(pid string) {
	p.mu.Lock()
	st := p.writing[pid]
	st.n--
	if st.n > 0 {
		p.writing[pid] = st
		p.mu.Unlock()
		return
	}
	delete(p.writing, pid)
	p.mu.Unlock()
	if st.ch != nil {
		close(st.ch)
	}
}

// awaitWrite waits until no write of pid is in flight, so that a recovery sees the
// events of a previous incarnation's last write (as a journal actor that handles
// requests in order would guarantee) and never reuses their sequence numbers.
func (p *Persistence) awaitWrite(ctx context.Context, pid string) error {
	p.mu.Lock()
	st, ok := p.writing[pid]
	if !ok {
		p.mu.Unlock()
		return nil
	}
	if st.ch == nil {
		st.ch = make(chan struct{})
		p.writing[pid] = st
	}
	p.mu.Unlock()
	select {
	case <-st.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
