package routing

import (
	"fmt"
	"math"

	"github.com/troupe-go/troupe/actor"
)

// Resizer grows a pool while its routees are busy and shrinks it while they are idle,
// between LowerBound and UpperBound (the rules of Akka's default resizer). Every
// MessagesPerResize messages routed, the router counts the routees under pressure
// (actor.Ref.Activity) and resizes: when all are under pressure it adds RampupRate
// of the current size (rounded up), and when fewer than BackoffThreshold of them are
// it removes BackoffRate of it (rounded up), newest first, each routee after it has
// handled its queue. Zero fields mean the defaults.
type Resizer struct {
	// LowerBound is the fewest routees; default 1.
	LowerBound int
	// UpperBound is the most routees; default 10.
	UpperBound int
	// PressureThreshold says when a routee is under pressure: 1 (the default) while it
	// handles messages (running or backlogged), 2 or more only when it is backlogged
	// (more messages arrived since it started on its mailbox). Troupe's mailbox does
	// not count its messages, so thresholds above 2 mean the same as 2.
	PressureThreshold int
	// RampupRate is the share of the current size added when every routee is under
	// pressure; default 0.2.
	RampupRate float64
	// BackoffThreshold is the share of routees under pressure below which the pool
	// shrinks; default 0.3. A negative value never shrinks it.
	BackoffThreshold float64
	// BackoffRate is the share of the current size removed when shrinking; default 0.1.
	BackoffRate float64
	// MessagesPerResize is how many messages are routed between two resizes; default 10.
	MessagesPerResize int
}

func (z Resizer) withDefaults() Resizer {
	if z.LowerBound == 0 {
		z.LowerBound = 1
	}
	if z.UpperBound == 0 {
		z.UpperBound = max(10, z.LowerBound)
	}
	if z.PressureThreshold == 0 {
		z.PressureThreshold = 1
	}
	if z.RampupRate == 0 {
		z.RampupRate = 0.2
	}
	if z.BackoffThreshold == 0 {
		z.BackoffThreshold = 0.3
	}
	if z.BackoffRate == 0 {
		z.BackoffRate = 0.1
	}
	if z.MessagesPerResize == 0 {
		z.MessagesPerResize = 10
	}
	return z
}

// Validate reports bounds and rates out of range, wrapping ErrInvalidConfig.
func (z Resizer) Validate() error {
	d := z.withDefaults()
	switch {
	case d.LowerBound < 0:
		return fmt.Errorf("%w: resizer LowerBound %d is negative", ErrInvalidConfig, z.LowerBound)
	case d.UpperBound < d.LowerBound || d.UpperBound < 1:
		return fmt.Errorf("%w: resizer UpperBound %d, want at least 1 and LowerBound (%d)", ErrInvalidConfig, d.UpperBound, d.LowerBound)
	case d.PressureThreshold < 0 || d.RampupRate < 0 || d.BackoffRate < 0 || d.MessagesPerResize < 0:
		return fmt.Errorf("%w: resizer PressureThreshold, RampupRate, BackoffRate and MessagesPerResize must not be negative", ErrInvalidConfig)
	}
	return nil
}

// Change returns how many routees to add (positive) or remove (negative) for a pool
// of current routees of which pressure are under pressure.
func (z Resizer) Change(current, pressure int) int {
	d := z.withDefaults()
	proposed := 0
	if pressure >= current {
		proposed += int(math.Ceil(d.RampupRate * float64(current)))
	}
	if current > 0 && d.BackoffThreshold > 0 && float64(pressure)/float64(current) < d.BackoffThreshold {
		proposed -= int(math.Ceil(d.BackoffRate * float64(current)))
	}
	target := min(max(current+proposed, d.LowerBound), d.UpperBound)
	return target - current
}

// underPressure reports whether a routee with activity a counts as under pressure.
func (z Resizer) underPressure(a actor.Activity) bool {
	if z.withDefaults().PressureThreshold <= 1 {
		return a == actor.ActivityRunning || a == actor.ActivityBacklogged
	}
	return a == actor.ActivityBacklogged
}

// resizeCheck asks a resizable pool's router actor to resize.
type resizeCheck struct{}
