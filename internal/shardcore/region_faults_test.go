package shardcore

import (
	"testing"
	"time"
)

// Region core cases found by the simulation with coordinator faults
// (sim_coord_test.go).

// The same BeginHandOff again, after the old home's hand-over has reached this region
// (the coordinator asks again when the region registers, and its message travels on
// another connection than the hand-over), keeps that hand-over as ended: the HostShard
// that follows does not wait for it again. Found by the simulation (seeds 599, 707:
// the region waited for the hand-off timeout, 60 s, before it delivered).
func TestRegionKeepsAHandOverThroughTheSameBeginHandOffAgain(t *testing.T) {
	r := registered(t, RegionSettings{})
	r.FromCoordinator(BeginHandOff{Shard: "s1", ID: 7})
	r.Deliver("s1", "fwd")
	r.HandOverIn(reg(2), "s1", []string{"old"}, true)
	r.FromCoordinator(BeginHandOff{Shard: "s1", ID: 7})
	r.FromCoordinator(HostShard{Shard: "s1", Predecessor: reg(2)})
	if p := r.waiting["s1"]; p != "" {
		t.Fatalf("waits for %q, whose hand-over has come", p)
	}
	wantStrings(t, "delivered", delivered(r.ShardReady("s1")), "old", "fwd")

	// A new hand-off (another ID) waits for its predecessor's hand-over again.
	r.FromCoordinator(BeginHandOff{Shard: "s1", ID: 8})
	r.FromCoordinator(HandOff{Shard: "s1"})
	r.ShardTerminated("s1", nil)
	r.FromCoordinator(HostShard{Shard: "s1", Predecessor: reg(2)})
	if p := r.waiting["s1"]; p != reg(2) {
		t.Fatalf("waits for %q after a new hand-off, want %q", p, reg(2))
	}
}

// A relayed BeginHandOffAck is passed on again when the region registers: the
// Coordinator it went to may have stopped (here the region took a stopped
// Coordinator's late RegisterAck), and the next coordinator, with which the
// acknowledging region registered already, does not ask that region again. Found by
// the simulation (seeds 610, 874: the hand-off timed out).
func TestRegionPassesARelayedAckAgainWhenItRegisters(t *testing.T) {
	r := registered(t, RegionSettings{})
	ack := BeginHandOffAck{Shard: "s1", Region: reg(2), ID: 7}
	wantAnys(t, "relayed", toCoord(r.RelayAck(ack)), ack)
	r.CoordinatorLost()
	wantAnys(t, "relayed again on registering", toCoord(r.FromCoordinator(RegisterAck{})), ack)

	// Kept for the hand-off timeout (in retry ticks), then forgotten.
	r = registered(t, RegionSettings{RetryInterval: time.Second, HandOffTimeout: 3 * time.Second})
	r.RelayAck(ack)
	for range 4 {
		r.Timer(TimerKey{Kind: TimerRetry})
	}
	wantAnys(t, "a second RegisterAck of the same coordinator", toCoord(r.FromCoordinator(RegisterAck{})))
	r.CoordinatorLost()
	wantAnys(t, "kept", toCoord(r.FromCoordinator(RegisterAck{})), ack)
	r.Timer(TimerKey{Kind: TimerRetry})
	r.CoordinatorLost()
	wantAnys(t, "after the hand-off timeout", toCoord(r.FromCoordinator(RegisterAck{})))

	// Without an ID, an ack is passed on once (it could count for a later hand-off),
	// and one whose region has terminated not at all.
	r = newTestRegion(t, RegionSettings{})
	r.RelayAck(BeginHandOffAck{Shard: "s1", Region: reg(2)})
	r.RelayAck(BeginHandOffAck{Shard: "s2", Region: reg(3), ID: 9})
	r.RegionTerminated(reg(3))
	wantAnys(t, "on registering", toCoord(r.FromCoordinator(RegisterAck{})), BeginHandOffAck{Shard: "s1", Region: reg(2)})
	r.CoordinatorLost()
	wantAnys(t, "on registering again", toCoord(r.FromCoordinator(RegisterAck{})))
}

// Another coordinator's BeginHandOff for a shard whose home this region has not
// learned again since it answered the first through the old home is answered through
// that home too: what the region forwarded there may still be on its way, and a
// straight answer could overtake it (the coordinator would send HandOff, and the old
// home leave, before it arrived). Found by the simulation (seed 11318 of 20,000: a
// lost message).
func TestRegionAnswersAnotherCoordinatorsBeginHandOffThroughTheOldHome(t *testing.T) {
	r := registered(t, RegionSettings{})
	r.FromCoordinator(ShardHome{Shard: "s1", Region: reg(2)})
	wantStrings(t, "forwarded", forwarded(r.Deliver("s1", "a"), reg(2)), "a")
	first := r.FromCoordinator(BeginHandOff{Shard: "s1", ID: 1 << 32})
	r.CoordinatorLost()
	r.FromCoordinator(RegisterAck{})
	next := r.FromCoordinator(BeginHandOff{Shard: "s1", ID: 2<<32 + 1})
	for i, d := range []RegionDecisions[string]{first, next} {
		if a := actionsOf(d, ActToRegion); len(a) != 1 || a[0].To != reg(2) || len(toCoord(d)) != 0 {
			t.Fatalf("BeginHandOff %d: %+v, want the ack through the old home", i+1, d.Actions)
		}
	}
	// When the old home terminates, the ack that went through it may be lost with it
	// (simulation seed 9419 of 20,000: the hand-off timed out): the region answers
	// the coordinator itself.
	wantAnys(t, "old home gone", toCoord(r.RegionTerminated(reg(2))), BeginHandOffAck{Shard: "s1", Region: reg(1), ID: 2<<32 + 1})
}

// A leaving region that has not registered, but got a RegisterAck the shell dropped as
// stale (its coordinator had moved or stopped), waits for a coordinator's word that
// it hosts nothing: the stored state knows it, and the next coordinator may give it
// shards. Found by the simulation (seed 18700 of 20,000: the region gave up after
// twice the retry interval and stopped, and a message forwarded to it for a shard the
// next coordinator gave it was lost).
func TestALeavingRegionWithAStaleRegisterAckWaitsForTheCoordinator(t *testing.T) {
	r := newTestRegion(t, RegionSettings{})
	r.StaleRegisterAck(0)
	r.GracefulShutdown()
	if d := r.Timer(TimerKey{Kind: TimerLeaveUnknown}); d.Stop {
		t.Fatal("stopped without the coordinator's word")
	}
	if r.registered {
		t.Fatal("registered on a stale RegisterAck")
	}
	r.FromCoordinator(RegisterAck{})
	if d := r.FromCoordinator(GracefulShutdownAck{}); !d.Stop {
		t.Fatalf("not stopped once acknowledged: %+v", d)
	}
}

// A region that waits for a predecessor's hand-over watches the predecessor, so that
// the wait ends when it terminates (a crashed one sends nothing) instead of after the
// hand-off timeout.
func TestRegionWatchesThePredecessorItWaitsFor(t *testing.T) {
	r := registered(t, RegionSettings{})
	d := r.FromCoordinator(HostShard{Shard: "s1", Predecessor: reg(2)})
	if a := actionsOf(d, ActWatch); len(a) != 1 || a[0].To != reg(2) {
		t.Fatalf("no watch of the predecessor: %+v", d.Actions)
	}
	r.ShardReady("s1")
	r.Deliver("s1", "a")
	wantStrings(t, "predecessor gone", delivered(r.RegionTerminated(reg(2))), "a")
}
