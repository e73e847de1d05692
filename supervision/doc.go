// Package supervision holds the decision logic of Troupe's fault handling: what a parent
// does when one of its children fails.
//
// The package is pure: it starts no goroutines, reads no clock and imports nothing from
// Troupe. Every function takes its inputs (the failure reason, the child's restart
// history, the current time, a random number) as arguments and returns a decision, so it
// can be tested with plain table tests. The actor package applies the decisions.
//
// # How the runtime uses it
//
// When an actor's Receive panics or fails, the runtime recovers the panic into a
// *PanicError (keeping the value and the stack), suspends the actor and reports the
// failure to its parent. The parent looks up its Strategy (from its Props, or
// DefaultStrategy when none is given) and the RetryStats it keeps for that child, and
// calls Strategy.Decide. The returned Decision says which Directive to apply:
//
//   - Restart: replace the child's state with a fresh instance; the mailbox is kept.
//   - Resume: keep the child's state and carry on with the next message.
//   - Stop: stop the child for good.
//   - Escalate: fail the parent itself, handing the problem to the grandparent.
//
// A Decider chooses the directive from the failure reason. OneForOne applies it to the
// failing child only; AllForOne applies it to all of the parent's children. Both limit
// restarts to MaxRetries within the Within window, and turn a Restart past that limit
// into Stop.
//
// Backoff holds the arithmetic of the runtime's backoff supervisor, which restarts a
// child after exponentially growing, jittered delays instead of at once.
package supervision
