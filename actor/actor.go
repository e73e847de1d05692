package actor

// Actor is the one method a user implements. Receive handles the message returned by
// ctx.Message(), typically with a type switch. Lifecycle events (Started, Stopping,
// Stopped, Restarting) arrive through Receive too, so an actor reads as one function.
//
// Receive runs on one goroutine at a time for a given actor, so an actor's fields need
// no locking. A panic in Receive is recovered and handed to the parent's supervision
// strategy; it never crashes the process.
type Actor interface {
	Receive(ctx Context)
}

// ReceiveFunc adapts a plain function to Actor, for actors without fields.
type ReceiveFunc func(ctx Context)

// Receive calls f(ctx).
func (f ReceiveFunc) Receive(ctx Context) { f(ctx) }

// Behavior is a receive function installed with Context.Become; while installed it
// handles messages instead of the actor's Receive method.
type Behavior func(ctx Context)

// Started is delivered once to each new instance, before any other message: after
// Spawn, and after every restart.
type Started struct{}

// Stopping is delivered when the actor begins to stop, before its children are stopped.
// Timers and the receive timeout are already cancelled.
type Stopping struct{}

// Stopped is delivered exactly once, as the last message an actor sees, after all of its
// children have stopped. Release resources here.
type Stopped struct{}

// Restarting is delivered to the failing instance before it is replaced by a fresh one
// from its Props. Reason is the failure that caused the restart.
type Restarting struct {
	Reason error
}

// PoisonPill stops the receiving actor once the messages queued before it have been
// processed. Send it like any other message.
type PoisonPill struct{}

// Kill makes the receiving actor fail with ErrKilled, so that its parent's supervision
// strategy decides what happens next.
type Kill struct{}

// ReceiveTimeout is delivered when an actor with a receive timeout (see
// Context.SetReceiveTimeout) has received no influencing message for that long. It keeps
// arriving once per timeout while the actor stays idle.
type ReceiveTimeout struct{}

// Terminated tells a watcher that the actor it watches has stopped. See Context.Watch.
type Terminated struct {
	// Ref is the actor that stopped.
	Ref Ref
	// AddressTerminated is true when the stop was inferred from the loss of the actor's
	// node rather than reported by the actor itself.
	AddressTerminated bool
}

// SuppressDeadLetterLog: a watcher that stops with a Terminated still queued (two
// actors that watch each other and stop together) loses it as expected; the dead
// letter is counted, not logged.
func (Terminated) SuppressDeadLetterLog() {}

// NotInfluenceReceiveTimeout is implemented by message types that must not reset an
// actor's receive timeout, such as periodic ticks from outside.
type NotInfluenceReceiveTimeout interface {
	NotInfluenceReceiveTimeout()
}

// Failure carries an error as a message. A Future completed with a Failure fails with
// Err, and PipeTo sends a Failure when the future fails.
type Failure struct {
	Err error
}
