package actor

import "context"

// This file is the runtime's second extension point: what a layer built on actors
// needs when it carries users' messages through actors of its own (package sharding
// routes them through regions and shards, package persistence answers an entity from
// its journal) and must keep what the user sees the same as if the message had gone
// straight to its actor. Applications rarely need it, but nothing in it is reserved:
// any package may use it, with the contracts documented here.
//
// Four interfaces are implemented by a layer's messages, and checked by the runtime:
// MessageWrapper and MessageBatch decide what a dead letter names, MessageCarrier what
// an ask's span is named after, UntracedMessage which messages get no span. Three
// functions let a layer send, await and give up on messages as the runtime does:
// Ref.AskDeferred, Future.Await and System.PublishDeadLetter.

// MessageWrapper is implemented by a message that a layer wraps around what a user
// sent, on its way to an actor of that layer (sharding's messages on their way through
// a region). Wherever the runtime names a message the user may see (a dead letter: its
// DeadLetter event, its log line, the error of an Ask that fails with it or times out),
// it names UserMessage instead: what the user sent, in the form the layer's public API
// gives it. UserMessage must not block; it may be called on any goroutine, so it must
// only read what does not change once the message is sent.
type MessageWrapper interface {
	UserMessage() any
}

// MessageCarrier is implemented by a message that carries a user's message to the actor
// that handles it, through an actor of a layer: an Ask's client span is named after
// CarriedMessage, the message the user asked with, instead of the carrier (see Config
// TracerProvider). The same rules as for UserMessage apply.
type MessageCarrier interface {
	CarriedMessage() any
}

// UntracedMessage is implemented by a layer's own messages to the actors it runs for
// users (persistence's answers from its journal to an entity): an actor whose Props set
// Trace handles them without a span of their own, so that a trace shows the user's
// messages only. The method does nothing; its name marks the type.
type UntracedMessage interface {
	UntracedMessage()
}

// MessageBatch is implemented by a message that carries many users' messages in one
// (sharding's batches of deliveries to a region on another node). Where the runtime
// would publish such a message as one dead letter, it publishes one for each message
// in it, with that message's own sender: the count, the events, the log and the failed
// asks are the users' messages, never the batch. EachUserMessage calls yield with
// each message, in the form the layer's public API gives it, and its sender (the zero
// Ref for none), in order; it must not block, and must call yield on its own
// goroutine only.
type MessageBatch interface {
	EachUserMessage(yield func(msg any, sender Ref))
}

// AskDeferred sends msg to r with a new Future as its sender, as Ask does, but may
// leave running r to the caller: it is for a layer that must queue a message under a
// lock of its own (which orders it before a stop message the layer sends later) and
// must not run the recipient while it holds that lock.
//
// When r is a local actor with the default mailbox and is idle, AskDeferred queues msg
// in its mailbox without scheduling it, and returns run: the caller now owns r's turn
// to run and must call run exactly once, soon, from any goroutine. Until it does, r
// handles nothing (neither msg nor anything sent to it after). run handles r's
// messages on the calling goroutine, as the blocking Ask does when its recipient is
// idle: a few of them, then it hands r to the dispatcher if more are waiting (and it
// hands r over at once when too many such runs are under way in the system). For any
// other r (busy, remote, stopped, with another mailbox, the zero Ref) run is nil: msg
// is on its way as Ask sends it, and the future may already have failed
// (ErrDeadLetter, ErrNoRecipient).
//
// With watch, the future fails by itself when ctx ends, as Ask's does. Without
// watch, nothing watches a ctx that can end: the caller must wait for the outcome
// with Await, with the same ctx, target and msg, which fails the future when ctx
// ends (this spares the context watch of a caller that blocks anyway). A ctx that
// cannot end is bounded by Config.AskTimeout either way.
func (r Ref) AskDeferred(ctx context.Context, msg any, watch bool) (f *Future, run func()) {
	return r.askDeferred(ctx, msg, watch)
}

// Await waits for the future's outcome, as the blocking Ask does: when ctx ends
// first, the future fails with the error such an Ask gives (an error matching
// ErrTimeout and naming target and msg's type at ctx's deadline, ctx's cause when it
// is cancelled), unless it completed at the same moment, and Await returns that
// outcome. target and msg name the ask in that error: pass those the future was
// asked with (target may be the Ref the message went through). A reply of type
// Failure is returned as its error.
//
// Unlike Result, which leaves the future pending when its ctx ends, Await settles
// it: later replies become dead letters (ErrLateReply). Await is how a future from
// AskDeferred without watch must be awaited; it suits any future from Ask.
func (f *Future) Await(ctx context.Context, target Ref, msg any) (any, error) {
	return f.await(ctx, target, msg)
}

// PublishDeadLetter publishes msg, which a layer could not deliver to recipient (an
// actor of the layer, or the user's actor it was for), as a dead letter of the system
// with reason (nil means ErrDeadLetter), as the runtime publishes its own: a DeadLetter
// event, counted in DeadLetterCount and the metrics, logged at a bounded rate (unless
// msg is a DeadLetterSuppression), and, when sender is a Future's Ref (an Ask), as
// the failure of that Ask, at once, with an error matching ErrDeadLetter and reason.
// A MessageWrapper is published as its UserMessage, a MessageBatch as one dead letter
// for each of its messages. sender may be the zero Ref.
func (s *System) PublishDeadLetter(recipient Ref, msg any, sender Ref, reason error) {
	s.deadLetter(recipient, msg, sender, reason)
}
