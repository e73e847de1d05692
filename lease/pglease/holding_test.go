package pglease

import (
	"testing"
	"time"
)

// TestHolding drives the holder's state machine through sequences of events at given
// times: renewals answered, failed, or refused, and the deadline passing.
func TestHolding(t *testing.T) {
	// Heartbeat interval 1s, timeout 10s, margin 1s: valid for 9s after a sent renewal.
	tm := newTiming(time.Second, 10*time.Second, time.Second)
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	type event struct {
		due     int     // ask due at this time (ms), when answer is nil
		sent    int     // the renewal was sent then (ms)
		answer  outcome // its outcome, answered at the time in due
		renewal bool    // the event is a renewal's answer
		want    step    // for due: what the holder does
		verdict verdict // for a renewal: the verdict
	}
	ask := func(ms int, want step) event { return event{due: ms, want: want} }
	answer := func(sent, ms int, o outcome, v verdict) event {
		return event{due: ms, sent: sent, answer: o, renewal: true, verdict: v}
	}
	cases := []struct {
		name         string
		events       []event
		wantDeadline int // ms, at the end
		wantValidAt  int // ms: valid just before, not at
	}{
		{
			name: "waits for the first renewal",
			events: []event{
				ask(0, step{wake: at(1000)}),
				ask(999, step{wake: at(1000)}),
				ask(1000, step{renew: true, wake: at(9000)}),
			},
			wantDeadline: 9000, wantValidAt: 9000,
		},
		{
			name: "a renewal moves the deadline from the time it was sent",
			events: []event{
				answer(1000, 1400, renewedOK, holds),
				ask(1400, step{wake: at(2000)}),
				ask(2000, step{renew: true, wake: at(10000)}),
			},
			wantDeadline: 10000, wantValidAt: 10000,
		},
		{
			name: "a slow renewal is due again at once",
			events: []event{
				answer(1000, 2500, renewedOK, holds),
				ask(2500, step{renew: true, wake: at(10000)}),
			},
			wantDeadline: 10000, wantValidAt: 10000,
		},
		{
			name: "a failed renewal is tried again half an interval later, the deadline stays",
			events: []event{
				answer(1000, 1200, renewFailed, holds),
				ask(1300, step{wake: at(1700)}),
				ask(1700, step{renew: true, wake: at(9000)}),
				answer(1700, 1750, renewFailed, holds),
				ask(2250, step{renew: true, wake: at(9000)}),
			},
			wantDeadline: 9000, wantValidAt: 9000,
		},
		{
			name: "failures until the deadline lose the lease",
			events: []event{
				answer(1000, 5000, renewFailed, holds),
				answer(5500, 8999, renewFailed, holds),
				ask(8999, step{wake: at(9000)}),
				ask(9000, step{lost: true}),
				ask(9001, step{lost: true}),
			},
			wantDeadline: 9000, wantValidAt: 0,
		},
		{
			name: "a success answered after the deadline does not revive it",
			events: []event{
				answer(1000, 9000, renewedOK, lostTimeout),
				ask(9000, step{lost: true}),
			},
			wantDeadline: 9000, wantValidAt: 0,
		},
		{
			name: "a success after failures restores the rhythm",
			events: []event{
				answer(1000, 1100, renewFailed, holds),
				answer(1500, 1600, renewedOK, holds),
				ask(1600, step{wake: at(2500)}),
			},
			wantDeadline: 10500, wantValidAt: 10500,
		},
		{
			name: "an older success does not move the deadline back",
			events: []event{
				answer(3000, 3100, renewedOK, holds),
				answer(2000, 3200, renewedOK, holds),
			},
			wantDeadline: 12000, wantValidAt: 12000,
		},
		{
			name: "a row that is not ours any more ends the tenure",
			events: []event{
				answer(1000, 1100, notOurs, lostTaken),
				ask(1100, step{lost: true}),
				answer(1200, 1300, renewedOK, lostTaken),
			},
			wantDeadline: 9000, wantValidAt: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHolding(tm, 7, t0)
			for i, e := range c.events {
				if e.renewal {
					if v := h.renewed(at(e.sent), at(e.due), e.answer); v != e.verdict {
						t.Fatalf("event %d: renewal sent at %d answered at %d (%d): verdict %d, want %d", i, e.sent, e.due, e.answer, v, e.verdict)
					}
					continue
				}
				if got := h.due(at(e.due)); got != e.want {
					t.Fatalf("event %d: due(%d) = %+v, want %+v", i, e.due, got, e.want)
				}
			}
			if !h.deadline.Equal(at(c.wantDeadline)) {
				t.Errorf("deadline %v, want %d ms", h.deadline.Sub(t0), c.wantDeadline)
			}
			if c.wantValidAt > 0 {
				if !h.valid(at(c.wantValidAt-1)) || h.valid(at(c.wantValidAt)) {
					t.Errorf("valid before %d ms: %v, at it: %v", c.wantValidAt, h.valid(at(c.wantValidAt-1)), h.valid(at(c.wantValidAt)))
				}
			} else if h.valid(at(c.events[len(c.events)-1].due)) {
				t.Errorf("valid after the tenure ended")
			}
			if h.fence != 7 {
				t.Errorf("fence %d", h.fence)
			}
		})
	}
}

func TestTiming(t *testing.T) {
	tm := newTiming(100*time.Millisecond, time.Second, 100*time.Millisecond)
	if tm.interval != 100*time.Millisecond || tm.validFor != 900*time.Millisecond || tm.retry != 50*time.Millisecond {
		t.Errorf("timing %+v", tm)
	}
	if tm := newTiming(time.Nanosecond, time.Second, 0); tm.retry != time.Millisecond {
		t.Errorf("retry %v for a 1ns interval", tm.retry)
	}
}
