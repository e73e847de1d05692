package shardcore

import (
	"testing"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// Core cases of a leaving region and the coordinator's GracefulShutdownAck, found by
// the simulation's leaves with coordinator faults (sim_leave_test.go, seeds 20,000 to
// 39,999).

// A region that asks to leave before the coordinator registered it is told that it
// gets no shard here, and may stop on that. Its Register that comes after the request
// (it goes on registering while it leaves) registers it as leaving: it gets no shard,
// and a request again is answered at once. Found by the simulation (seeds 22834 and
// 30126: the coordinator registered the region on that Register and gave it a shard,
// and what another region forwarded to it was lost, since it had stopped).
func TestTheCoordinatorGivesNoShardToALeaverItAckedUnregistered(t *testing.T) {
	h := newCoordHarness(t, CoordSettings{}, nil, 2)
	h.step(InRegionMsg{From: reg(2), Msg: Register{}, Status: member.Up})
	h.step(InRegionMsg{From: reg(2), Msg: GetShardHome{Shard: "a"}, Status: member.Up})
	h.step(InRegionMsg{From: reg(1), Msg: Register{}, Status: member.Joining}) // not yet
	d := h.step(InRegionMsg{From: reg(1), Msg: GracefulShutdownReq{}, Status: member.Joining})
	if !sent(d, reg(1), GracefulShutdownAck{}) {
		t.Fatalf("no acknowledgement for an unknown region: %+v", d.Sends)
	}
	h.step(InRegionMsg{From: reg(1), Msg: Register{}, Status: member.Up})
	if _, ok := h.c.state.regions[reg(1)]; !ok {
		t.Fatal("the leaving region was not registered (it needs homes for what it holds)")
	}
	for _, s := range []placement.ShardID{"b", "c", "d"} {
		h.step(InRegionMsg{From: reg(2), Msg: GetShardHome{Shard: s}, Status: member.Up})
	}
	if got := h.c.state.regions[reg(1)]; len(got) != 0 {
		t.Fatalf("the region acknowledged as leaving before it registered got shards %v", got)
	}
	d = h.step(InRegionMsg{From: reg(1), Msg: GracefulShutdownReq{}, Status: member.Up})
	if !sent(d, reg(1), GracefulShutdownAck{}) {
		t.Fatalf("a leaving region that hosts nothing not acknowledged: %+v", d.Sends)
	}
}

// A region that registered once and then lost its coordinator (it crashed or moved)
// takes no late GracefulShutdownAck of that coordinator while it registers again: the
// coordinators' stored state knows the region, and the next coordinator may have
// registered it and given it a shard. Found by the simulation (seed 39399: the region
// stopped on a crashed coordinator's late acknowledgement, and what another region
// forwarded to it for the shard the next coordinator gave it was lost).
func TestALeavingRegionTakesNoAckOfACoordinatorItLost(t *testing.T) {
	r := registered(t, RegionSettings{})
	r.GracefulShutdown()
	r.CoordinatorLost()
	if d := r.FromCoordinator(GracefulShutdownAck{}); d.Stop {
		t.Fatal("stopped on an acknowledgement while not registered")
	}
	if d := r.Timer(TimerKey{Kind: TimerLeaveUnknown}); d.Stop {
		t.Fatal("stopped on the give-up timer, known to a coordinator")
	}
	d := r.FromCoordinator(RegisterAck{})
	wantAnys(t, "asks again once registered", toCoord(d), GracefulShutdownReq{})
	if d = r.FromCoordinator(GracefulShutdownAck{}); !d.Stop {
		t.Fatalf("not stopped on its coordinator's acknowledgement: %+v", d)
	}
}

// The acknowledgement names the coordinator incarnation that sent it, as its
// RegisterAck does: a registered region takes only that of the incarnation it
// registered with.
func TestAShutdownAckCountsOnlyFromTheIncarnationRegisteredWith(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32
	h := newCoordHarness(t, CoordSettings{HandOffEpoch: e2}, nil, 2)
	h.step(InRegionMsg{From: reg(1), Msg: Register{}, Status: member.Up})
	if d := h.from(reg(1), Register{}); !sent(d, reg(1), RegisterAck{Epoch: e2}) {
		t.Fatalf("RegisterAck without the incarnation's epoch: %+v", d.Sends)
	}
	if d := h.from(reg(1), GracefulShutdownReq{}); !sent(d, reg(1), GracefulShutdownAck{Epoch: e2}) {
		t.Fatalf("GracefulShutdownAck without the incarnation's epoch: %+v", d.Sends)
	}

	r := newTestRegion(t, RegionSettings{})
	r.FromCoordinator(RegisterAck{Epoch: e1})
	r.GracefulShutdown()
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e2}); d.Stop {
		t.Fatal("registered, it stopped on another incarnation's acknowledgement")
	}
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e1}); !d.Stop {
		t.Fatalf("not stopped on its coordinator's acknowledgement: %+v", d)
	}

	// Its coordinator lost, it takes the next one's word (which knows it from the
	// stored state), and not the late word of the one it lost.
	r = newTestRegion(t, RegionSettings{})
	r.FromCoordinator(RegisterAck{Epoch: e1})
	r.GracefulShutdown()
	r.CoordinatorLost()
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e1}); d.Stop {
		t.Fatal("stopped on the late acknowledgement of the coordinator it lost")
	}
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e2}); !d.Stop {
		t.Fatalf("not stopped on the next coordinator's acknowledgement: %+v", d)
	}
}

// A region not registered yet that dropped a RegisterAck as stale (its coordinator had
// stopped or moved) takes no GracefulShutdownAck of that coordinator incarnation
// either: the next coordinator knows the region from the stored state and may give it
// a shard. Another incarnation's word counts.
func TestALeavingRegionTakesNoAckOfTheIncarnationWhoseRegisterAckWasStale(t *testing.T) {
	const e1, e2 = 1 << 32, 2 << 32
	r := newTestRegion(t, RegionSettings{})
	r.StaleRegisterAck(e1)
	r.GracefulShutdown()
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e1}); d.Stop {
		t.Fatal("stopped on the word of the incarnation whose RegisterAck was stale")
	}
	if d := r.FromCoordinator(GracefulShutdownAck{Epoch: e2}); !d.Stop {
		t.Fatalf("not stopped on the next incarnation's word: %+v", d)
	}
}
