package persistence

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestBreaker drives the breaker through its states with explicit times: max 3
// failures, reset after 10s.
func TestBreaker(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type step struct {
		at      int    // seconds after t0
		do      string // "call+ok", "call+fail", "call+abandon", "call" (refused expected when refuse), "ok", "fail" (for the held ticket)
		refused bool   // allow must refuse
		state   BreakerState
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"closed stays closed while failures stay below the maximum", []step{
			{0, "call+fail", false, BreakerClosed},
			{1, "call+fail", false, BreakerClosed},
			{2, "call+ok", false, BreakerClosed}, // a success clears the count
			{3, "call+fail", false, BreakerClosed},
			{4, "call+fail", false, BreakerClosed},
			{5, "call+ok", false, BreakerClosed},
		}},
		{"max failures in a row open it; open fails fast until the reset timeout", []step{
			{0, "call+fail", false, BreakerClosed},
			{1, "call+fail", false, BreakerClosed},
			{2, "call+fail", false, BreakerOpen},
			{3, "call", true, BreakerOpen},
			{11, "call", true, BreakerOpen}, // 9s after opening
		}},
		{"after the reset timeout one trial goes through; its success closes", []step{
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerOpen},
			{10, "hold", false, BreakerHalfOpen},
			{10, "call", true, BreakerHalfOpen}, // one trial at a time
			{11, "ok", false, BreakerClosed},
			{11, "call+ok", false, BreakerClosed},
		}},
		{"a failed trial opens it again for a full reset timeout", []step{
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerOpen},
			{12, "hold", false, BreakerHalfOpen},
			{13, "fail", false, BreakerOpen},
			{22, "call", true, BreakerOpen},
			{23, "call+ok", false, BreakerClosed},
		}},
		{"an abandoned trial lets the next call be the trial", []step{
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerClosed},
			{0, "call+fail", false, BreakerOpen},
			{10, "call+abandon", false, BreakerHalfOpen},
			{10, "call+ok", false, BreakerClosed},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := breaker{maxFailures: 3, resetTimeout: 10 * time.Second}
			var held ticket
			for i, s := range tc.steps {
				now := at(s.at)
				var err error
				switch s.do {
				case "ok":
					b.succeeded(held)
				case "fail":
					b.failed(held, now)
				default:
					var tk ticket
					tk, err = b.allow(now)
					if (err != nil) != s.refused {
						t.Fatalf("step %d: allow: %v, want refused %v", i, err, s.refused)
					}
					if err != nil && !errors.Is(err, ErrCircuitOpen) {
						t.Fatalf("step %d: %v does not wrap ErrCircuitOpen", i, err)
					}
					switch s.do {
					case "call+ok":
						b.succeeded(tk)
					case "call+fail":
						b.failed(tk, now)
					case "call+abandon":
						b.abandoned(tk)
					case "hold":
						held = tk
					}
				}
				if b.state != s.state {
					t.Fatalf("step %d (%s at %ds): state %v, want %v", i, s.do, s.at, b.state, s.state)
				}
			}
		})
	}
}

// Outcomes of calls that started before the breaker last changed are ignored: a slow
// failure of an old call does not reopen a breaker a trial has just closed, and a
// slow success does not close an open one.
func TestBreakerIgnoresOutcomesOfOlderCalls(t *testing.T) {
	now := time.Unix(0, 0)
	b := breaker{maxFailures: 1, resetTimeout: time.Second}
	old, _ := b.allow(now)
	slow, _ := b.allow(now)
	b.failed(old, now) // opens
	b.succeeded(slow)
	if b.state != BreakerOpen {
		t.Fatalf("a late success changed an open breaker to %v", b.state)
	}
	trial, _ := b.allow(now.Add(time.Second))
	b.succeeded(trial)
	b.failed(slow, now.Add(time.Second))
	if b.state != BreakerClosed {
		t.Fatalf("a late failure of an old call changed a closed breaker to %v", b.state)
	}
}

// A breaker with no maximum never opens.
func TestBreakerOff(t *testing.T) {
	b := breaker{maxFailures: -1, resetTimeout: time.Second}
	for i := range 100 {
		tk, err := b.allow(time.Unix(int64(i), 0))
		if err != nil {
			t.Fatal(err)
		}
		b.failed(tk, time.Unix(int64(i), 0))
	}
	if b.state != BreakerClosed {
		t.Fatal(b.state)
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 9: "BreakerState(9)"} {
		if got := fmt.Sprint(s); got != want {
			t.Errorf("%d: %q", int(s), got)
		}
	}
}
