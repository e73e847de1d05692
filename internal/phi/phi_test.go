package phi

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// cfg is the cluster's reachability defaults: a 3s pause, 100ms deviation, 1000 samples.
var cfg = Config{AcceptablePause: 3 * time.Second, MinStdDeviation: 100 * time.Millisecond, MaxSamples: 1000}

const interval = time.Second

// steady feeds heartbeats every interval from at, n times, and returns the last time.
func steady(d *Detector, at time.Time, n int) time.Time {
	for range n {
		at = at.Add(interval)
		d.Heartbeat(at, interval)
	}
	return at
}

func TestNotStartedIsNotSuspected(t *testing.T) {
	d := New(cfg)
	if d.Started() || d.Phi(t0.Add(time.Hour)) != 0 || !d.Available(t0.Add(time.Hour), 1) {
		t.Fatalf("a detector that has not started suspects: phi %v", d.Phi(t0.Add(time.Hour)))
	}
	if !d.Crossing(Deviations(8)).IsZero() {
		t.Errorf("Crossing before start = %v, want zero", d.Crossing(Deviations(8)))
	}
}

// The first heartbeat seeds the estimate, so a peer that answers once and then stops
// is suspected at about interval + pause, not never (remote's detector learned nothing
// from its first heartbeat).
func TestFirstHeartbeatSeedsTheEstimate(t *testing.T) {
	d := New(cfg)
	d.Heartbeat(t0, interval)
	if !d.Started() || len(d.intervals) != 2 {
		t.Fatalf("after the first heartbeat: started %v, %d samples", d.Started(), len(d.intervals))
	}
	if p := d.Phi(t0.Add(interval)); p >= 1 {
		t.Errorf("phi one interval after the first heartbeat = %v, want < 1", p)
	}
	if p := d.Phi(t0.Add(interval + cfg.AcceptablePause + 3*interval)); p < 8 {
		t.Errorf("phi long after the only heartbeat = %v, want >= 8", p)
	}
}

// An assumed start is a moment to measure from, not an arrival: the wait for the
// first answer is not learned, so a late first answer does not blunt the detector.
func TestAssumedStartIsNotLearned(t *testing.T) {
	late, prompt := New(cfg), New(cfg)
	late.Start(t0, interval, true)
	late.Heartbeat(t0.Add(2500*time.Millisecond), interval) // within the pause: would be learned
	prompt.Heartbeat(t0.Add(2500*time.Millisecond), interval)
	end := t0.Add(2500 * time.Millisecond)
	steady(late, end, 20)
	end = steady(prompt, end, 20)
	if a, b := late.Crossing(Deviations(8)), prompt.Crossing(Deviations(8)); !a.Equal(b) {
		t.Errorf("after a late first answer the crossing is %v, after a prompt one %v", a.Sub(end), b.Sub(end))
	}
}

// A gap longer than the acceptable pause is unreachability, not jitter: not learned.
func TestLongGapIsNotLearned(t *testing.T) {
	d := New(cfg)
	d.Heartbeat(t0, interval)
	end := steady(d, t0, 10)
	before := d.Crossing(Deviations(8)).Sub(end)
	end = end.Add(30 * time.Second)
	d.Heartbeat(end, interval)
	if after := d.Crossing(Deviations(8)).Sub(end); after != before {
		t.Errorf("after a 30s gap the detection time is %v, before it %v", after, before)
	}
	// A gap within the pause is learned.
	end = end.Add(2 * time.Second)
	d.Heartbeat(end, interval)
	if after := d.Crossing(Deviations(8)).Sub(end); after <= before {
		t.Errorf("after a 2s gap the detection time is %v, not above %v", after, before)
	}
}

// A heartbeat stamped before the last one does not move time back.
func TestTimeDoesNotMoveBack(t *testing.T) {
	d := New(cfg)
	d.Heartbeat(t0, interval)
	d.Heartbeat(t0.Add(2*time.Second), interval)
	n := len(d.intervals)
	d.Heartbeat(t0.Add(time.Second), interval)
	if !d.last.Equal(t0.Add(2*time.Second)) || len(d.intervals) != n {
		t.Errorf("an older heartbeat moved last to %v (%d samples, had %d)", d.last, len(d.intervals), n)
	}
}

// Heartbeats without jitter: the deviation is MinStdDeviation, and phi reaches the
// threshold where Crossing says, not a millisecond earlier.
func TestMinStdDeviationAndCrossing(t *testing.T) {
	d := New(Config{AcceptablePause: 0, MinStdDeviation: 100 * time.Millisecond, MaxSamples: 10})
	d.Heartbeat(t0, interval)
	end := steady(d, t0, 50) // the seeds have left the ring
	if _, std := d.stats(); std != 100 {
		t.Fatalf("std = %v ms, want the 100ms floor", std)
	}
	y := Deviations(8)
	at := d.Crossing(y)
	if want := end.Add(interval + time.Duration(y*100*float64(time.Millisecond))); at.Before(want) || at.After(want.Add(3*time.Millisecond)) {
		t.Errorf("Crossing = last + %v, want about %v", at.Sub(end), want.Sub(end))
	}
	if p := d.Phi(at); p < 8 {
		t.Errorf("phi at Crossing = %v, want >= 8", p)
	}
	if p := d.Phi(at.Add(-3 * time.Millisecond)); p >= 8 {
		t.Errorf("phi 3ms before Crossing = %v, want < 8", p)
	}
}

func TestDeviations(t *testing.T) {
	for _, th := range []float64{1, 8, 10, 16} {
		y := Deviations(th)
		if phiOf(y) < th || phiOf(y-0.01) >= th {
			t.Errorf("Deviations(%v) = %v: phi there %v, just below %v", th, y, phiOf(y), phiOf(y-0.01))
		}
	}
	if y := Deviations(8); y < 5 || y > 5.5 {
		t.Errorf("Deviations(8) = %v, want within [5, 5.5]", y)
	}
}

// The running sums stay those of the ring however many samples pass through it.
func TestSumsStayExact(t *testing.T) {
	d := New(Config{AcceptablePause: time.Hour, MinStdDeviation: time.Millisecond, MaxSamples: 7})
	r := rand.New(rand.NewPCG(1, 2))
	at := t0
	d.Heartbeat(at, interval)
	for i := range 100_000 {
		gap := time.Duration(r.Int64N(int64(10*time.Second))) + time.Millisecond
		if i%1000 == 0 {
			gap = 50 * time.Minute // a large sample among small ones
		}
		at = at.Add(gap)
		d.Heartbeat(at, interval)
	}
	var sum, sq float64
	for _, v := range d.intervals {
		sum += v
		sq += v * v
	}
	if math.Abs(d.sum-sum) > 1e-6*sum || math.Abs(d.sq-sq) > 1e-6*sq {
		t.Errorf("running sums %v, %v; the ring's %v, %v", d.sum, d.sq, sum, sq)
	}
}

// Nonsense settings do not divide by zero or panic.
func TestBadConfigIsSafe(t *testing.T) {
	d := New(Config{AcceptablePause: -time.Second, MaxSamples: -1})
	d.Heartbeat(t0, interval)
	for i := range 5 {
		d.Heartbeat(t0.Add(time.Duration(i+1)*interval), interval)
	}
	for _, at := range []time.Duration{0, interval, 5 * interval, time.Hour} {
		if p := d.Phi(t0.Add(5*interval + at)); math.IsNaN(p) {
			t.Errorf("phi %v after the last heartbeat is NaN", at)
		}
	}
	if d.Available(t0.Add(time.Hour), 8) {
		t.Errorf("an hour of silence is available")
	}
}
