package actor

import "sync"

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
