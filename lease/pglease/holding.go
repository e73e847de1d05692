package pglease

import "time"

// Why a holder that cannot renew gives its lease up before anyone else can take it.
//
// Every expiry in the table is computed by the database from its own clock: a
// statement that acquires or renews the lease sets expires_at to now() + T, where T is
// Settings.HeartbeatTimeout and now() is the start of the statement's transaction on
// the server. Another owner takes the row only when a statement of its own finds
// expires_at <= now(), again on the server's clock. The clients' wall clocks play no
// part, so a client whose clock is wrong cannot extend a lease or take one early.
//
// The holder reads its own monotonic clock at sentAt, before it sends an acquiring or
// renewing statement. The server runs that statement after it arrived, so its now()
// is at or after sentAt in real time, and the row it commits lives until at least
// sentAt + T (real time, if the server's clock runs at the rate of real time). A later
// statement only moves expires_at further. Once a renewal has succeeded, the holder
// considers the lease its own until
//
//	deadline = sentAt + T - margin
//
// on its monotonic clock (margin is Config.SafetyMargin), and a renewal that fails or
// is never answered leaves the deadline where it was. At the deadline the holder
// stops, and its loss callback runs, whether or not a renewal is still in flight: a
// late success does not revive the lease. Another owner's statement can succeed only
// when the server's now() has passed the expiry, which is after sentAt + T: margin
// later than the holder gave up. The margin absorbs what the argument assumes away:
// the holder's monotonic clock and the server's clock running at slightly different
// rates over T (NTP slews clocks by up to 500 ppm: 60 ms over 120 s), and the time the
// loss callback needs to stop the holder's work. It does not absorb the server's clock
// being stepped (set forward by hand or by a clock daemon): a database host steps its
// clock at its own risk, as every lease on a wall clock does.
//
// A renewal that is in flight when the deadline passes is cancelled; it may still
// commit on the server, which only makes the row live longer than the holder
// believes, and keeps the others out longer. Nothing in the argument depends on the
// outcome of a renewal that was not answered.

// outcome is the answer to a renewal.
type outcome int

const (
	renewedOK   outcome = iota // the row was ours and live, and is renewed
	notOurs                    // the row is free, expired, or another owner's
	renewFailed                // the store could not be asked, or did not answer
)

// verdict says how a holding ended, or that it goes on.
type verdict int

const (
	holds       verdict = iota // the lease is still held
	lostTimeout                // the deadline passed without a successful renewal
	lostTaken                  // the store says the lease is no longer ours
)

// timing is what a holding needs of the settings.
type timing struct {
	interval time.Duration // between renewals
	validFor time.Duration // HeartbeatTimeout minus the safety margin
	retry    time.Duration // after a failed renewal
}

// newTiming derives a holding's timing from the lease's heartbeat interval and
// timeout and the safety margin: a failed renewal is tried again after half an
// interval.
func newTiming(interval, timeout, margin time.Duration) timing {
	return timing{interval: interval, validFor: timeout - margin, retry: max(interval/2, time.Millisecond)}
}

// holding is a holder's view of one tenure of the lease, from a successful
// acquisition to its release or loss: a pure state machine that takes the time as an
// input. Its zero value is not used; newHolding makes one.
type holding struct {
	t        timing
	fence    uint64
	deadline time.Time // the lease is held while now is before it
	next     time.Time // the next renewal is due then
	failures int       // consecutive failed renewals
	ended    verdict   // holds until the tenure ends
}

// newHolding starts a tenure with fencing number fence, acquired by a statement sent
// at sentAt.
func newHolding(t timing, fence uint64, sentAt time.Time) holding {
	return holding{t: t, fence: fence, deadline: sentAt.Add(t.validFor), next: sentAt.Add(t.interval)}
}

// valid reports whether the lease is held at now.
func (h *holding) valid(now time.Time) bool {
	return h.ended == holds && now.Before(h.deadline)
}

// step is what the holder does at a moment: give the lease up, send a renewal, or wait
// until wake and ask again.
type step struct {
	lost  bool
	renew bool
	wake  time.Time
}

// due says what the holder does at now.
func (h *holding) due(now time.Time) step {
	switch {
	case h.ended != holds:
		return step{lost: true}
	case !now.Before(h.deadline):
		h.ended = lostTimeout
		return step{lost: true}
	case !now.Before(h.next):
		return step{renew: true, wake: h.deadline}
	}
	wake := h.next
	if h.deadline.Before(wake) {
		wake = h.deadline
	}
	return step{wake: wake}
}

// renewed applies the answer to a renewal sent at sentAt and answered at now, and
// returns whether the lease is still held. The deadline is final: an answer that comes
// after it does not revive the lease.
func (h *holding) renewed(sentAt, now time.Time, o outcome) verdict {
	if h.ended != holds {
		return h.ended
	}
	if !now.Before(h.deadline) {
		h.ended = lostTimeout
		return h.ended
	}
	switch o {
	case renewedOK:
		if d := sentAt.Add(h.t.validFor); d.After(h.deadline) {
			h.deadline = d
		}
		h.next = sentAt.Add(h.t.interval)
		h.failures = 0
	case notOurs:
		h.ended = lostTaken
	case renewFailed:
		h.failures++
		h.next = now.Add(h.t.retry)
	}
	return h.ended
}
