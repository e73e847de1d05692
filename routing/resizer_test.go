package routing_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/testkit"
)

func TestResizerChange(t *testing.T) {
	def := routing.Resizer{}
	for _, tc := range []struct {
		z                 routing.Resizer
		current, pressure int
		want              int
	}{
		{def, 0, 0, 1},   // below the lower bound: up to it
		{def, 1, 1, 1},   // all busy: +ceil(0.2)
		{def, 5, 5, 1},   // all busy: +ceil(1.0)
		{def, 6, 6, 2},   // all busy: +ceil(1.2)
		{def, 10, 10, 0}, // at the upper bound
		{def, 5, 3, 0},   // some busy, above the backoff threshold
		{def, 10, 2, -1}, // 0.2 < 0.3: -ceil(1.0)
		{def, 5, 1, -1},  // 0.2 < 0.3: -ceil(0.5)
		{def, 1, 0, 0},   // at the lower bound
		{routing.Resizer{LowerBound: 2, UpperBound: 4, RampupRate: 1}, 3, 3, 1}, // +3, clamped
		{routing.Resizer{BackoffThreshold: -1}, 10, 0, 0},                       // never shrinks
		{routing.Resizer{LowerBound: 3, UpperBound: 3}, 3, 0, 0},
	} {
		if got := tc.z.Change(tc.current, tc.pressure); got != tc.want {
			t.Errorf("%+v.Change(%d, %d) = %d, want %d", tc.z, tc.current, tc.pressure, got, tc.want)
		}
	}
	for name, z := range map[string]routing.Resizer{
		"negative lower": {LowerBound: -1},
		"upper < lower":  {LowerBound: 5, UpperBound: 3},
		"negative rate":  {RampupRate: -1},
	} {
		if err := z.Validate(); !errors.Is(err, routing.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := def.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestResizablePoolGrowsAndShrinks drives a pool with a resizer that checks at every
// message: busy routees make it grow up to its upper bound, idle ones shrink it to its
// lower bound.
func TestResizablePoolGrowsAndShrinks(t *testing.T) {
	sys := testkit.NewSystem(t)
	release := make(chan struct{})
	blocker := actor.PropsFunc(func(ctx actor.Context) {
		if ctx.Message() == "block" {
			<-release
		}
	})
	r := newPool(t, sys, routing.PoolConfig{
		Routee: blocker,
		Resizer: &routing.Resizer{LowerBound: 1, UpperBound: 3, RampupRate: 1, BackoffThreshold: 0.5,
			BackoffRate: 1, MessagesPerResize: 1},
	})
	rs := routees(t, r)
	if len(rs) != 1 {
		t.Fatalf("started with %v, want the lower bound, 1", rs)
	}
	waitIdle(t, rs[0])
	// A Tell marks its routee running at once; the resize it triggers is queued behind
	// it, and GetRoutees behind that.
	_ = r.Tell("block")
	if rs = routees(t, r); len(rs) != 2 {
		t.Fatalf("1 busy of 1: %d routees, want 2", len(rs))
	}
	waitIdle(t, rs[1])
	_ = r.Tell("block") // to the new routee
	if rs = routees(t, r); len(rs) != 3 {
		t.Fatalf("2 busy of 2: %d routees, want 3 (the upper bound)", len(rs))
	}
	close(release)
	for _, ref := range rs {
		waitIdle(t, ref)
	}
	_ = r.Tell("x") // one of 3 busy at most: below half, shrink to the lower bound
	if got := routees(t, r); len(got) != 1 || got[0] != rs[0] {
		t.Fatalf("idle: routees %v, want [%v]", got, rs[0])
	}

	// With a resizer the pool outlives its routees, and grows back on the next message.
	probe := testkit.NewProbe(t, sys)
	probe.Watch(rs[0])
	_ = rs[0].Tell(actor.PoisonPill{})
	probe.ExpectTerminated(rs[0])
	awaitRouteesEqual(t, r, nil)
	if err := r.Tell("x"); !errors.Is(err, routing.ErrNoRoutees) {
		t.Fatalf("Tell with no routees: %v", err)
	}
	if got := routees(t, r); len(got) != 1 {
		t.Fatalf("after a message: %v, want one routee again", got)
	}
}
