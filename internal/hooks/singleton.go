package hooks

import (
	"context"
	"sync"

	"github.com/troupe-go/troupe/actor"
)

// A layer that runs its own cluster singletons (sharding's coordinators) may need their
// hand-over at a point of its own shutdown rather than in the singleton's phase:
// sharding hands its shards off first, while the coordinator still runs on the leaving
// member, and only then moves the coordinator (Akka's order). It claims the hand-over
// of a singleton name before singleton.Start; Start then registers no shutdown task of
// its own and leaves the hand-over function here for the layer to call.

type handOverSlot struct {
	mu      sync.Mutex
	claimed map[string]func(context.Context) error // nil value: claimed, not started
}

var handOverExt = actor.NewExtensionID("troupe.internal.hooks.singletonHandOver", func(*actor.System) *handOverSlot {
	return &handOverSlot{claimed: map[string]func(context.Context) error{}}
})

// ClaimSingletonHandOver says that the caller runs the hand-over of singleton name in
// sys itself (through SingletonHandOver), at shutdown.
func ClaimSingletonHandOver(sys *actor.System, name string) {
	s := handOverExt.Get(sys)
	s.mu.Lock()
	if _, ok := s.claimed[name]; !ok {
		s.claimed[name] = nil
	}
	s.mu.Unlock()
}

// OfferSingletonHandOver is called by singleton.Start: when name's hand-over is
// claimed it stores handOver for the claimant and returns true (Start then adds no
// shutdown task); otherwise it returns false.
func OfferSingletonHandOver(sys *actor.System, name string, handOver func(context.Context) error) bool {
	s := handOverExt.Get(sys)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claimed[name]; !ok {
		return false
	}
	s.claimed[name] = handOver
	return true
}

// SingletonHandOver returns the hand-over of singleton name, or nil when its manager
// was not started (or its hand-over not claimed).
func SingletonHandOver(sys *actor.System, name string) func(context.Context) error {
	s := handOverExt.Get(sys)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed[name]
}
