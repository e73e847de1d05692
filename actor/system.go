package actor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// System is a running actor system: the guardians, the dead-letter sink, the event
// stream, extensions and coordinated shutdown. Create it with New and stop it with
// Shutdown.
type System struct {
	name string
	cfg  Config
	log  *zap.Logger

	root, user, sysg *cell
	userDone         chan struct{}
	sysDone          chan struct{}
	rootDone         chan struct{}

	nextID      atomic.Uint64 // ids of actors and futures
	uidKey      uint64        // random: makes actor uids differ between systems
	deadLetters Ref
	events      *EventStream
	dl          deadLetterLog
	dlCount     atomic.Uint64
	shutdown    *CoordinatedShutdown
	asks        askTimeouts
	inlining    atomic.Int32 // blocking asks running their recipient inline
	disp        *dispatcher
	jan         *janitor

	extMu sync.Mutex
	exts  map[any]*extensionSlot

	transport atomic.Pointer[Transport]
	addrStr   atomic.Pointer[string] // Address().String() once the transport is installed
	temps     sync.Map               // uint64 -> *Future: futures whose path was handed out

	metrics    *sysMetrics  // nil while metrics are off
	tracer     trace.Tracer // nil while tracing is off
	termMu     sync.Mutex
	onTerm     []func() // OnTerminated's functions
	terminated bool
}

// New starts an actor system. The name appears in logs and, later, in remote addresses:
// letters, digits, '-' and '_' only.
func New(name string, cfg Config) (*System, error) {
	if err := validateSystemName(name); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	s := &System{
		name:     name,
		cfg:      cfg,
		log:      cfg.Logger.With(zap.String("system", name)),
		userDone: make(chan struct{}),
		sysDone:  make(chan struct{}),
		rootDone: make(chan struct{}),
		exts:     make(map[any]*extensionSlot),
		disp:     newDispatcher(),
		jan:      newJanitor(),
		uidKey:   rand.Uint64(),
	}
	s.asks.done = make(chan struct{})
	s.deadLetters = Ref{&deadLetterSink{sys: s}}
	s.events = newEventStream()
	s.dl.init(cfg, s.log)
	s.startMetrics()
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(TracerName)
	}
	s.shutdown = newCoordinatedShutdown(s)

	guardian := &Props{Producer: func() Actor { return ReceiveFunc(func(Context) {}) }}
	userName, sysName := "user", "system"
	s.root = &cell{sys: s, props: guardian, id: s.newID()}
	s.user = &cell{sys: s, parent: s.root, props: guardian, name: &userName, id: s.newID()}
	s.sysg = &cell{sys: s, parent: s.root, props: guardian, name: &sysName, id: s.newID()}
	for _, g := range []*cell{s.root, s.user, s.sysg} {
		g.x.Store(&extras{})
	}
	s.root.x.Load().children.add(s.user)
	s.root.x.Load().children.add(s.sysg)
	for _, g := range []*cell{s.root, s.user, s.sysg} {
		s.disp.submit(g) // g.sched is schedRunning, its zero value
	}
	return s, nil
}

func validateSystemName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty system name", ErrInvalidName)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: system name %q has %q", ErrInvalidName, name, r)
		}
	}
	return nil
}

// newID returns a new id for an actor: never the one whose uid would be 0.
func (s *System) newID() uint64 {
	for {
		if id := s.nextID.Add(1); id != s.uidKey {
			return id
		}
	}
}

// uidOf returns the uid of the actor with the given id: the id mixed with the system's
// random key by a bijection (murmur3's finalizer), so uids look random, differ between
// systems, and never repeat within one, which random draws could not promise. It is 0
// only for id == uidKey, which newID never returns.
func (s *System) uidOf(id uint64) uint64 {
	x := id ^ s.uidKey
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Name returns the system's name.
func (s *System) Name() string { return s.name }

// Logger returns the system's logger.
func (s *System) Logger() *zap.Logger { return s.log }

// Config returns the configuration in force, defaults filled in.
func (s *System) Config() Config { return s.cfg }

// EventStream returns the system's publish/subscribe bus.
func (s *System) EventStream() *EventStream { return s.events }

// DeadLetters returns the Ref of the dead-letter sink: messages sent to it are published
// as DeadLetter, and watching it yields Terminated at once.
func (s *System) DeadLetters() Ref { return s.deadLetters }

// CoordinatedShutdown returns the shutdown sequence, for registering tasks.
func (s *System) CoordinatedShutdown() *CoordinatedShutdown { return s.shutdown }

// Spawn starts a top-level actor under /user. Safe from any goroutine.
func (s *System) Spawn(props *Props, name string) (Ref, error) {
	return s.user.spawnChild(props, name)
}

// SpawnSystem starts an actor under /system. It is meant for Troupe's own layers
// (sharding, cluster, ...), which must outlive user actors during shutdown.
func (s *System) SpawnSystem(props *Props, name string) (Ref, error) {
	return s.sysg.spawnChild(props, name)
}

// Stop asks any actor to stop, asynchronously: a local actor of this system, or an
// actor in another system through the transport (which carries the request on its
// reliable system lane). It returns ErrNotFound for the zero Ref, a Future, or an actor
// of another local System. Watch the actor, or use testkit, to know when it has stopped.
func (s *System) Stop(ref Ref) error {
	switch p := ref.p.(type) {
	case *cell:
		if p.sys == s {
			p.sendSystem(sysStop{})
			return nil
		}
	case foreign:
		if p.sys == s {
			p.sendSystem(sysStop{})
			return nil
		}
	}
	return fmt.Errorf("%w: %v cannot be stopped from system %s", ErrNotFound, ref, s.name)
}

// Resolve returns the actor at path: a local path such as "/user/a/b", or a full path
// such as troupe://sys@127.0.0.1:2552/user/a (see Ref.URI). A "#uid" suffix selects one
// incarnation: an actor at the path with another uid is not found. A path in another
// system needs remoting (package remote) and returns a Ref without checking that the
// actor exists, as the check would need a round trip; messages to a missing actor
// become dead letters there.
func (s *System) Resolve(path string) (Ref, error) {
	addr, local, uid, err := ParsePath(path)
	if err != nil {
		return Ref{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if addr != (Address{}) && addr != s.Address() {
		t := s.transport.Load()
		if t == nil || !addr.HasHost() {
			return Ref{}, fmt.Errorf("%w: %s is not this system (%s) and remoting is off", ErrNotFound, addr, s.Address())
		}
		return (*t).ResolveRemote(addr, local, uid)
	}
	return s.resolveLocal(local, uid)
}

func (s *System) resolveLocal(path string, uid uint64) (Ref, error) {
	if rest, ok := strings.CutPrefix(path, "/temp/$"); ok {
		id, err := strconv.ParseUint(rest, 36, 64)
		if f, found := s.temps.Load(id); err == nil && found && (uid == 0 || uid == id) {
			return Ref{f.(*Future)}, nil
		}
		return Ref{}, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	c := s.root
	if path == "/" {
		return Ref{c}, nil
	}
	for _, name := range strings.Split(path[1:], "/") {
		x := c.x.Load()
		if x == nil {
			return Ref{}, fmt.Errorf("%w: %s", ErrNotFound, path)
		}
		x.mu.Lock()
		next := x.children.get(name)
		x.mu.Unlock()
		if next == nil {
			return Ref{}, fmt.Errorf("%w: %s", ErrNotFound, path)
		}
		c = next
	}
	if c.isDead() || uid != 0 && c.uid() != uid {
		return Ref{}, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	return Ref{c}, nil
}

// Shutdown runs coordinated shutdown: every phase in order, each with its tasks and
// timeout, and finally stops all actors (user actors first, then system actors). It
// returns the errors of tasks that failed or overran. A second call waits for the first
// and returns the same result.
func (s *System) Shutdown(ctx context.Context) error {
	return s.shutdown.run(ctx)
}

// Terminated is closed when the system has shut down.
func (s *System) Terminated() <-chan struct{} { return s.rootDone }

// cellStopped marks the end of the guardians.
func (s *System) cellStopped(c *cell) {
	switch c {
	case s.user:
		close(s.userDone)
	case s.sysg:
		close(s.sysDone)
	case s.root:
		s.dl.stop()
		s.asks.stop()
		s.disp.close()
		s.jan.close()
		s.runOnTerminated()
		close(s.rootDone)
	}
}

// stopActors is the final task: user actors, then system actors, then the root.
func (s *System) stopActors(ctx context.Context) error {
	steps := []struct {
		c    *cell
		done chan struct{}
	}{{s.user, s.userDone}, {s.sysg, s.sysDone}, {s.root, s.rootDone}}
	for _, st := range steps {
		st.c.sendSystem(sysStop{})
		select {
		case <-st.done:
		case <-ctx.Done():
			return fmt.Errorf("stopping %s: %w", st.c.path(), ctx.Err())
		}
	}
	return nil
}
