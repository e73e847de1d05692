package persistence

import "slices"

// PersistOption changes how events are persisted.
type PersistOption func(*persistOptions)

type persistOptions struct {
	tags []string
}

// WithTags stores every event of the call with tags, so that a query by tag
// (TagQuerier) finds them. Handlers, and Recover on replay, see the events
// themselves.
func WithTags(tags ...string) PersistOption {
	tags = slices.Clone(tags)
	return func(o *persistOptions) { o.tags = append(o.tags, tags...) }
}

func tagsOf(opts []PersistOption) []string {
	if len(opts) == 0 {
		return nil
	}
	var o persistOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.tags
}

// handler is a persist handler the runtime can call with an event of any type.
type handler interface{ run(event any) }

// typedHandler calls a typed handler; converting one to handler allocates nothing.
type typedHandler[E any] func(E)

func (h typedHandler[E]) run(event any) {
	e, _ := event.(E)
	h(e)
}

// typed adapts a typed handler to the runtime's; nil stays nil.
func typed[E any](h func(E)) handler {
	if h == nil {
		return nil
	}
	return typedHandler[E](h)
}

// Persist writes event and then calls handler with it (nil runs nothing). Until
// the handler has run, new commands are stashed, so the entity never sees a command
// against state its journal does not hold yet. The write is made after the current
// message has been handled, together with everything else it persisted.
//
// It returns an error wrapping ErrRejected, and writes nothing, when event cannot be
// serialised (its type is not registered) or recovery has not completed; the entity
// keeps running, and answers the command with the error if it is to be answered:
//
//	err := persistence.Persist(ctx, ev, func(ev E) { ctx.Respond(reply) })
//	if err != nil {
//		ctx.Respond(actor.Failure{Err: err}) // an Ask fails with err
//	}
//
// When the journal rejects the write, the entity receives PersistRejected instead of
// the handler call and keeps running; unless it answers the command there, the
// runtime answers the command's sender with actor.Failure wrapping ErrRejected and
// the journal's error. When the journal call fails, times out or is refused by the
// circuit breaker, the entity stops, since its state may no longer match its
// journal, and the runtime answers the command's sender with actor.Failure with the
// error. So an Ask of the command gets the handler's reply or the error, never a
// timeout for a persist that failed.
func Persist[E any](ctx Context, event E, handler func(E), opts ...PersistOption) error {
	return ctx.persist(nil, event, typed(handler), true, tagsOf(opts))
}

// PersistAll writes events atomically (all or none) and calls handler with each, in
// order, stashing commands as Persist does. No events is not an error.
func PersistAll[E any](ctx Context, events []E, handler func(E), opts ...PersistOption) error {
	if len(events) == 0 {
		return nil
	}
	evs := make([]any, len(events))
	for i, e := range events {
		evs[i] = e
	}
	return ctx.persist(evs, nil, typed(handler), true, tagsOf(opts))
}

// PersistAsync is Persist without stashing: commands keep arriving while the write
// is in flight (they see LastSequenceNr without this event until its handler has
// run); handlers still run in order.
func PersistAsync[E any](ctx Context, event E, handler func(E), opts ...PersistOption) error {
	return ctx.persist(nil, event, typed(handler), false, tagsOf(opts))
}

// PersistAllAsync is PersistAll without stashing.
func PersistAllAsync[E any](ctx Context, events []E, handler func(E), opts ...PersistOption) error {
	if len(events) == 0 {
		return nil
	}
	evs := make([]any, len(events))
	for i, e := range events {
		evs[i] = e
	}
	return ctx.persist(evs, nil, typed(handler), false, tagsOf(opts))
}
