package singleton

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/lease"
)

// State is a manager's state, as Akka's singleton manager's states.
type State uint8

// The manager's states.
const (
	// StateStart: this member is not Up yet; the manager waits.
	StateStart State = State(core.StateStart)
	// StateYounger: another member is the oldest.
	StateYounger State = State(core.StateYounger)
	// StateBecomingOldest: this member is the oldest, but an older member has not yet
	// handed the singleton over (or been removed).
	StateBecomingOldest State = State(core.StateBecomingOldest)
	// StateOldest: the singleton runs here (once the lease, if any, is held).
	StateOldest State = State(core.StateOldest)
	// StateWasOldest: this member is leaving and still runs the singleton; it asked
	// the next oldest to take over.
	StateWasOldest State = State(core.StateWasOldest)
	// StateHandingOver: the singleton was sent its termination message; the hand-over
	// completes when it has terminated.
	StateHandingOver State = State(core.StateHandingOver)
	// StateStopping: this member was downed or removed; the manager stops once the
	// singleton has terminated.
	StateStopping State = State(core.StateStopping)
	// StateEnd: the manager handed the singleton over and will never run it again.
	StateEnd State = State(core.StateEnd)
)

// String returns the state's name, as in Akka ("Oldest", "HandingOver", ...).
func (s State) String() string { return core.State(s).String() }

// Status is what a manager says about itself: for tests, operators and the
// management page.
type Status struct {
	// Name is the singleton's name.
	Name string
	// State is the manager's state.
	State State
	// Oldest is the member the manager believes is the oldest with the singleton's
	// role (not counting members that handed over or are leaving); zero when there is
	// none, or before this member is Up.
	Oldest cluster.UniqueAddress
	// Running is true while the singleton runs on this member (from its start until
	// its termination; a restart after a failure counts as running).
	Running bool
	// Finished is true when this member, leaving, may leave without losing anything:
	// the singleton has terminated here and what the manager held was passed on. It
	// is also true once the manager has stopped.
	Finished bool
	// Stopped is true once the manager has stopped: its member was downed, removed,
	// or its system shut down.
	Stopped bool
	// Dropped counts the messages this manager dropped (see Undelivered).
	Dropped uint64
}

// Manager is the singleton manager of one singleton on this member. Start starts it
// and Get finds it. Its methods are safe for concurrent use.
type Manager struct {
	name string
	ref  actor.Ref

	mu      sync.Mutex
	status  Status
	changed chan struct{} // closed and replaced at every change of status
}

// Start starts the manager of the singleton cfg describes on sys's member, under
// /system/singleton/<Name>. Start it on every member with cfg.Role, with the same
// configuration: the manager on the oldest of them runs the singleton (as its child,
// /system/singleton/<Name>/<Name>) and hands it over when that member leaves. The
// manager does nothing until this member is Up.
//
// Start needs remoting and the cluster started in sys (remote.Start, cluster.Start).
// The messages managers and proxies exchange are Troupe's own wire types: nothing to
// register for them. Several singletons of different names may run in one system; a second
// Start for the same name fails with ErrAlreadyStarted. An invalid configuration, a
// missing cluster, or a member without cfg.Role fails with an error wrapping
// ErrInvalidConfig.
//
// When sys shuts down, the manager hands the singleton over in the
// before-cluster-shutdown phase of coordinated shutdown, before the member leaves the
// cluster (cluster-leave); the phase waits until nothing is lost by leaving
// (Status.Finished), up to its timeout. With cfg.CallerHandsOver the caller runs the
// hand-over itself (Manager.HandOver) and Start adds no shutdown task.
func Start(sys *actor.System, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if u, ok := cfg.Lease.(lease.SystemLogger); ok {
		u.UseSystemLogger(sys.Logger())
	}
	c, err := clusterOf(sys)
	if err != nil {
		return nil, err
	}
	if cfg.Role != "" {
		if self, ok := selfMember(c); ok && !slices.Contains(self.Roles, cfg.Role) {
			return nil, fmt.Errorf("%w: this member does not have the role %q of singleton %q",
				ErrInvalidConfig, cfg.Role, cfg.Name)
		}
	}
	reg, res, err := serializationOf(sys)
	if err != nil {
		return nil, err
	}
	e := extensionOf(sys)
	e.mu.Lock()
	if _, dup := e.managers[cfg.Name]; dup {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: singleton %q", ErrAlreadyStarted, cfg.Name)
	}
	m := &Manager{name: cfg.Name, changed: make(chan struct{}), status: Status{Name: cfg.Name}}
	e.managers[cfg.Name] = m
	e.mu.Unlock()
	fail := func(err error) (*Manager, error) {
		e.mu.Lock()
		delete(e.managers, cfg.Name)
		e.mu.Unlock()
		return nil, err
	}
	props := managerProps(m, cfg, c, reg, res, e.metrics)
	ref, err := e.spawn(managerGuardian, props, cfg.Name)
	if err != nil {
		return fail(fmt.Errorf("singleton %q: starting its manager: %w", cfg.Name, err))
	}
	m.ref = ref
	if cfg.CallerHandsOver {
		return m, nil // the caller runs HandOver at its point of the shutdown (sharding)
	}
	if err := sys.CoordinatedShutdown().AddTask(actor.PhaseBeforeClusterShutdown, "singleton-hand-over-"+cfg.Name,
		m.HandOver); err != nil {
		_ = sys.Stop(ref)
		return fail(fmt.Errorf("singleton %q: %w", cfg.Name, err))
	}
	return m, nil
}

// Get returns the manager Start started for the singleton name in sys ("" is
// DefaultName), or nil.
func Get(sys *actor.System, name string) *Manager {
	if name == "" {
		name = DefaultName
	}
	e := extensionOf(sys)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.managers[name]
}

// Managers returns the managers Start started in sys (those of sharding's coordinators
// included), in name order: with their Status, where each singleton runs as this member
// sees it. Managers that stopped are still listed (Status.Stopped).
func Managers(sys *actor.System) []*Manager {
	e := extensionOf(sys)
	e.mu.Lock()
	out := make([]*Manager, 0, len(e.managers))
	for _, m := range e.managers {
		out = append(out, m)
	}
	e.mu.Unlock()
	slices.SortFunc(out, func(a, b *Manager) int { return strings.Compare(a.name, b.name) })
	return out
}

// Name returns the singleton's name.
func (m *Manager) Name() string { return m.name }

// Status returns the manager's current status.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// AwaitStatus waits until cond holds for the manager's status, checking it now and
// at every change, and returns that status. It returns ctx's error when ctx ends
// first, and ErrStopped when the manager stopped without cond holding.
func (m *Manager) AwaitStatus(ctx context.Context, cond func(Status) bool) (Status, error) {
	for {
		m.mu.Lock()
		s, ch := m.status, m.changed
		m.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		if s.Stopped {
			return s, fmt.Errorf("%w: singleton %q", ErrStopped, m.name)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s, fmt.Errorf("singleton %q: status %s: %w", m.name, s.State, ctx.Err())
		}
	}
}

// update changes the status with f and wakes the waiters.
func (m *Manager) update(f func(*Status)) {
	m.mu.Lock()
	old := m.status
	f(&m.status)
	if m.status != old {
		close(m.changed)
		m.changed = make(chan struct{})
	}
	m.mu.Unlock()
}

// HandOver hands the singleton over because this member is leaving the cluster: it
// tells the manager that the member leaves, and waits until the member may leave
// without losing anything (Status.Finished: the singleton has terminated here, or
// never ran here, and what the manager held was passed on to the next oldest). It
// returns ctx's error when ctx ends first, and nil once the manager has stopped.
//
// It is the manager's coordinated-shutdown task, which Start adds itself unless
// Config.CallerHandsOver is set; then the caller must call it during its shutdown,
// before the member leaves the cluster (in a phase before actor.PhaseClusterLeave).
// After it the manager never runs the singleton on this member again, so call it only
// when the member is about to leave. Calling it again waits for the same condition.
func (m *Manager) HandOver(ctx context.Context) error {
	if m.Status().Stopped {
		return nil
	}
	if err := m.ref.Tell(selfLeaving{}); err != nil {
		return nil // the manager has stopped
	}
	_, err := m.AwaitStatus(ctx, func(s Status) bool { return s.Finished })
	if err != nil && m.Status().Stopped {
		return nil
	}
	return err
}
