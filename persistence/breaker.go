package persistence

import (
	"errors"
	"fmt"
	"time"
)

// ErrCircuitOpen is returned, wrapped with the plug-in it protects and the time it
// will let a call through again, for a journal or snapshot-store call refused by an
// open circuit breaker: the plug-in failed or timed out MaxFailures times in a row, so
// calls fail fast until ResetTimeout has passed.
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
	// its failure opens it again. Other calls fail fast meanwhile.
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

// breaker is Akka's circuit breaker as a pure state machine: the caller passes the
// current time to every method and runs the call itself. It is not safe for
// concurrent use; lockedBreaker is.
//
// Closed: a failure adds to a count of consecutive failures, a success clears it;
// maxFailures of them open the breaker. Open: every call is refused until
// resetTimeout has passed since it opened; then the next call is the trial and the
// breaker is half-open. Half-open: other calls are refused; the trial's success closes
// the breaker, its failure opens it again for resetTimeout. A breaker with maxFailures
// below 1 never opens.
type breaker struct {
	maxFailures  int
	resetTimeout time.Duration

	state    BreakerState
	failures int       // consecutive failures while closed
	openedAt time.Time // when it last opened
	trial    bool      // the half-open trial call is in flight
	gen      uint64    // counts openings, so that late outcomes of older calls are ignored
}

// ticket is what allow hands a call it lets through; the call's outcome is reported
// with it.
type ticket struct {
	gen   uint64
	trial bool
}

// allow decides whether a call may start at now. It returns ErrCircuitOpen (wrapped
// with the time the breaker will let a trial through) when the call must fail fast.
func (b *breaker) allow(now time.Time) (ticket, error) {
	switch b.state {
	case BreakerOpen:
		retry := b.openedAt.Add(b.resetTimeout)
		if now.Before(retry) {
			return ticket{}, fmt.Errorf("%w until %s", ErrCircuitOpen, retry.Format(time.RFC3339Nano))
		}
		b.state, b.trial = BreakerHalfOpen, true
		return ticket{gen: b.gen, trial: true}, nil
	case BreakerHalfOpen:
		if b.trial {
			return ticket{}, fmt.Errorf("%w: a trial call is in flight", ErrCircuitOpen)
		}
		b.trial = true
		return ticket{gen: b.gen, trial: true}, nil
	}
	return ticket{gen: b.gen}, nil
}

// succeeded reports that the call holding t succeeded.
func (b *breaker) succeeded(t ticket) {
	if t.gen != b.gen {
		return // started before the breaker last opened
	}
	switch {
	case b.state == BreakerClosed:
		b.failures = 0
	case b.state == BreakerHalfOpen && t.trial:
		b.state, b.failures, b.trial = BreakerClosed, 0, false
		b.gen++
	}
}

// failed reports that the call holding t failed or timed out at now.
func (b *breaker) failed(t ticket, now time.Time) {
	if t.gen != b.gen {
		return
	}
	switch {
	case b.state == BreakerClosed:
		b.failures++
		if b.maxFailures > 0 && b.failures >= b.maxFailures {
			b.open(now)
		}
	case b.state == BreakerHalfOpen && t.trial:
		b.open(now)
	}
}

// abandoned reports that the call holding t ended without a verdict (its caller
// cancelled it): a half-open breaker lets the next call be the trial.
func (b *breaker) abandoned(t ticket) {
	if t.gen == b.gen && b.state == BreakerHalfOpen && t.trial {
		b.trial = false
	}
}

func (b *breaker) open(now time.Time) {
	b.state, b.openedAt, b.trial, b.failures = BreakerOpen, now, false, 0
	b.gen++
}
