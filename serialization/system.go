package serialization

import (
	"sync/atomic"

	"github.com/troupe-go/troupe/actor"
)

// systemRegistry holds the registry attached to a system.
var systemRegistry = actor.NewExtensionID("troupe.serialization", func(*actor.System) *atomic.Pointer[Registry] {
	return new(atomic.Pointer[Registry])
})

// Get returns the registry attached to sys: the one its transport serializes messages
// with (remote.Start attaches remote.Config.Registry), or the one Attach attached; nil
// when none was. Code that serializes messages itself (to store them, or to send them
// over a channel of its own) uses it to agree with the transport on the type names.
func Get(sys *actor.System) *Registry { return systemRegistry.Get(sys).Load() }

// Attach makes reg the registry Get returns for sys, replacing the one attached
// before. remote.Start calls it with its Config.Registry; a system without a
// transport may attach the registry its other modules (persistence, ddata) share.
func Attach(sys *actor.System, reg *Registry) { systemRegistry.Get(sys).Store(reg) }
