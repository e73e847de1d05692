package supervision

import (
	"fmt"
	"runtime/debug"
	"time"
)

// Strategy decides what happens to a failed child and whether the decision applies to
// all of the supervisor's children.
type Strategy interface {
	// Decide is called by the parent for a failed child, with that child's restart
	// stats, the failure reason and the current time. It never panics: a panic inside a
	// Decider is recovered and turned into Stop with a non-nil Decision.DeciderErr,
	// which the caller logs.
	Decide(stats *RetryStats, reason error, now time.Time) (d Decision)
}

// Decision is the outcome of Strategy.Decide.
type Decision struct {
	// Directive is what to do. It is always one of Restart, Resume, Stop or Escalate.
	Directive Directive
	// AllChildren is true when the directive (Resume, Restart or Stop) applies to every
	// child of the supervisor, not just the failed one; AllForOne sets it. It is false
	// for Escalate, which concerns the supervisor itself.
	AllChildren bool
	// DeciderErr is non-nil if the Decider panicked or returned a value that is not a
	// defined Directive; Directive is then Stop. A panic is wrapped as a *PanicError,
	// reachable with errors.As.
	DeciderErr error
}

// OneForOne is a Strategy that applies the directive to the failing child only. The zero
// value restarts every failed child, without limit.
type OneForOne struct {
	// MaxRetries is the number of restarts allowed within Within; 0 means unlimited and
	// a negative value means never restart (stop instead).
	MaxRetries int
	// Within is the window MaxRetries counts in; 0 or less means the restarts are
	// counted over the child's whole life.
	Within time.Duration
	// Decider picks the directive for a failure; nil means DefaultDecider.
	Decider Decider
}

// Decide asks the Decider for a directive. A Restart that the child's stats do not allow
// under MaxRetries within Within becomes Stop. AllChildren is always false.
func (s OneForOne) Decide(stats *RetryStats, reason error, now time.Time) (d Decision) {
	return decide(s.Decider, s.MaxRetries, s.Within, stats, reason, now, false)
}

// AllForOne is a Strategy that applies the directive to all children of the supervisor
// when one of them fails. Use it when the children depend on each other so tightly that
// one cannot go on without the others. The zero value restarts all children on every
// failure, without limit.
type AllForOne struct {
	// MaxRetries is the number of restarts allowed within Within, counted on the
	// failing child's stats; 0 means unlimited and a negative value means never restart
	// (stop instead).
	MaxRetries int
	// Within is the window MaxRetries counts in; 0 or less means the restarts are
	// counted over the child's whole life.
	Within time.Duration
	// Decider picks the directive for a failure; nil means DefaultDecider.
	Decider Decider
}

// Decide asks the Decider for a directive. A Restart that the failing child's stats do
// not allow under MaxRetries within Within becomes Stop. AllChildren is true for
// Restart, Resume and Stop, and false for Escalate.
func (s AllForOne) Decide(stats *RetryStats, reason error, now time.Time) (d Decision) {
	return decide(s.Decider, s.MaxRetries, s.Within, stats, reason, now, true)
}

// DefaultStrategy returns the strategy the runtime uses when Props gives none:
// OneForOne{}, which restarts the failed child on every failure, without limit.
func DefaultStrategy() Strategy {
	return OneForOne{}
}

// decide holds the logic shared by OneForOne and AllForOne.
func decide(decider Decider, maxRetries int, within time.Duration, stats *RetryStats, reason error, now time.Time, all bool) Decision {
	dir, err := runDecider(decider, reason)
	if err != nil {
		return Decision{Directive: Stop, DeciderErr: err}
	}
	if dir == Restart {
		if stats == nil {
			stats = &RetryStats{} // nothing to record into: judge the attempt as a first one
		}
		if !stats.RequestRestart(restartLimit(maxRetries), within, now) {
			dir = Stop
		}
	}
	return Decision{Directive: dir, AllChildren: all && dir != Escalate}
}

// runDecider calls decider (DefaultDecider when nil) and turns a panic or an undefined
// directive into an error.
func runDecider(decider Decider, reason error) (dir Directive, err error) {
	if decider == nil {
		decider = DefaultDecider
	}
	defer func() {
		if v := recover(); v != nil {
			dir = Stop
			err = fmt.Errorf("supervision: decider panicked: %w", NewPanicError(v, debug.Stack()))
		}
	}()
	dir = decider(reason)
	if !dir.valid() {
		return Stop, fmt.Errorf("supervision: decider returned undefined %v", dir)
	}
	return dir, nil
}

// restartLimit translates the strategies' MaxRetries (0 unlimited, negative never) into
// RequestRestart's convention (negative unlimited, 0 never).
func restartLimit(maxRetries int) int {
	switch {
	case maxRetries == 0:
		return -1
	case maxRetries < 0:
		return 0
	}
	return maxRetries
}
