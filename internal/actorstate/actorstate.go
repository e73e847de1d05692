// Package actorstate lets Troupe's own layers queue and await asks in ways the public
// API does not offer. Package actor fills in the hooks when it is initialised; this
// package imports nothing of Troupe's, so that actor can import it.
package actorstate

import "context"

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

// DeadLetter publishes msg, which a layer could not deliver to recipient, as a dead
// letter of sys (an *actor.System) with its reason: counted, on the event stream, in
// the log at a bounded rate, and as the failure of an ask waiting for it, as the
// actor runtime publishes its own. recipient and sender are actor.Refs (sender may be
// the zero Ref).
var DeadLetter func(sys any, recipient, msg, sender any, reason error)

// Wrapper is implemented by a message that one of Troupe's layers wraps around what a
// user sent, on its way to an actor of that layer (sharding's EntityRef messages on
// their way through the region). Where package actor names a message the user may
// see (a dead letter: its event, log line and count, and the error of an ask that
// fails with it, or that times out), it names UserMessage instead: what the user
// sent, in the form the layer's public API gives it.
type Wrapper interface {
	UserMessage() any
}

// Carrier is implemented by a message that carries a user's message to the actor
// that handles it, through an actor of a Troupe layer (sharding's EntityRef messages
// on their way through the region): package actor names an ask's client span after
// CarriedMessage, the message the user asked with.
type Carrier interface {
	CarriedMessage() any
}

// Untraced is implemented by a layer's own messages to the actors it runs for users
// (persistence's journal answers to an entity): an actor whose Props set Trace handles
// them without a span of their own.
type Untraced interface {
	UntracedMessage()
}

// Batch is implemented by a message that carries many user messages in one (sharding's
// batches of deliveries to a region on another node). Where package actor would
// publish such a message as one dead letter, it publishes one for each message in it,
// with that message's own sender: the count, the events and the failed asks are the
// users' messages, never the batch. EachUserMessage calls yield with each message, in
// the form the layer's public API gives it, and its sender (an actor.Ref, or nil for
// none).
type Batch interface {
	EachUserMessage(yield func(msg, sender any))
}
