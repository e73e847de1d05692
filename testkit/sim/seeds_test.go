package sim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// The schedules below are bugs the simulation found, kept as tests with the schedule
// written out (a generated schedule changes whenever the generator does).

// TestNodeStartedWhileEverySeedIsDownJoinsLater: a three-way partition downs every
// node (no side has a majority); after the heal, a node that is not a seed restarts
// first, while every seed node is still down, and the seed nodes restart more than 30
// seconds later. The node must join the cluster they form: until seed-node joins
// retried for ever by default, it gave up after 30 s and stayed Joining for good, and
// the cluster never converged.
func TestNodeStartedWhileEverySeedIsDownJoinsLater(t *testing.T) {
	s := time.Second
	sim.Run(t, sim.Options{Seed: 4, Nodes: 5, Schedule: []sim.Event{
		{At: 50 * s, Kind: sim.Partition, Sides: [][]int{{4}, {2, 3}, {1, 0}}},
		{At: 90 * s, Kind: sim.Heal},
		{At: 100 * s, Kind: sim.Restart, Node: 3},
		{At: 150 * s, Kind: sim.Heal},
	}})
}

// TestJoinDuringUnreachabilityDownsOnlyTheIndirectlyConnected: a one-way cut makes two
// members indirectly connected, and a node that left restarts and joins while the
// resolver waits out stable-after. The resolver must down the two (and the joining node
// with its side, if it is there), never the whole cluster: the arrival of the joining
// member used to restart stable-after, past the down-all-when-unstable deadline, and
// every member was downed.
func TestJoinDuringUnreachabilityDownsOnlyTheIndirectlyConnected(t *testing.T) {
	s := time.Second
	rep := sim.Run(t, sim.Options{Seed: 3, Schedule: []sim.Event{
		{At: 50 * s, Kind: sim.Leave, Node: 1},
		{At: 79 * s, Kind: sim.OneWay, From: 3, To: 2},
		{At: 100 * s, Kind: sim.Restart, Node: 1},
		{At: 180 * s, Kind: sim.Heal},
	}})
	for _, l := range rep.Log {
		for _, healthy := range []string{"n0#1 terminated", "n4#1 terminated"} {
			if strings.Contains(l, healthy) && !strings.Contains(l, "graceful") {
				t.Errorf("a member on no faulty link was downed: %s\n%s", l, strings.Join(rep.Log, "\n"))
			}
		}
	}
}
