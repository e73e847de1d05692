package supervision

import "strconv"

// Directive is what a supervisor does with a failed child.
type Directive int

const (
	// Restart discards the child's state and starts a fresh instance in its place,
	// keeping its mailbox and its address. It is the zero value and the default.
	Restart Directive = iota
	// Resume keeps the child's state and lets it go on with its next message; the
	// message that failed is dropped.
	Resume
	// Stop stops the child permanently.
	Stop
	// Escalate fails the supervisor itself with the same reason, so that its own parent
	// decides.
	Escalate
)

// String returns "restart", "resume", "stop" or "escalate", and "directive(N)" for a
// value outside the defined constants.
func (d Directive) String() string {
	switch d {
	case Restart:
		return "restart"
	case Resume:
		return "resume"
	case Stop:
		return "stop"
	case Escalate:
		return "escalate"
	}
	return "directive(" + strconv.Itoa(int(d)) + ")"
}

// valid reports whether d is one of the four defined directives.
func (d Directive) valid() bool {
	return d >= Restart && d <= Escalate
}

// Decider maps a failure reason to a directive. A Decider should be a pure function of
// its argument; reason may be a *PanicError when the failure was a panic.
type Decider func(reason error) Directive

// DefaultDecider returns Restart for every failure.
func DefaultDecider(reason error) Directive {
	return Restart
}
