package phi

import (
	"math"
	"time"
)

// Config is a detector's settings. Zero or negative values are replaced by the
// smallest sensible ones (no pause, a deviation of one microsecond, one sample); the
// callers validate their own configurations and apply their defaults.
type Config struct {
	// AcceptablePause is how long heartbeats may be missing before suspicion rises; it
	// is added to the mean interval.
	AcceptablePause time.Duration
	// MinStdDeviation is the floor of the standard deviation.
	MinStdDeviation time.Duration
	// MaxSamples is how many intervals are remembered.
	MaxSamples int
}

// minStd is the floor of the standard deviation whatever the configuration says, in
// milliseconds, so that phi is never a division by zero.
const minStd = 0.001

// Detector is one peer's failure detector. The zero value is not usable; see New.
// It is not safe for concurrent use.
type Detector struct {
	pause  float64 // acceptable pause, in milliseconds
	minStd float64 // in milliseconds
	max    int

	intervals []float64 // ring of the last max intervals, in milliseconds
	next      int       // where the next interval goes once the ring is full
	sum, sq   float64   // of intervals
	last      time.Time // the last heartbeat, or the assumed start
	assumed   bool      // last is an assumed start, not an arrival
}

// New returns a detector that has not started: Phi is 0 until Start or Heartbeat.
func New(cfg Config) *Detector {
	return &Detector{
		pause:  math.Max(ms(cfg.AcceptablePause), 0),
		minStd: math.Max(ms(cfg.MinStdDeviation), minStd),
		max:    max(cfg.MaxSamples, 1),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Started reports whether the detector has a last heartbeat (or start) to measure
// from.
func (d *Detector) Started() bool { return !d.last.IsZero() }

// Start begins monitoring at now with interval as the first estimate of the heartbeat
// interval. With assumed, now is not an arrival but the moment from which a peer that
// never answers is suspected, and the time from it to the first heartbeat is not
// learned. Start does nothing on a detector that has started.
func (d *Detector) Start(now time.Time, interval time.Duration, assumed bool) {
	if d.Started() {
		return
	}
	d.last, d.assumed = now, assumed
	first := ms(interval)
	d.add(first - first/4)
	d.add(first + first/4)
}

// Heartbeat records a heartbeat arriving at now; interval is the expected interval,
// the first estimate when this is the first heartbeat. The interval since the last
// heartbeat is learned unless the last was an assumed start or the interval is longer
// than the acceptable pause (and than interval).
func (d *Detector) Heartbeat(now time.Time, interval time.Duration) {
	if !d.Started() {
		d.Start(now, interval, false)
		return
	}
	if gap := ms(now.Sub(d.last)); gap > 0 && gap <= math.Max(d.pause, ms(interval)) && !d.assumed {
		d.add(gap)
	}
	d.assumed = false
	if now.After(d.last) {
		d.last = now
	}
}

func (d *Detector) add(v float64) {
	if len(d.intervals) < d.max {
		d.intervals = append(d.intervals, v)
		d.sum += v
		d.sq += v * v
		return
	}
	old := d.intervals[d.next]
	d.intervals[d.next] = v
	d.next = (d.next + 1) % d.max
	if d.next == 0 {
		d.recompute()
		return
	}
	d.sum += v - old
	d.sq += v*v - old*old
}

// recompute sets the sums from the ring, dropping the rounding the running updates
// have gathered.
func (d *Detector) recompute() {
	d.sum, d.sq = 0, 0
	for _, v := range d.intervals {
		d.sum += v
		d.sq += v * v
	}
}

// stats returns the expected elapsed time (mean interval plus the acceptable pause)
// and the standard deviation, in milliseconds.
func (d *Detector) stats() (mean, std float64) {
	n := float64(len(d.intervals))
	mean = d.sum / n
	std = math.Sqrt(math.Max(d.sq/n-mean*mean, 0))
	return mean + d.pause, math.Max(std, d.minStd)
}

// Phi returns the suspicion level at now: 0 before the detector has started, and
// +Inf when the last heartbeat is so far behind that the level is beyond what a
// float64 holds.
func (d *Detector) Phi(now time.Time) float64 {
	if !d.Started() || len(d.intervals) == 0 {
		return 0
	}
	mean, std := d.stats()
	return phiOf((ms(now.Sub(d.last)) - mean) / std)
}

// Available reports whether phi at now is below threshold: the peer is not suspected.
func (d *Detector) Available(now time.Time, threshold float64) bool {
	return d.Phi(now) < threshold
}

// phiOf is phi for an elapsed time y standard deviations above the expectation, with
// the logistic approximation of the normal distribution's tail.
func phiOf(y float64) float64 {
	e := math.Exp(-y * (1.5976 + 0.070566*y*y))
	if y > 0 {
		return -math.Log10(e / (1 + e))
	}
	return -math.Log10(1 - 1/(1+e))
}

// Deviations returns how many standard deviations above the expected elapsed time phi
// reaches threshold (phi grows with the elapsed time). A caller that asks Crossing
// often computes it once per threshold.
func Deviations(threshold float64) float64 {
	lo, hi := -10.0, 60.0
	for range 100 {
		mid := (lo + hi) / 2
		if phiOf(mid) < threshold {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// Crossing returns the moment phi reaches the threshold whose Deviations is
// deviations, if no heartbeat arrives before: rounded up to the next millisecond, so
// that phi has reached the threshold at the moment returned. It is the zero time
// before the detector has started.
func (d *Detector) Crossing(deviations float64) time.Time {
	if !d.Started() || len(d.intervals) == 0 {
		return time.Time{}
	}
	mean, std := d.stats()
	return d.last.Add(time.Duration(math.Ceil(mean+deviations*std)+1) * time.Millisecond)
}
