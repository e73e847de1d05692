package persistence

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var errStore = errors.New("store down")

// TestBreaker drives the breaker through its states with explicit times: max 3
// failures, open for 1s at first, doubling after each failed trial up to 4s.
func TestBreaker(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		at      int    // milliseconds after t0
		do      string // "call+ok", "call+fail", "call+abandon", "hold" (keep the ticket), "call" (expect refused when refused), "ok", "fail" (the held ticket)
		refused bool   // allow must refuse
		state   BreakerState
	}
	opened := []step{ // three failures at 0 open it for 1s
		{0, "call+fail", false, BreakerClosed},
		{0, "call+fail", false, BreakerClosed},
		{0, "call+fail", false, BreakerOpen},
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
		{"max failures in a row open it; open fails fast until the reset timeout", append(opened,
			step{1, "call", true, BreakerOpen},
			step{999, "call", true, BreakerOpen},
		)},
		{"after the reset timeout one trial goes through; its success closes", append(opened,
			step{1000, "hold", false, BreakerHalfOpen},
			step{1000, "call", true, BreakerHalfOpen}, // one trial at a time
			step{1500, "call", true, BreakerHalfOpen},
			step{1600, "ok", false, BreakerClosed},
			step{1600, "call+ok", false, BreakerClosed},
		)},
		{"no call for a while: the first call after the reset timeout is the trial", append(opened,
			step{60_000, "call+ok", false, BreakerClosed},
		)},
		{"failed trials double the open time, up to the maximum", append(opened,
			step{1000, "call+fail", false, BreakerOpen}, // open for 2s
			step{2999, "call", true, BreakerOpen},
			step{3000, "call+fail", false, BreakerOpen}, // 4s
			step{6999, "call", true, BreakerOpen},
			step{7000, "call+fail", false, BreakerOpen}, // 4s: the maximum
			step{10_999, "call", true, BreakerOpen},
			step{11_000, "call+fail", false, BreakerOpen}, // still 4s
			step{14_999, "call", true, BreakerOpen},
			step{15_000, "call+ok", false, BreakerClosed},
		)},
		{"a trial that fails late opens it from the time it failed", append(opened,
			step{1000, "hold", false, BreakerHalfOpen},
			step{5000, "fail", false, BreakerOpen}, // open for 2s from 5s
			step{6999, "call", true, BreakerOpen},
			step{7000, "call+ok", false, BreakerClosed},
		)},
		{"closing resets the open time to the reset timeout", append(opened,
			step{1000, "call+fail", false, BreakerOpen}, // 2s
			step{3000, "call+fail", false, BreakerOpen}, // 4s
			step{7000, "call+ok", false, BreakerClosed},
			step{8000, "call+fail", false, BreakerClosed},
			step{8000, "call+fail", false, BreakerClosed},
			step{8000, "call+fail", false, BreakerOpen}, // 1s again
			step{8999, "call", true, BreakerOpen},
			step{9000, "call+ok", false, BreakerClosed},
		)},
		{"an abandoned trial lets the next call be the trial", append(opened,
			step{1000, "call+abandon", false, BreakerHalfOpen},
			step{1000, "call+ok", false, BreakerClosed},
		)},
		{"an abandoned trial does not double the open time", append(opened,
			step{1000, "call+abandon", false, BreakerHalfOpen},
			step{1000, "call+fail", false, BreakerOpen}, // 2s, not 4s
			step{3000, "call+ok", false, BreakerClosed},
		)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := breaker{maxFailures: 3, minReset: time.Second, maxReset: 4 * time.Second}
			var held ticket
			for i, s := range tc.steps {
				now := at(s.at)
				var err error
				switch s.do {
				case "ok":
					b.succeeded(held)
				case "fail":
					b.failed(held, now, errStore)
				default:
					var tk ticket
					tk, err = b.allow(now)
					if (err != nil) != s.refused {
						t.Fatalf("step %d (%s at %dms): allow: %v, want refused %v", i, s.do, s.at, err, s.refused)
					}
					if err != nil && !errors.Is(err, ErrCircuitOpen) {
						t.Fatalf("step %d: %v does not wrap ErrCircuitOpen", i, err)
					}
					switch s.do {
					case "call+ok":
						b.succeeded(tk)
					case "call+fail":
						b.failed(tk, now, errStore)
					case "call+abandon":
						b.abandoned(tk)
					case "hold":
						held = tk
					}
				}
				if b.state != s.state {
					t.Fatalf("step %d (%s at %dms): state %v, want %v", i, s.do, s.at, b.state, s.state)
				}
			}
		})
	}
}

// A refused call's error says why the breaker is open and when it tries again.
func TestBreakerRefusal(t *testing.T) {
	now := time.Unix(0, 0)
	b := breaker{maxFailures: 2, minReset: time.Second, maxReset: 10 * time.Second}
	for range 2 {
		tk, _ := b.allow(now)
		b.failed(tk, now, errStore)
	}
	_, err := b.allow(now.Add(300 * time.Millisecond))
	if !errors.Is(err, ErrCircuitOpen) || errors.Is(err, errStore) {
		t.Fatalf("refusal %v: want ErrCircuitOpen, naming the store's error without wrapping it", err)
	}
	for _, want := range []string{"2 calls in a row failed", "store down", "next trial call in 700ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	trial, _ := b.allow(now.Add(time.Second))
	if _, err := b.allow(now.Add(time.Second)); err == nil || !strings.Contains(err.Error(), "a trial call is in flight") {
		t.Errorf("refusal while half-open: %v", err)
	}
	b.failed(trial, now.Add(time.Second), errors.New("still down"))
	_, err = b.allow(now.Add(2 * time.Second))
	for _, want := range []string{"trial call 1 failed", "still down", "next trial call in 1s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v does not say %q", err, want)
		}
	}
}

// Outcomes of calls that started before the breaker last changed are ignored: a slow
// failure of an old call does not reopen a breaker a trial has just closed, and a
// slow success does not close an open one.
func TestBreakerIgnoresOutcomesOfOlderCalls(t *testing.T) {
	now := time.Unix(0, 0)
	b := breaker{maxFailures: 1, minReset: time.Second, maxReset: time.Second}
	old, _ := b.allow(now)
	slow, _ := b.allow(now)
	b.failed(old, now, errStore) // opens
	b.succeeded(slow)
	if b.state != BreakerOpen {
		t.Fatalf("a late success changed an open breaker to %v", b.state)
	}
	trial, _ := b.allow(now.Add(time.Second))
	b.failed(slow, now.Add(time.Second), errStore)
	if b.state != BreakerHalfOpen || !b.trial {
		t.Fatalf("a late failure of an old call ended the trial: %v", b.state)
	}
	b.succeeded(trial)
	b.failed(slow, now.Add(time.Second), errStore)
	if b.state != BreakerClosed {
		t.Fatalf("a late failure of an old call changed a closed breaker to %v", b.state)
	}
}

// A breaker with no maximum never opens.
func TestBreakerOff(t *testing.T) {
	b := breaker{maxFailures: -1, minReset: time.Second, maxReset: time.Second}
	for i := range 100 {
		tk, err := b.allow(time.Unix(int64(i), 0))
		if err != nil {
			t.Fatal(err)
		}
		b.failed(tk, time.Unix(int64(i), 0), errStore)
	}
	if b.state != BreakerClosed {
		t.Fatal(b.state)
	}
}

// A maximum close to the largest duration does not overflow when doubled.
func TestBreakerLongMaximum(t *testing.T) {
	now := time.Unix(0, 0)
	const long = time.Duration(1<<63 - 1)
	b := breaker{maxFailures: 1, minReset: long / 3, maxReset: long}
	tk, _ := b.allow(now)
	b.failed(tk, now, errStore)
	for range 3 {
		b.state = BreakerHalfOpen // as allow would make it, much later
		b.trial = true
		b.failed(ticket{gen: b.gen, trial: true}, now, errStore)
		if b.period <= 0 || b.period > long {
			t.Fatalf("open for %v", b.period)
		}
	}
	if b.period != long {
		t.Fatalf("open for %v, want the maximum", b.period)
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 9: "BreakerState(9)"} {
		if got := fmt.Sprint(s); got != want {
			t.Errorf("%d: %q", int(s), got)
		}
	}
}

// The defaults of a breaker's reset timeouts, and a ResetTimeout set alone, as before
// MaxResetTimeout existed.
func TestBreakerConfigDefaults(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		set        BreakerConfig
		reset, max time.Duration
	}{
		{BreakerConfig{}, DefaultJournalResetTimeout, DefaultJournalMaxResetTimeout},
		{BreakerConfig{ResetTimeout: 30 * time.Second}, 30 * time.Second, 30 * time.Second},
		{BreakerConfig{ResetTimeout: 200 * ms}, 200 * ms, DefaultJournalMaxResetTimeout},
		{BreakerConfig{MaxResetTimeout: 50 * ms}, 50 * ms, 50 * ms},
		{BreakerConfig{MaxResetTimeout: 5 * time.Second}, DefaultJournalResetTimeout, 5 * time.Second},
		{BreakerConfig{ResetTimeout: 2 * time.Second, MaxResetTimeout: 3 * time.Second}, 2 * time.Second, 3 * time.Second},
	} {
		got := Config{JournalBreaker: tc.set}.withDefaults().JournalBreaker
		if got.ResetTimeout != tc.reset || got.MaxResetTimeout != tc.max ||
			got.MaxFailures != DefaultJournalMaxFailures || got.CallTimeout != DefaultJournalCallTimeout {
			t.Errorf("%+v: %+v, want reset %v, max %v", tc.set, got, tc.reset, tc.max)
		}
	}
	s := Config{}.withDefaults().SnapshotBreaker
	if s != (BreakerConfig{DefaultSnapshotMaxFailures, DefaultSnapshotCallTimeout, DefaultSnapshotResetTimeout, DefaultSnapshotMaxResetTimeout}) {
		t.Errorf("snapshot breaker defaults %+v", s)
	}
}
