package supervision

import "time"

// RetryStats counts one child's restarts inside a time window. The zero value is ready
// to use and has no restarts recorded. It is not safe for concurrent use: the parent
// actor owns it and touches it only from its own Receive.
type RetryStats struct {
	count       int
	windowStart time.Time // meaningful only while count > 0
}

// RequestRestart records a restart attempt at now and reports whether it is allowed
// when at most maxRetries restarts are allowed within window.
//
//   - maxRetries < 0 means unlimited: the attempt is recorded and always allowed.
//   - maxRetries == 0 means never: it returns false and records nothing.
//   - window <= 0 means no window: every restart ever is counted, and the attempt is
//     allowed while the count, including this attempt, is at most maxRetries.
//   - With a window, the first attempt opens a window at now with a count of 1. An
//     attempt at most window after the window's start (the boundary is inside)
//     increments the count and is allowed while the count is at most maxRetries. A later
//     attempt opens a new window at now with a count of 1 and is allowed.
//
// A refused attempt is still counted, so further attempts in the same window are refused
// too. now should come from a monotonic clock such as time.Now.
func (s *RetryStats) RequestRestart(maxRetries int, window time.Duration, now time.Time) bool {
	if maxRetries == 0 {
		return false
	}
	if window <= 0 {
		s.count++
		return maxRetries < 0 || s.count <= maxRetries
	}
	if s.count > 0 && now.Sub(s.windowStart) <= window {
		s.count++
	} else {
		s.count = 1
		s.windowStart = now
	}
	return maxRetries < 0 || s.count <= maxRetries
}

// Count returns the number of restart attempts recorded: in the current window when a
// window is used, otherwise since the last Reset.
func (s *RetryStats) Count() int {
	return s.count
}

// Reset forgets all recorded attempts, returning s to its zero value.
func (s *RetryStats) Reset() {
	*s = RetryStats{}
}
