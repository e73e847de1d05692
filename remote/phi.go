package remote

import (
	"math"
	"time"
)

// phiDetector is a phi-accrual failure detector (Hayashibara et al.): it learns the
// distribution of heartbeat intervals and turns the time since the last heartbeat into
// a suspicion level phi; phi above a threshold means the peer is considered gone. It
// is a plain value; the caller serialises access.
type phiDetector struct {
	threshold float64
	pause     float64 // acceptable pause, in milliseconds
	minStd    float64 // in milliseconds
	max       int

	intervals []float64 // ring of the last max intervals, in milliseconds
	next      int
	sum, sq   float64
	last      time.Time
}

func newPhiDetector(c FailureDetectorConfig) *phiDetector {
	return &phiDetector{
		threshold: c.Threshold,
		pause:     ms(c.AcceptablePause),
		minStd:    ms(c.MinStdDeviation),
		max:       c.MaxSamples,
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// start begins monitoring at now with a first estimate of the interval, as if a
// heartbeat had arrived, so that a peer that never answers is eventually suspected.
func (p *phiDetector) start(now time.Time, interval time.Duration) {
	if !p.last.IsZero() {
		return
	}
	p.last = now
	// Seed with the expected interval and a spread of a quarter of it.
	first := ms(interval)
	p.add(first - first/4)
	p.add(first + first/4)
}

// heartbeat records a heartbeat arriving at now.
func (p *phiDetector) heartbeat(now time.Time) {
	if p.last.IsZero() {
		p.last = now
		return
	}
	if d := ms(now.Sub(p.last)); d > 0 {
		p.add(d)
	}
	p.last = now
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

// phi returns the suspicion level at now; 0 when not monitoring.
func (p *phiDetector) phi(now time.Time) float64 {
	n := float64(len(p.intervals))
	if p.last.IsZero() || n == 0 {
		return 0
	}
	mean := p.sum / n
	std := math.Sqrt(math.Max(p.sq/n-mean*mean, 0))
	std = math.Max(std, p.minStd)
	mean += p.pause
	// Logistic approximation of the normal distribution's tail.
	y := (ms(now.Sub(p.last)) - mean) / std
	e := math.Exp(-y * (1.5976 + 0.070566*y*y))
	if ms(now.Sub(p.last)) > mean {
		return -math.Log10(e / (1 + e))
	}
	return -math.Log10(1 - 1/(1+e))
}

// available reports whether phi at now is below the threshold.
func (p *phiDetector) available(now time.Time) bool { return p.phi(now) < p.threshold }
