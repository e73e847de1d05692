// Package ratelog bounds the log lines of one kind of event, so that a flood of
// events (drops, bad input from a peer, dead letters) cannot flood the log, while
// none goes unaccounted: the events left out are counted, and the count is handed to
// the caller to log with the next line, or in a summary of its own.
//
// A Limiter allows up to Burst lines per window of Interval (from the window's first
// event, included, to Interval later, excluded). The first event is
// always logged and opens a window; once Burst lines were logged in a window, the
// window's further events are suppressed and counted. The first event after the
// window has ended opens a new window, is logged, and carries the count of the
// events suppressed before it. With Burst 1 that is: the first event, then at most
// one line per Interval with the count of those suppressed.
//
// A Limiter reads no clock: every method takes the current time, so tests drive it
// with the times they choose.
package ratelog
