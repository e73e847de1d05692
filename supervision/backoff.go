package supervision

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidBackoff is wrapped by every error that Backoff.Validate returns.
var ErrInvalidBackoff = errors.New("supervision: invalid backoff")

// Backoff describes exponentially growing restart delays, as used by the runtime's
// backoff supervisor: the delay before restart n is Min doubled n times, capped at Max,
// with random jitter on top.
type Backoff struct {
	// Min is the delay before the first restart; it must be positive.
	Min time.Duration
	// Max caps every delay, jitter included; it must be at least Min.
	Max time.Duration
	// RandomFactor, between 0 and 1, adds jitter: each delay is multiplied by
	// 1 + rnd*RandomFactor for a random rnd in [0, 1). 0 means no jitter.
	RandomFactor float64
	// ResetAfter is how long a child must run without failing for the restart count to
	// go back to 0; 0 means Min.
	ResetAfter time.Duration
	// MaxRetries is the number of restarts after which the supervisor gives up and
	// stops; 0 means unlimited.
	MaxRetries int
}

// Validate returns nil if b is usable: Min > 0, Max >= Min, 0 <= RandomFactor <= 1,
// ResetAfter >= 0 and MaxRetries >= 0. Otherwise it returns an error, wrapping
// ErrInvalidBackoff, that names the first field out of range.
func (b Backoff) Validate() error {
	switch {
	case b.Min <= 0:
		return fmt.Errorf("%w: Min must be positive, got %v", ErrInvalidBackoff, b.Min)
	case b.Max < b.Min:
		return fmt.Errorf("%w: Max (%v) must be at least Min (%v)", ErrInvalidBackoff, b.Max, b.Min)
	case !(b.RandomFactor >= 0 && b.RandomFactor <= 1): // also rejects NaN
		return fmt.Errorf("%w: RandomFactor must be between 0 and 1, got %v", ErrInvalidBackoff, b.RandomFactor)
	case b.ResetAfter < 0:
		return fmt.Errorf("%w: ResetAfter must not be negative, got %v", ErrInvalidBackoff, b.ResetAfter)
	case b.MaxRetries < 0:
		return fmt.Errorf("%w: MaxRetries must not be negative, got %d", ErrInvalidBackoff, b.MaxRetries)
	}
	return nil
}

// Delay returns the delay before restart number restartCount, counting from 0:
// min(Max, Min * 2^restartCount) * (1 + rnd*RandomFactor), capped at Max after the
// jitter too. So restartCount 0 with rnd 0 gives Min. The caller supplies rnd, which
// should be in [0, 1) (as from math/rand/v2's Float64); values outside [0, 1] and NaN
// are clamped into it. Delay never overflows: a huge restartCount gives Max, and a
// negative one counts as 0. For a b that fails Validate it does not panic either: it
// returns 0 if Min or Max is not positive, and otherwise a value of at most Max.
func (b Backoff) Delay(restartCount int, rnd float64) time.Duration {
	if b.Max <= 0 || b.Min <= 0 {
		return 0
	}
	if restartCount < 0 {
		restartCount = 0
	}
	d := b.Max
	// Min << restartCount fits and stays below Max only if Min <= Max >> restartCount.
	if restartCount < 63 && b.Min <= b.Max>>restartCount {
		d = b.Min << restartCount
	}
	if !(rnd > 0) { // also catches NaN
		rnd = 0
	} else if rnd > 1 {
		rnd = 1
	}
	f := b.RandomFactor
	if !(f > 0) {
		f = 0
	} else if f > 1 {
		f = 1
	}
	j := float64(d) * (1 + rnd*f)
	if j >= float64(b.Max) {
		return b.Max
	}
	return time.Duration(j)
}
