package sharding

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
)

// The region a region forwards to last is remembered only while it is among the
// regions resolved: once it terminates, its Ref is not used again.
func TestForwardRegionForgets(t *testing.T) {
	sys := testkit.NewSystem(t)
	a, b := testkit.NewProbe(t, sys).Ref(), testkit.NewProbe(t, sys).Ref()
	r := &regionActor{regions: map[RegionID]actor.Ref{"a": a, "b": b}}
	for range 2 {
		if got, ok := r.forwardRegion("a"); !ok || got != a {
			t.Fatalf("forwardRegion(a) = %v, %v", got, ok)
		}
	}
	if got, ok := r.forwardRegion("c"); ok {
		t.Fatalf("forwardRegion(c), not resolved, = %v", got)
	}
	if got, ok := r.forwardRegion("a"); !ok || got != a {
		t.Fatalf("forwardRegion(a) after c = %v, %v", got, ok)
	}
	r.forgetRegion("a")
	if got, ok := r.forwardRegion("a"); ok {
		t.Fatalf("forwardRegion(a) after it terminated = %v", got)
	}
	if got, ok := r.forwardRegion("b"); !ok || got != b {
		t.Fatalf("forwardRegion(b) = %v, %v", got, ok)
	}
	r.forgetRegion("a") // not the last one: b stays
	if got, ok := r.forwardRegion("b"); !ok || got != b {
		t.Fatalf("forwardRegion(b) after another region terminated = %v, %v", got, ok)
	}
}

// An unregistered region takes no RegisterAck of a coordinator it has seen terminate,
// nor from a node that is no longer among those it registers with: answers to a
// Register sent before the coordinator stopped or moved. Registered, it takes
// coordinator messages from its coordinator only. Found by the core simulation
// (TestSimulationCoordinatorFaults, seeds 610 and 874 of 5,000): a region registered
// with a coordinator that had stopped, and relayed other regions' acknowledgements to
// it, where they were lost.
func TestRegionTakesNoStaleRegisterAck(t *testing.T) {
	sys := testkit.NewSystem(t)
	c1, c2 := testkit.NewProbe(t, sys).Ref(), testkit.NewProbe(t, sys).Ref()
	here := sys.Address().String()
	view := newMemberView()
	view.put(cluster.Member{Unique: cluster.UniqueAddress{Addr: here, UID: 1}, Status: cluster.Up, UpNumber: 1})
	core := shardcore.NewRegionCore[*delivery](reg(1), shardcore.RegionSettings{})
	core.Start()
	r := &regionActor{core: core, view: view, cfg: &EntityConfig{}, log: zap.NewNop()}

	if r.fromAnother(shardcore.RegisterAck{}, c1) {
		t.Fatal("dropped the RegisterAck of a coordinator where the region registers")
	}
	r.coordinatorGone(c1)
	if !r.fromAnother(shardcore.RegisterAck{}, c1) {
		t.Fatal("took the RegisterAck of a coordinator that terminated")
	}
	if r.fromAnother(shardcore.ShardHome{Shard: "s1", Region: reg(2)}, c1) {
		t.Fatal("dropped another message while not registered")
	}
	view.put(cluster.Member{Unique: cluster.UniqueAddress{Addr: here, UID: 1}, Status: cluster.Removed, UpNumber: 1})
	if !r.fromAnother(shardcore.RegisterAck{}, c2) {
		t.Fatal("took a RegisterAck from a node where the region no longer registers")
	}

	r.coordinator = c2
	core.FromCoordinator(shardcore.RegisterAck{})
	if r.fromAnother(shardcore.ShardHome{Shard: "s1", Region: reg(2)}, c2) || !r.fromAnother(shardcore.ShardHome{Shard: "s1", Region: reg(2)}, c1) {
		t.Fatal("registered, it takes coordinator messages from another than its coordinator, or not from it")
	}
}
