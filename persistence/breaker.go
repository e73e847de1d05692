package persistence

import (
	"errors"
	"fmt"
	"time"
)

// ErrCircuitOpen is returned, wrapped with the call it refused, the failure that opened
// the breaker and the time until its next trial call, for a journal or snapshot-store
// call refused by an open circuit breaker: the plug-in failed or timed out MaxFailures
// times in a row (or a trial call failed since), so calls fail fast until the breaker's
// current reset timeout has passed, or while the one trial call it then lets through
// is in flight. Nothing reached the plug-in.
var ErrCircuitOpen = errors.New("persistence: circuit breaker open")

// ErrCallTimeout is returned, wrapped with the call and the limit, when a journal or
// snapshot-store call did not answer within its CallTimeout (or, during a replay, when
// no event arrived within Config.RecoveryEventTimeout). The call may still complete
// later in the plug-in: its outcome is unknown.
var ErrCallTimeout = errors.New("persistence: plug-in call timed out")

// BreakerState is the state of a circuit breaker.
type BreakerState int

const (
	// BreakerClosed lets every call through and counts consecutive failures.
	BreakerClosed BreakerState = iota
	// BreakerOpen fails every call at once with ErrCircuitOpen until its reset
	// timeout has passed.
	BreakerOpen
	// BreakerHalfOpen lets one trial call through; its success closes the breaker,
	// its failure opens it again for twice as long (up to MaxResetTimeout). Other
	// calls fail fast meanwhile.
	BreakerHalfOpen
)

// String returns the state's name.
func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// breaker is a circuit breaker with exponential backoff as a pure state machine: the
// caller passes the current time to every method and runs the call itself. It is not
// safe for concurrent use; lockedBreaker is.
//
// Closed: a failure adds to a count of consecutive failures, a success clears it;
// maxFailures of them open the breaker for minReset. Open: every call is refused until
// the open period has passed; then the next call is the trial and the breaker is
// half-open. Half-open: other calls are refused; the trial's success closes the
// breaker (and the next opening lasts minReset again), its failure opens it again for
// twice the last period, at most maxReset. So a store that is down is tried about
// once per maxReset, and one that answers again is found within maxReset plus a call.
// A breaker with maxFailures below 1 never opens.
type breaker struct {
	maxFailures        int
	minReset, maxReset time.Duration

	state    BreakerState
	failures int           // consecutive failures while closed
	openedAt time.Time     // when it last opened
	period   time.Duration // how long the current opening lasts
	trials   int           // trial calls failed since the breaker closed
	cause    error         // the failure that last opened it
	trial    bool          // the half-open trial call is in flight
	gen      uint64        // counts openings and closings, so that late outcomes of older calls are ignored
}

// ticket is what allow hands a call it lets through; the call's outcome is reported
// with it.
type ticket struct {
	gen   uint64
	trial bool
}

// allow decides whether a call may start at now. It returns an error wrapping
// ErrCircuitOpen, which says why the breaker is open and when it tries again, when the
// call must fail fast.
func (b *breaker) allow(now time.Time) (ticket, error) {
	switch b.state {
	case BreakerOpen:
		retry := b.openedAt.Add(b.period)
		if now.Before(retry) {
			return ticket{}, fmt.Errorf("%w (%s); next trial call in %v", ErrCircuitOpen, b.why(), retry.Sub(now).Round(time.Millisecond))
		}
		b.state, b.trial = BreakerHalfOpen, true
		return ticket{gen: b.gen, trial: true}, nil
	case BreakerHalfOpen:
		if b.trial {
			return ticket{}, fmt.Errorf("%w (%s); a trial call is in flight", ErrCircuitOpen, b.why())
		}
		b.trial = true
		return ticket{gen: b.gen, trial: true}, nil
	}
	return ticket{gen: b.gen}, nil
}

// why says what opened the breaker, for the errors of refused calls.
func (b *breaker) why() string {
	if b.trials == 0 {
		return fmt.Sprintf("%d calls in a row failed, the last with: %v", b.maxFailures, b.cause)
	}
	return fmt.Sprintf("trial call %d failed with: %v", b.trials, b.cause)
}

// succeeded reports that the call holding t succeeded.
func (b *breaker) succeeded(t ticket) {
	if t.gen != b.gen {
		return // started before the breaker last changed state
	}
	switch {
	case b.state == BreakerClosed:
		b.failures = 0
	case b.state == BreakerHalfOpen && t.trial:
		b.state, b.failures, b.trial, b.trials, b.cause = BreakerClosed, 0, false, 0, nil
		b.gen++
	}
}

// failed reports that the call holding t failed or timed out at now, with err.
func (b *breaker) failed(t ticket, now time.Time, err error) {
	if t.gen != b.gen {
		return
	}
	switch {
	case b.state == BreakerClosed:
		b.failures++
		if b.maxFailures > 0 && b.failures >= b.maxFailures {
			b.open(now, b.minReset, err)
		}
	case b.state == BreakerHalfOpen && t.trial:
		b.trials++
		next := b.maxReset
		if b.period < b.maxReset/2 {
			next = 2 * b.period
		}
		b.open(now, max(next, b.minReset), err)
	}
}

// abandoned reports that the call holding t ended without a verdict (its caller
// cancelled it): a half-open breaker lets the next call be the trial.
func (b *breaker) abandoned(t ticket) {
	if t.gen == b.gen && b.state == BreakerHalfOpen && t.trial {
		b.trial = false
	}
}

func (b *breaker) open(now time.Time, period time.Duration, cause error) {
	b.state, b.openedAt, b.period, b.cause, b.trial, b.failures = BreakerOpen, now, period, cause, false, 0
	b.gen++
}
