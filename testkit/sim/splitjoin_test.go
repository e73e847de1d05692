package sim_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// TestJoinsOnOneSideOfAPartition: two nodes that crashed restart on one side of a
// partition, during it, and join the cluster there, which makes that side the larger
// of the two in its own view. Members move themselves Up without a leader, so each
// side counts differently; the checkers fail the run if both sides keep running (two
// singletons, two instances of an entity, conflicting writes).
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
