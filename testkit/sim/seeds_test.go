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

// TestBothEndsOfAFailedLinkGoWhenABystanderIsCutOff: two members' link fails one way
// (each reports the other unreachable) while a third reaches both; a partition then
// cuts the third off from them, one direction first. The bystander downed both ends
// and took their shards over after the removal margin, but each end had set the
// other's observations aside and downed only the other, and kept running until its
// own resolver decided after the partition: two live instances of entities for half a
// second. Each end now sees what the bystander sees, as the bystander bridges them,
// and downs itself at once.
func TestBothEndsOfAFailedLinkGoWhenABystanderIsCutOff(t *testing.T) {
	ms := time.Millisecond
	sim.Run(t, sim.Options{Seed: 1104, Schedule: []sim.Event{
		{At: 30400 * ms, Kind: sim.Delay, From: 0, To: 4, Delay: 1143 * ms},
		{At: 63700 * ms, Kind: sim.OneWay, From: 2, To: 1},
		{At: 97200 * ms, Kind: sim.OneWay, From: 4, To: 3},
		{At: 119 * time.Second, Kind: sim.Partition, Sides: [][]int{{4}, {1, 2, 3}, {0}}, Delay: 947 * ms},
		{At: 153700 * ms, Kind: sim.Partition, Sides: [][]int{{0, 4, 2}, {3}, {1}}, Delay: 6435 * ms},
		{At: 193400 * ms, Kind: sim.OneWay, From: 1, To: 0},
		{At: 236300 * ms, Kind: sim.Heal},
	}})
}
