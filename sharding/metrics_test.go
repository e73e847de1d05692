package sharding

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMetricsCountShardsEntitiesBufferAndPassivations(t *testing.T) {
	m := newMeterReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.mp})
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
		v, ok := intValue(m.metric(ms, name, unit), append([]attribute.KeyValue{typ}, attrs...)...)
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
	ms := m.collect()
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
	ms = m.collect()
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
