// Package actorstate lets Troupe's own layers ask the actor runtime about an actor's
// scheduling state, which the public API does not show. Package actor fills in Idle
// when it is initialised; this package imports nothing of Troupe's, so that actor can
// import it.
package actorstate

// Idle reports whether ref (an actor.Ref) is a local actor that no goroutine runs:
// every message sent to it before the call returned has been handled (or stashed).
// A sender that sees its recipient idle knows that its own earlier messages are no
// longer queued there. It returns false for anything else.
var Idle = func(ref any) bool { return false }
