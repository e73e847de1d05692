package ratelog

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

type step struct {
	ms         int
	ok         bool
	suppressed int
}

func run(t *testing.T, l *Limiter, steps []step) {
	t.Helper()
	for i, s := range steps {
		ok, n := l.Allow(at(s.ms))
		if ok != s.ok || n != s.suppressed {
			t.Errorf("step %d at %dms: Allow = %v, %d; want %v, %d", i, s.ms, ok, n, s.ok, s.suppressed)
		}
	}
}

// With Burst 1: the first event, then at most one line per interval, carrying the
// count of the events suppressed before it.
func TestOnePerInterval(t *testing.T) {
	run(t, New(time.Second, 1), []step{
		{0, true, 0},
		{1, false, 0},
		{500, false, 0},
		{999, false, 0},
		{1000, true, 3}, // the window has ended: a window is [start, start+Interval)
		{1500, false, 0},
		{5000, true, 1},
		{9000, true, 0}, // nothing suppressed since the last line
	})
}

// With Burst 3: three lines per window.
func TestBurst(t *testing.T) {
	run(t, New(time.Second, 3), []step{
		{0, true, 0},
		{10, true, 0},
		{20, true, 0},
		{30, false, 0},
		{40, false, 0},
		{1500, true, 2},
		{1510, true, 0},
	})
}

// Burst below 1 counts as 1.
func TestZeroBurst(t *testing.T) {
	run(t, &Limiter{Interval: time.Second}, []step{{0, true, 0}, {1, false, 0}, {2000, true, 1}})
}

// Flush reports the suppressed count once the window has ended, and only then; the
// next event opens a new window.
func TestFlush(t *testing.T) {
	l := New(time.Second, 1)
	if n := l.Flush(at(0)); n != 0 {
		t.Errorf("Flush before any event = %d", n)
	}
	run(t, l, []step{{0, true, 0}, {100, false, 0}, {200, false, 0}})
	if n := l.Flush(at(900)); n != 0 {
		t.Errorf("Flush within the window = %d, want 0", n)
	}
	if n := l.Flush(at(999)); n != 0 {
		t.Errorf("Flush at the window's last instant = %d, want 0", n)
	}
	if n := l.Flush(at(1000)); n != 2 {
		t.Errorf("Flush after the window = %d, want 2", n)
	}
	if n := l.Flush(at(1100)); n != 0 {
		t.Errorf("a second Flush = %d, want 0", n)
	}
	run(t, l, []step{{1300, true, 0}, {1400, false, 0}})
}

// Take reports the count at once, and the window goes on.
func TestTake(t *testing.T) {
	l := New(time.Second, 1)
	run(t, l, []step{{0, true, 0}, {100, false, 0}})
	if n := l.Take(); n != 1 {
		t.Errorf("Take = %d, want 1", n)
	}
	run(t, l, []step{{200, false, 0}, {1200, true, 1}})
	if got := l.WindowEnd(); !got.Equal(at(2200)) {
		t.Errorf("WindowEnd = %v, want %v", got, at(2200))
	}
}
