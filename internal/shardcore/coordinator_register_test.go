package shardcore

import (
	"testing"

	"github.com/troupe-go/troupe/sharding/placement"
)

// A region's Register that comes after its end (it was on its way on another lane
// than the Terminated, or ahead of the region's RegionStopped) does not register it
// again: the coordinator gave it shards, and what other regions forwarded to it was
// lost. Found by the simulation's leaves once it fired the regions' registration
// timer (TestSimulationHandOffLosesNothing, seeds 5152, 7048 of 20,000).
func TestCoordinatorDoesNotRegisterARegionThatEnded(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 3)
	h.register(reg(1), reg(2), prox(3))
	h.step(InRegionTerminated{Region: reg(2)})
	h.from(reg(1), RegionStopped{})
	h.step(InRegionTerminated{Region: prox(3)})
	for _, r := range []placement.RegionID{reg(1), reg(2)} {
		h.expectNoSends(h.from(r, Register{}), "Register of a region that ended")
	}
	h.expectNoSends(h.from(prox(3), RegisterProxy{}), "Register of a proxy that ended")
	if len(h.c.state.regions) != 0 || len(h.c.state.proxies) != 0 {
		t.Fatalf("registered: regions %v, proxies %v", h.c.state.regions, h.c.state.proxies)
	}
	// The region started again on the same node (another incarnation, another ID)
	// registers.
	again := placement.RegionID(nodeAddr(1) + "/system/sharding/t#2")
	h.register(again)
	if _, ok := h.c.state.regions[again]; !ok {
		t.Fatal("the region started again was not registered")
	}
}
