package actor

import (
	"sync"
	"sync/atomic"
)

// ExtensionID identifies a per-system extension of type T, such as sharding or the
// cluster: one instance per System, created on first use. Declare one package-level
// ExtensionID per extension and expose a Get function around it.
type ExtensionID[T any] struct {
	name   string
	create func(*System) T
}

// NewExtensionID declares an extension; create builds the instance for a system. create
// may use other extensions but must not Get its own ID.
func NewExtensionID[T any](name string, create func(*System) T) *ExtensionID[T] {
	return &ExtensionID[T]{name: name, create: create}
}

// Name returns the extension's name.
func (id *ExtensionID[T]) Name() string { return id.name }

// Get returns the system's instance, creating it on the first call. Concurrent first
// calls create it once.
func (id *ExtensionID[T]) Get(s *System) T {
	s.extMu.Lock()
	slot, ok := s.exts[id]
	if !ok {
		slot = &extensionSlot{}
		s.exts[id] = slot
	}
	s.extMu.Unlock()
	slot.once.Do(func() { slot.value = id.create(s) })
	return slot.value.(T)
}

type extensionSlot struct {
	once  sync.Once
	value any
}

// OncePerSystem is an extension that a program starts explicitly, at most once per
// System, and that others then find: remote, the cluster, persistence, distributed
// data, management. It gives every such package the same Start and Get:
//
//	var thing = actor.NewOncePerSystem[Thing]("thing")
//
//	func Start(sys *actor.System, cfg Config) (*Thing, error) {
//		return thing.Start(sys, ErrAlreadyStarted, func() (*Thing, error) { ... })
//	}
//
//	func Get(sys *actor.System) *Thing { return thing.Get(sys) }
type OncePerSystem[T any] struct {
	id *ExtensionID[*onceSlot[T]]
}

type onceSlot[T any] struct {
	mu sync.Mutex // held while an instance starts: concurrent Starts run one at a time
	v  atomic.Pointer[T]
}

// NewOncePerSystem declares an extension that is started explicitly; name names it.
func NewOncePerSystem[T any](name string) *OncePerSystem[T] {
	return &OncePerSystem[T]{id: NewExtensionID(name, func(*System) *onceSlot[T] { return &onceSlot[T]{} })}
}

// Start runs start and keeps the instance it returns as sys's, unless sys already has
// one: then it returns already, without running start. An error from start is
// returned as it is, and leaves sys without an instance, so that a later Start may
// try again. Starts for the same system run one at a time; Get does not wait for them
// and returns nil until an instance is kept.
func (s *OncePerSystem[T]) Start(sys *System, already error, start func() (*T, error)) (*T, error) {
	slot := s.id.Get(sys)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.v.Load() != nil {
		return nil, already
	}
	v, err := start()
	if err != nil {
		return nil, err
	}
	slot.v.Store(v)
	return v, nil
}

// Get returns sys's instance, or nil before a Start succeeded. It takes no lock.
func (s *OncePerSystem[T]) Get(sys *System) *T { return s.id.Get(sys).v.Load() }
