package sim_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// TestJoinsOnOneSideOfAPartition: two nodes that crashed restart on one side of a
// partition, during it, and join the cluster through the one member there. Members
// move themselves Up without a leader; until a joining member waited for every
// counted member to know it, they moved Up on that side only, which then counted three
// of five and kept running, as did the other side (two of three): two singletons, two
// instances of every entity, conflicting writes. Found by the simulation.
func TestJoinsOnOneSideOfAPartition(t *testing.T) {
	s := time.Second
	sim.Run(t, sim.Options{Seed: 1, Schedule: []sim.Event{
		{At: 30 * s, Kind: sim.Crash, Node: 3},
		{At: 31 * s, Kind: sim.Crash, Node: 4},
		{At: 120 * s, Kind: sim.Partition, Sides: [][]int{{0, 1}, {2, 3, 4}}},
		{At: 125 * s, Kind: sim.Restart, Node: 3},
		{At: 126 * s, Kind: sim.Restart, Node: 4},
		{At: 240 * s, Kind: sim.Heal},
	}})
}
