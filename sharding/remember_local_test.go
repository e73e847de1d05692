package sharding

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// startRememberingLocal starts sharding on a system without a cluster with one
// remembering entity type of one shard; each start of an entity sends "node/id" to
// started.
func startRememberingLocal(t *testing.T, node string, started chan<- string) (*actor.System, actor.Ref) {
	t.Helper()
	sys := testkit.NewSystem(t)
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", EntityConfig{
		EntityFactory: func(id EntityID) *actor.Props {
			return actor.PropsOf(func() actor.Actor {
				started <- node + "/" + string(id)
				return &counter{}
			})
		},
		NumberOfShards:   1,
		RememberEntities: true,
		Timings:          Timings{RetryInterval: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sys, region
}

// awaitStart waits for want on started.
func awaitStart(t *testing.T, started <-chan string, want string) {
	t.Helper()
	timeout := time.After(testkit.Dilated(10 * time.Second))
	for {
		select {
		case got := <-started:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s did not start", want)
		}
	}
}

// On a system without a cluster remembered entities are kept in memory for the
// system: an entity starts again without a message when its region fails and
// restarts, and two systems (here with the same name, so the same address) do not
// see each other's.
func TestRememberEntitiesWithoutCluster(t *testing.T) {
	started := make(chan string, 64)
	_, regionA := startRememberingLocal(t, "A", started)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if _, err := actor.Ask[int](ctx, regionA, Envelope{EntityID: "a", Message: get{}}); err != nil {
		t.Fatal(err)
	}
	awaitStart(t, started, "A/a")

	// The region fails and restarts: "a" starts again without a message.
	if err := regionA.Tell(actor.Kill{}); err != nil {
		t.Fatal(err)
	}
	awaitStart(t, started, "A/a")

	// Another system with the same address remembers only its own entities.
	_, regionB := startRememberingLocal(t, "B", started)
	if _, err := actor.Ask[int](ctx, regionB, Envelope{EntityID: "b", Message: get{}}); err != nil {
		t.Fatal(err)
	}
	state, err := actor.Ask[ShardRegionState](ctx, regionB, GetShardRegionState{})
	if err != nil {
		t.Fatal(err)
	}
	var running []EntityID
	for _, s := range state.Shards {
		running = append(running, s.Entities...)
	}
	if !slices.Equal(running, []EntityID{"b"}) {
		t.Errorf("the second system runs %v, want only its own entity b", running)
	}
}
