package supervision_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/supervision"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// attempt is one RequestRestart call at t0+at, with the expected answer and count after.
type attempt struct {
	at        time.Duration
	want      bool
	wantCount int
}

func TestRetryStatsRequestRestart(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		window     time.Duration
		attempts   []attempt
	}{
		{
			name: "never", maxRetries: 0, window: time.Minute,
			attempts: []attempt{{0, false, 0}, {time.Hour, false, 0}},
		},
		{
			name: "never without window", maxRetries: 0, window: 0,
			attempts: []attempt{{0, false, 0}},
		},
		{
			name: "unlimited without window", maxRetries: -1, window: 0,
			attempts: []attempt{{0, true, 1}, {0, true, 2}, {0, true, 3}, {time.Hour, true, 4}},
		},
		{
			name: "unlimited with window", maxRetries: -1, window: time.Second,
			attempts: []attempt{{0, true, 1}, {0, true, 2}, {0, true, 3}, {time.Hour, true, 1}},
		},
		{
			name: "no window counts forever", maxRetries: 2, window: 0,
			attempts: []attempt{{0, true, 1}, {time.Hour, true, 2}, {100 * time.Hour, false, 3}, {200 * time.Hour, false, 4}},
		},
		{
			name: "negative window is no window", maxRetries: 1, window: -time.Second,
			attempts: []attempt{{0, true, 1}, {time.Hour, false, 2}},
		},
		{
			name: "limit inside window", maxRetries: 2, window: time.Minute,
			attempts: []attempt{
				{0, true, 1},
				{10 * time.Second, true, 2},
				{20 * time.Second, false, 3},
				{30 * time.Second, false, 4},
			},
		},
		{
			name: "exact boundary is inside the window", maxRetries: 1, window: time.Minute,
			attempts: []attempt{{0, true, 1}, {time.Minute, false, 2}},
		},
		{
			name: "just past the boundary opens a new window", maxRetries: 1, window: time.Minute,
			attempts: []attempt{{0, true, 1}, {time.Minute + time.Nanosecond, true, 1}, {2 * time.Minute, false, 2}},
		},
		{
			name: "window is measured from its start, not the last attempt", maxRetries: 3, window: time.Minute,
			attempts: []attempt{
				{0, true, 1},
				{50 * time.Second, true, 2},
				{70 * time.Second, true, 1}, // new window opens at 70s
				{100 * time.Second, true, 2},
				{120 * time.Second, true, 3},
				{130 * time.Second, false, 4}, // the window's last instant
				{131 * time.Second, true, 1},
			},
		},
		{
			name: "refusals keep counting in the window", maxRetries: 1, window: time.Minute,
			attempts: []attempt{{0, true, 1}, {time.Second, false, 2}, {2 * time.Second, false, 3}, {61 * time.Second, true, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s supervision.RetryStats
			for i, a := range tt.attempts {
				got := s.RequestRestart(tt.maxRetries, tt.window, t0.Add(a.at))
				if got != a.want || s.Count() != a.wantCount {
					t.Fatalf("attempt %d at +%v: allowed=%v count=%d, want allowed=%v count=%d",
						i, a.at, got, s.Count(), a.want, a.wantCount)
				}
			}
		})
	}
}

func TestRetryStatsZeroTimeOpensWindow(t *testing.T) {
	// A zero now must not be mistaken for "no window open yet".
	var s supervision.RetryStats
	var zero time.Time
	if !s.RequestRestart(1, time.Minute, zero) {
		t.Fatal("first attempt refused")
	}
	if s.RequestRestart(1, time.Minute, zero.Add(time.Second)) {
		t.Fatal("second attempt in the same window allowed")
	}
}

func TestRetryStatsReset(t *testing.T) {
	var s supervision.RetryStats
	if s.Count() != 0 {
		t.Fatalf("zero Count() = %d", s.Count())
	}
	s.RequestRestart(1, time.Minute, t0)
	s.RequestRestart(1, time.Minute, t0.Add(time.Second))
	if s.Count() != 2 {
		t.Fatalf("Count() = %d, want 2", s.Count())
	}
	s.Reset()
	if s.Count() != 0 {
		t.Fatalf("Count() after Reset = %d, want 0", s.Count())
	}
	if !s.RequestRestart(1, time.Minute, t0.Add(2*time.Second)) {
		t.Fatal("attempt after Reset refused")
	}
}
