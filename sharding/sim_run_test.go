package sharding

import (
	"flag"
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/actor"
)

// The simulation's tests (sim_test.go) and their runner.

func TestSimulationHandOffLosesNothing(t *testing.T) { runSimulation(t, false, false) }

// TestSimulationCoordinatorFaults is the same with the coordinator moving, crashing
// and stopping (sim_coord_test.go).
func TestSimulationCoordinatorFaults(t *testing.T) { runSimulation(t, true, false) }

// simSeeds is the number of seeds each simulation runs (CI runs 200, seeds 0 to 199):
//
//	nice -n 10 go test ./sharding -run 'TestSimulation' -sharding.simseeds=40000
var simSeeds = flag.Int("sharding.simseeds", 200, "seeds of each core simulation (TestSimulation*)")

func runSimulation(t *testing.T, coordFaults, fast bool) {
	seeds := *simSeeds
	if testing.Short() {
		seeds = min(seeds, 40)
	}
	var host *actor.TransportHost
	var fc simFastCounts
	if fast {
		host = simHost(t)
	}
	moves := 0
	var leaves simLeaves
	var cs simCoords
	var stoppedUnasked, reordered, ran int
	for seed := range seeds {
		// A run of its own per seed: -run 'TestSimulationHandOffLosesNothing/^59$' replays seed 59.
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ran++
			s := newSim(t, uint64(seed), host)
			s.coordFaults = coordFaults
			for range 600 {
				s.step()
			}
			s.drain()
			s.check()
			if s.fast != nil {
				s.fastCheck()
				fc.add(s.fast.counts)
			}
			moves += s.moves
			leaves.addCounts(s.leaves)
			cs.addCounts(s.cs)
			stoppedUnasked += s.stoppedUnasked
			reordered += s.reordered
		})
	}
	if t.Failed() || ran < seeds {
		return // a failure, or seeds chosen with -run: no totals to check
	}
	t.Logf("%d runs: %d hand-offs; %d regions began to leave, %d terminated (%d hand-overs from leaving regions, %d termination notices overtook the region's messages, %d protocol dead letters), %d joined",
		seeds, moves, leaves.started, leaves.terminated, leaves.handOvers, leaves.overtaken, leaves.deadLetters, leaves.joined)
	if moves < seeds {
		t.Fatalf("only %d hand-offs in %d runs: the simulation does not exercise them", moves, seeds)
	}
	t.Logf("coordinator: %d node crashes, %d stops, %d moves; pending stores %d lost, %d kept; %d messages reached no coordinator, %d not sent (zero Ref); %d stale RegisterAcks dropped; %d ShardStopped answered an earlier coordinator; %d streams reordered",
		cs.crashes, cs.restarts, cs.moves, cs.storesLost, cs.storesKept, cs.deadLetters, cs.unsent, cs.staleAcks, stoppedUnasked, reordered)
	if coordFaults && (cs.crashes < seeds/2 || cs.restarts < seeds/2 || cs.moves < seeds/2 || cs.storesLost == 0 || cs.storesKept == 0) {
		t.Fatalf("coordinator: %d node crashes, %d stops, %d moves, %d pending stores lost, %d kept in %d runs: the simulation does not exercise them",
			cs.crashes, cs.restarts, cs.moves, cs.storesLost, cs.storesKept, seeds)
	}
	if fast {
		t.Logf("fast path: %d direct deliveries by regions; %d EntityRef sends, %d through the region, %d in two steps (%d refused after the check, %d second halves run inside another send); %d stop messages queued behind a message",
			fc.regionDirect, fc.refSends, fc.refViaRegion, fc.split, fc.refused, fc.preempted, fc.stopBehind)
		if fc.regionDirect < seeds || fc.refSends-fc.refViaRegion < seeds || fc.refViaRegion < seeds || fc.refused == 0 || fc.preempted < seeds || fc.stopBehind < seeds {
			t.Fatalf("fast path: %+v in %d runs: the simulation does not exercise it", fc, seeds)
		}
	}
	if leaves.terminated < seeds/2 || leaves.handOvers < seeds/10 || leaves.overtaken == 0 {
		t.Fatalf("%d regions left in %d runs, sending %d hand-overs, %d termination notices overtook messages: the simulation does not exercise leaves",
			leaves.terminated, seeds, leaves.handOvers, leaves.overtaken)
	}
}
