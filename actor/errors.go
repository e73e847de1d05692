package actor

import "errors"

// Errors returned by the runtime. Check them with errors.Is; most are wrapped with
// detail such as the actor path.
var (
	// ErrNilMessage is returned by Tell and Send for a nil message.
	ErrNilMessage = errors.New("actor: nil message")
	// ErrNoRecipient is returned when sending to the zero Ref.
	ErrNoRecipient = errors.New("actor: send to the zero Ref")
	// ErrMailboxFull is returned by Tell when a bounded mailbox with the Reject overflow
	// policy is full.
	ErrMailboxFull = errors.New("actor: mailbox full")
	// ErrNameTaken is returned by Spawn when a sibling already has the name.
	ErrNameTaken = errors.New("actor: name already taken")
	// ErrInvalidName is returned by Spawn and New for names with forbidden characters.
	ErrInvalidName = errors.New("actor: invalid name")
	// ErrInvalidProps is returned by Spawn for Props that fail validation.
	ErrInvalidProps = errors.New("actor: invalid props")
	// ErrInvalidConfig is returned by New for a Config that fails validation.
	ErrInvalidConfig = errors.New("actor: invalid config")
	// ErrStopping is returned by Spawn when the parent is stopping or the system is
	// shutting down.
	ErrStopping = errors.New("actor: parent is stopping")
	// ErrKilled is the failure reason of an actor that received Kill.
	ErrKilled = errors.New("actor: killed")
	// ErrTimeout fails an Ask whose reply did not arrive before its context's
	// deadline (or the system's AskTimeout, for a context without one). The error
	// names the target and the message's type, and also matches
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("actor: ask timed out")
	// ErrRecipientStopped is the reason of a dead letter for an actor that has stopped.
	ErrRecipientStopped = errors.New("actor: recipient has stopped")
	// ErrLateReply is the reason of a dead letter for a reply that reached an Ask
	// after it had completed (timed out, or already answered).
	ErrLateReply = errors.New("actor: reply after the ask completed")
	// ErrNotChild is returned by Context.Stop for a Ref that is neither the actor
	// itself nor one of its children: ask other actors to stop with a message, or use
	// System.Stop.
	ErrNotChild = errors.New("actor: not a child of this actor")
	// ErrDeadLetter fails an Ask whose request could not be delivered, for example
	// because the recipient has stopped; it fails at once rather than at the timeout.
	ErrDeadLetter = errors.New("actor: recipient unavailable, message sent to dead letters")
	// ErrUnexpectedReply is returned by the generic Ask when the reply has another type.
	ErrUnexpectedReply = errors.New("actor: unexpected reply type")
	// ErrStashFull is returned by Context.Stash when the stash is at capacity.
	ErrStashFull = errors.New("actor: stash full")
	// ErrNothingToStash is returned by Context.Stash outside message handling.
	ErrNothingToStash = errors.New("actor: no current message to stash")
	// ErrNotFound is returned by System.Resolve for a path with no live actor.
	ErrNotFound = errors.New("actor: no actor at path")
	// ErrUnknownPhase is returned when registering a shutdown task for an unknown phase.
	ErrUnknownPhase = errors.New("actor: unknown coordinated-shutdown phase")
	// ErrShutdownStarted is returned when registering a shutdown task too late.
	ErrShutdownStarted = errors.New("actor: coordinated shutdown already started")
	// ErrPhaseTimeout is reported when a coordinated-shutdown phase overran its timeout.
	ErrPhaseTimeout = errors.New("actor: coordinated-shutdown phase timed out")
)
