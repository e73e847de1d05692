package actor

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// EventStream is a system-wide publish/subscribe bus. Subscribers are actors; each
// subscription names the event type it wants (see Subscribe). Publishing is lock-free
// and never blocks.
type EventStream struct {
	mu   sync.Mutex // serialises writers
	subs atomic.Pointer[[]subscription]
}

type subscription struct {
	ref   Ref
	match func(any) bool
	kind  string
}

func newEventStream() *EventStream {
	es := &EventStream{}
	es.subs.Store(&[]subscription{})
	return es
}

// Subscribe makes ref receive every event published on es that is of type T (or, when T
// is an interface, implements it). Subscribing twice to the same T is a no-op.
func Subscribe[T any](es *EventStream, ref Ref) {
	if ref.IsZero() {
		return
	}
	kind := fmt.Sprintf("%T", (*T)(nil))
	es.mu.Lock()
	defer es.mu.Unlock()
	old := *es.subs.Load()
	for _, s := range old {
		if s.ref == ref && s.kind == kind {
			return
		}
	}
	next := append(append([]subscription(nil), old...), subscription{
		ref:   ref,
		kind:  kind,
		match: func(e any) bool { _, ok := e.(T); return ok },
	})
	es.subs.Store(&next)
}

// Unsubscribe removes every subscription of ref.
func (es *EventStream) Unsubscribe(ref Ref) {
	es.mu.Lock()
	defer es.mu.Unlock()
	old := *es.subs.Load()
	next := make([]subscription, 0, len(old))
	for _, s := range old {
		if s.ref != ref {
			next = append(next, s)
		}
	}
	es.subs.Store(&next)
}

// Publish delivers event to every matching subscriber. Subscribers that have stopped
// are dropped.
func (es *EventStream) Publish(event any) {
	if event == nil {
		return
	}
	var dead []Ref
	for _, s := range *es.subs.Load() {
		if !s.match(event) {
			continue
		}
		if s.ref.p.isDead() {
			dead = append(dead, s.ref)
			continue
		}
		_ = s.ref.Tell(event)
	}
	for _, r := range dead {
		es.Unsubscribe(r)
	}
}
