package ratelog

import (
	"sync"
	"time"
)

// Limiter decides which events of one kind are logged. Set Interval and Burst before
// first use (or use New).
// It is safe for concurrent use, and must not be copied after first use.
type Limiter struct {
	// Interval is the length of a window.
	Interval time.Duration
	// Burst is how many lines a window allows; below 1 means 1.
	Burst int

	mu         sync.Mutex
	open       bool      // a window has been opened
	windowEnd  time.Time // the end of the current window, the first instant after it
	logged     int       // lines allowed in the current window
	suppressed int       // events suppressed and not reported yet
}

// New returns a Limiter of burst lines per interval.
func New(interval time.Duration, burst int) *Limiter {
	return &Limiter{Interval: interval, Burst: burst}
}

// Allow reports whether an event at now may be logged. When it may, suppressed is
// the count of events suppressed since the last line that reported such a count (or
// since the start), to be logged with this line or in a summary line before it; it is
// then reset. When it may not, the event is counted and suppressed is 0.
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open || !now.Before(l.windowEnd) {
		l.open, l.windowEnd, l.logged = true, now.Add(l.Interval), 0
	}
	if l.logged >= max(l.Burst, 1) {
		l.suppressed++
		return false, 0
	}
	l.logged++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// Flush returns the count of events suppressed and not reported yet, and resets it,
// when the current window has ended at now; it returns 0 while the window runs. A
// caller that reports suppressed events without waiting for the next one (a periodic
// tick) calls it; the next event opens a new window as Allow would have.
func (l *Limiter) Flush(now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open || now.Before(l.windowEnd) {
		return 0
	}
	l.open = false
	n := l.suppressed
	l.suppressed = 0
	return n
}

// Take returns the count of events suppressed and not reported yet, and resets it,
// whether or not the window has ended: for a last report when the logger's owner
// stops, or a timer at the window's end. The window goes on.
func (l *Limiter) Take() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.suppressed
	l.suppressed = 0
	return n
}

// WindowEnd returns the end of the current window, the zero time before the first
// event.
func (l *Limiter) WindowEnd() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.open {
		return time.Time{}
	}
	return l.windowEnd
}
