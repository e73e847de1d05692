package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

type (
	incr struct{}
	decr struct{}
	get  struct{}
)

// counter is a plain (not persistent) counting entity.
type counter struct{ n int }

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case incr:
		c.n++
	case decr:
		c.n--
	case get:
		_ = ctx.Respond(c.n)
	}
}

func startLocal(t *testing.T, cfg EntityConfig) (*actor.System, actor.Ref) {
	t.Helper()
	sys := testkit.NewSystem(t)
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sys, region
}

func TestLocalCounter(t *testing.T) {
	sys, _ := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return &counter{} })})
	ref, err := EntityRefFor[any](sys, "Counter", "42")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []any{incr{}, incr{}, incr{}, decr{}} {
		if err := ref.Tell(m); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := Ask[int](ctx, ref, any(get{}))
	if err != nil || n != 2 {
		t.Fatalf("get: %d, %v; want 2", n, err)
	}
}

func TestLocalCurrentRegions(t *testing.T) {
	sys, region := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return &counter{} })})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// A reply from an entity means the region has registered with the coordinator.
	if _, err := actor.Ask[int](ctx, region, Envelope{EntityID: "1", Message: get{}}); err != nil {
		t.Fatal(err)
	}
	got, err := actor.Ask[CurrentRegions](ctx, region, GetCurrentRegions{})
	if err != nil || len(got.Regions) != 1 || got.Regions[0] != sys.Address() {
		t.Fatalf("current regions %v, %v; want only %v", got.Regions, err, sys.Address())
	}
}

// A message routed through a region to a running entity of a local shard costs the
// region no allocation: the delivery it routes stays on its stack. (A drop path that
// kept the delivery in an interface once moved it to the heap for every message.)
func TestRegionRoutesWithoutAllocating(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	_, region := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return &counter{} })})
	var inc, read any = Envelope{EntityID: "7", Message: incr{}}, Envelope{EntityID: "7", Message: get{}}
	ask := func() int {
		n, err := actor.Ask[int](t.Context(), region, read)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ask() // starts the entity and its shard
	const perRun = 100
	allocs := testing.AllocsPerRun(20, func() {
		for range perRun {
			_ = region.Tell(inc)
		}
		ask()
	})
	// The ask allocates a few; a hundred routed messages must not add one each.
	if allocs > perRun/4 {
		t.Fatalf("%.0f allocations per %d messages and an ask", allocs, perRun)
	}
}
