// Package actorstate lets Troupe's own layers ask the actor runtime about an actor's
// scheduling state, which the public API does not show. Package actor fills in Idle
// when it is initialised; this package imports nothing of Troupe's, so that actor can
// import it.
package actorstate

import "context"

// Idle reports whether ref (an actor.Ref) is a local actor that no goroutine runs:
// every message sent to it before the call returned has been handled (or stashed).
// A sender that sees its recipient idle knows that its own earlier messages are no
// longer queued there. It returns false for anything else.
var Idle = func(ref any) bool { return false }

// AskDeferred sends msg to ref (an actor.Ref) with a new future as its sender and
// returns the future (an *actor.Future). When run is not nil the caller owns the idle
// recipient and must call run, once, soon: it runs the recipient on the caller's
// goroutine, as a blocking ask does. Sharding sends under a lock and runs the entity
// after releasing it. With watch the future fails by itself when ctx ends; without,
// the caller waits with AwaitAsk.
var AskDeferred func(ctx context.Context, ref any, msg any, watch bool) (future any, run func())

// AwaitAsk waits for the outcome of future (from AskDeferred, without watch) as a
// blocking ask does: when ctx ends first, the future fails with the error such an ask
// gives, naming target and msg.
var AwaitAsk func(ctx context.Context, future any, target any, msg any) (any, error)
