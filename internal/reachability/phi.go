package reachability

import (
	"math"
	"time"
)

// phiDetector is a phi-accrual failure detector (Hayashibara et al.), after
// remote/phi.go: it learns the distribution of heartbeat intervals and turns the time
// since the last heartbeat into a suspicion level phi. It is a plain value.
type phiDetector struct {
	pause  float64 // acceptable pause, in milliseconds
	minStd float64 // in milliseconds
	max    int

	intervals []float64 // ring of the last max intervals, in milliseconds
	next      int
	sum, sq   float64
	last      time.Time
	assumed   bool // last is an assumed heartbeat (see start), not an arrival
}

func newPhiDetector(pause, minStd time.Duration, maxSamples int) *phiDetector {
	return &phiDetector{pause: ms(pause), minStd: ms(minStd), max: maxSamples}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// started reports whether the detector has a last heartbeat to measure from.
func (p *phiDetector) started() bool { return !p.last.IsZero() }

// start begins monitoring at now with a first estimate of the interval. With assumed,
// now is not an arrival but a moment from which a peer that never answers is
// eventually suspected; the time to the first real arrival is then not learned.
func (p *phiDetector) start(now time.Time, interval time.Duration, assumed bool) {
	if p.started() {
		return
	}
	p.last, p.assumed = now, assumed
	first := ms(interval)
	p.add(first - first/4)
	p.add(first + first/4)
}

// heartbeat records a heartbeat arriving at now. The interval since the last one is
// learned only when it is within the acceptable pause: a longer gap is a stretch of
// unreachability (a partition that healed, say), not jitter, and learning it would
// blunt the detector for the next failure.
func (p *phiDetector) heartbeat(now time.Time, interval time.Duration) {
	if !p.started() {
		p.start(now, interval, false)
		return
	}
	if d := ms(now.Sub(p.last)); d > 0 && d <= math.Max(p.pause, ms(interval)) && !p.assumed {
		p.add(d)
	}
	p.assumed = false
	if now.After(p.last) {
		p.last = now
	}
}

func (p *phiDetector) add(v float64) {
	if len(p.intervals) < p.max {
		p.intervals = append(p.intervals, v)
	} else {
		old := p.intervals[p.next]
		p.sum -= old
		p.sq -= old * old
		p.intervals[p.next] = v
		p.next = (p.next + 1) % p.max
	}
	p.sum += v
	p.sq += v * v
}

// stats returns the expected elapsed time (mean interval plus the acceptable pause)
// and the standard deviation, in milliseconds.
func (p *phiDetector) stats() (mean, std float64) {
	n := float64(len(p.intervals))
	mean = p.sum / n
	std = math.Sqrt(math.Max(p.sq/n-mean*mean, 0))
	return mean + p.pause, math.Max(std, p.minStd)
}

// phi returns the suspicion level at now; 0 when not monitoring.
func (p *phiDetector) phi(now time.Time) float64 {
	if !p.started() || len(p.intervals) == 0 {
		return 0
	}
	mean, std := p.stats()
	return phiOf((ms(now.Sub(p.last)) - mean) / std)
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

// yFor returns the y at which phiOf reaches threshold (phiOf grows with y).
func yFor(threshold float64) float64 {
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

// crossing returns the moment phi reaches the threshold whose yFor is y, if no
// heartbeat arrives before: rounded up to the next millisecond, so that phi has
// reached the threshold at the moment returned.
func (p *phiDetector) crossing(y float64) time.Time {
	mean, std := p.stats()
	return p.last.Add(time.Duration(math.Ceil(mean+y*std)+1) * time.Millisecond)
}
