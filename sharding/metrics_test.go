package sharding

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMetricsCountShardsEntitiesBufferAndPassivations(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	probe := testkit.NewProbe(t, sys)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Rec", EntityConfig{Entity: recorderProps(probe.Ref(), gate)})
	if err != nil {
		t.Fatal(err)
	}
	send := func(id EntityID, msg any) { _ = region.Tell(Envelope{EntityID: id, Message: msg}) }
	for i, id := range []EntityID{"a", "b", "c"} { // the Props number incarnations across entities
		send(id, "hello")
		probe.ExpectMsg(started{Entity: id, Incarnation: int64(i + 1)})
		probe.ExpectMsg(note{Entity: id, Incarnation: int64(i + 1), Msg: "hello"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	rs, err := actor.Ask[ShardRegionStats](ctx, region, GetShardRegionStats{})
	if err != nil {
		t.Fatal(err)
	}
	shards := int64(len(rs.Shards))

	// a passivates and is held in its stop message: what comes meanwhile is buffered.
	send("a", passivateMe{})
	probe.ExpectMsg(inStop{Entity: "a"})
	for _, msg := range []string{"m1", "m2", "m3"} {
		send("a", msg)
	}
	typ := attribute.String("type", "Rec")
	get := func(ms map[string]metricdata.Metrics, name, unit string, attrs ...attribute.KeyValue) int64 {
		t.Helper()
		v, ok := metrictest.IntValue(m.Metric(ms, name, unit), append([]attribute.KeyValue{typ}, attrs...)...)
		if !ok {
			t.Fatalf("%s has no point for %v", name, attrs)
		}
		return v
	}
	// The region routes the three messages to the shard asynchronously: ask the
	// region something to know they have passed it, then the shard buffers them when
	// it handles them, before the answer to a stats query it gets after them.
	if _, err := actor.Ask[ShardRegionStats](ctx, region, GetShardRegionStats{}); err != nil {
		t.Fatal(err)
	}
	ms := m.Collect()
	for _, c := range []struct {
		name, unit string
		want       int64
	}{
		{"troupe.sharding.shards", "{shard}", shards},
		{"troupe.sharding.entities", "{entity}", 3},
		{"troupe.sharding.entities.started", "{entity}", 3},
		{"troupe.sharding.passivations", "{entity}", 1},
		{"troupe.sharding.buffered", "{message}", 3},
		{"troupe.sharding.shards.allocated", "{shard}", shards},
		{"troupe.sharding.handoffs.started", "{handoff}", 0},
	} {
		if got := get(ms, c.name, c.unit); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}

	release()
	probe.ExpectMsg(stoppedNote{Entity: "a", Incarnation: 1})
	probe.ExpectMsg(started{Entity: "a", Incarnation: 4})
	for _, msg := range []string{"m1", "m2", "m3"} {
		probe.ExpectMsg(note{Entity: "a", Incarnation: 4, Msg: msg})
	}
	// The entity may handle the messages before the shard, which sent them, has counted
	// its buffer empty: a stats query the shard answers after that handler orders the
	// two.
	if _, err := actor.Ask[ShardRegionStats](ctx, region, GetShardRegionStats{}); err != nil {
		t.Fatal(err)
	}
	ms = m.Collect()
	for _, c := range []struct {
		name, unit string
		want       int64
	}{
		{"troupe.sharding.entities", "{entity}", 3},
		{"troupe.sharding.entities.started", "{entity}", 4},
		{"troupe.sharding.buffered", "{message}", 0},
	} {
		if got := get(ms, c.name, c.unit); got != c.want {
			t.Errorf("after the passivation, %s: %d, want %d", c.name, got, c.want)
		}
	}
	for _, reason := range []string{"buffer_full", "unplaceable", "undelivered"} {
		if got := get(ms, "troupe.sharding.drops", "{message}", attribute.String("reason", reason)); got != 0 {
			t.Errorf("drops %s: %d, want 0", reason, got)
		}
	}
}

// A node that leaves hands its shards off; the coordinator, on the other node, counts
// and times the hand-offs.
func TestMetricsCountAndTimeHandOffs(t *testing.T) {
	readers := []*metrictest.Reader{metrictest.NewReader(t), metrictest.NewReader(t)}
	sc := startShardClusterWith(t, multinode.Options{Nodes: 2,
		ConfigureSystem: func(i int, c *actor.Config) { c.MeterProvider = readers[i].Provider }},
		func(int) EntityConfig { return persistentCounterConfig() })
	for j, id := range entityIDs(20) {
		sc.mustAsk(j%2, id, Increment{By: 1})
	}
	ages := sc.byAge()
	oldest, young := ages[0], ages[1]
	moving := len(sc.regionState(young).Shards)
	if moving == 0 {
		t.Fatal("no shard on the younger node")
	}
	typ := attribute.String("type", sc.typeName)
	if got, _ := metrictest.IntValue(readers[young].Metric(readers[young].Collect(), "troupe.sharding.shards", "{shard}"), typ); got != int64(moving) {
		t.Errorf("the younger node counts %d shards, its region has %d", got, moving)
	}
	m := readers[oldest]
	handOffs := func() (started, completed int64, timed uint64) {
		ms := m.Collect()
		started, _ = metrictest.IntValue(m.Metric(ms, "troupe.sharding.handoffs.started", "{handoff}"), typ)
		completed, _ = metrictest.IntValue(m.Metric(ms, "troupe.sharding.handoffs.completed", "{handoff}"), typ)
		if _, ok := ms["troupe.sharding.handoff.duration"]; ok { // left out while it has no point
			p, _ := metrictest.HistPoint[float64](m.Metric(ms, "troupe.sharding.handoff.duration", "s"), typ, attribute.String("outcome", "completed"))
			timed = p.Count
		}
		return started, completed, timed
	}
	started0, completed0, timed0 := handOffs() // a rebalance may have run already
	events := sc.events(oldest)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(30*time.Second))
	defer cancel()
	if err := sc.mc.Node(young).System.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range moving {
		events.FishForMessage(func(m any) bool { _, ok := m.(ShardHandOffCompleted); return ok }, testkit.Dilated(10*time.Second))
	}
	started, completed, timed := handOffs()
	if started-started0 != int64(moving) || completed-completed0 != int64(moving) {
		t.Errorf("hand-offs started %d, completed %d; want %d each", started-started0, completed-completed0, moving)
	}
	if timed-timed0 != uint64(moving) {
		t.Errorf("%d hand-offs timed, want %d", timed-timed0, moving)
	}
}
