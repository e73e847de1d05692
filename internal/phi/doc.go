// Package phi is the phi-accrual failure detector (Hayashibara et al.) that both the
// remote transport's death watch and the cluster's reachability monitor use: it learns
// the distribution of a peer's heartbeat intervals and turns the time since the last
// heartbeat into a suspicion level, phi; phi at or above a threshold means the peer is
// taken to be gone.
//
// A Detector is a plain value. It starts no goroutine and reads no clock: every method
// that depends on time takes the current time as an argument, so a simulation can
// drive it in virtual time.
//
// # What it learns, and what it does not
//
//   - Start seeds it with an estimate of the interval (spread by a quarter either way),
//     so that a peer that never answers is still suspected, at the expected time.
//   - An assumed start (a moment to measure from, not an arrival) is not learned: the
//     time from it to the first real heartbeat is not an interval.
//   - An interval longer than the acceptable pause (or the heartbeat interval, when
//     that is longer) is a stretch of unreachability, such as a partition that healed,
//     and is not learned: learning it would blunt the detector for the next failure.
//   - A heartbeat stamped before the last one does not move time back.
//   - The standard deviation never falls below MinStdDeviation, so that a peer whose
//     heartbeats arrive with little jitter is not suspected at its first late one.
//
// The last MaxSamples intervals are kept in a ring, with their running sum and sum of
// squares; the sums are recomputed from the ring each time it wraps, so that rounding
// from removing old samples never accumulates.
//
//troupe:core
package phi
