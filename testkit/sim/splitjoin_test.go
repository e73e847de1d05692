package sim_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit/sim"
)

// TestJoinsOnOneSideOfAPartition: two crashed nodes restart on the smaller side of a
// partition and join it there.
func TestJoinsOnOneSideOfAPartition(t *testing.T) {
	s := time.Second
	rep := sim.Run(t, sim.Options{Seed: 1, Schedule: []sim.Event{
		{At: 30 * s, Kind: sim.Crash, Node: 3},
		{At: 31 * s, Kind: sim.Crash, Node: 4},
		{At: 120 * s, Kind: sim.Partition, Sides: [][]int{{0, 1}, {2, 3, 4}}},
		{At: 125 * s, Kind: sim.Restart, Node: 3},
		{At: 126 * s, Kind: sim.Restart, Node: 4},
		{At: 240 * s, Kind: sim.Heal},
	}})
	t.Logf("%v virtual; log:\n%v", rep.Virtual, rep.Log)
}
