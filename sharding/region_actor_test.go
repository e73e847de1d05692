package sharding

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// The region a region forwards to last is remembered only while it is among the
// regions resolved: once it terminates, its Ref is not used again.
func TestForwardRegionForgets(t *testing.T) {
	sys := testkit.NewSystem(t)
	a, b := testkit.NewProbe(t, sys).Ref(), testkit.NewProbe(t, sys).Ref()
	r := &regionActor{regions: map[RegionID]actor.Ref{"a": a, "b": b}}
	for range 2 {
		if got, ok := r.forwardRegion("a"); !ok || got != a {
			t.Fatalf("forwardRegion(a) = %v, %v", got, ok)
		}
	}
	if got, ok := r.forwardRegion("c"); ok {
		t.Fatalf("forwardRegion(c), not resolved, = %v", got)
	}
	if got, ok := r.forwardRegion("a"); !ok || got != a {
		t.Fatalf("forwardRegion(a) after c = %v, %v", got, ok)
	}
	r.forgetRegion("a")
	if got, ok := r.forwardRegion("a"); ok {
		t.Fatalf("forwardRegion(a) after it terminated = %v", got)
	}
	if got, ok := r.forwardRegion("b"); !ok || got != b {
		t.Fatalf("forwardRegion(b) = %v, %v", got, ok)
	}
	r.forgetRegion("a") // not the last one: b stays
	if got, ok := r.forwardRegion("b"); !ok || got != b {
		t.Fatalf("forwardRegion(b) after another region terminated = %v, %v", got, ok)
	}
}
