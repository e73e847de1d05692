package ddata

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.opentelemetry.io/otel/attribute"
)

func TestMetricsTimeReadsAndWritesByLevel(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	r, err := Start(t.Context(), sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	self := r.SelfUniqueAddress()
	inc := func(c *GCounter) (*GCounter, error) { c.Increment(self, 1); return c, nil }
	if err := Update(ctx, r, NewKey[*GCounter]("a"), WriteLocal(), nil, inc); err != nil {
		t.Fatal(err)
	}
	if err := Update(ctx, r, NewKey[*GCounter]("b"), WriteMajority(time.Second, 0), nil, inc); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, r, NewKey[*GCounter]("a"), ReadLocal()); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, r, NewKey[*GCounter]("missing"), ReadLocal()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a missing key: %v", err)
	}
	lvl := func(l string) attribute.KeyValue { return attribute.String("level", l) }
	ms := m.Collect()
	for _, c := range []struct {
		name, level string
		want        uint64
	}{
		{"troupe.ddata.write.duration", "local", 1},
		{"troupe.ddata.write.duration", "majority", 1},
		{"troupe.ddata.read.duration", "local", 2},
	} {
		if p, ok := metrictest.HistPoint[float64](m.Metric(ms, c.name, "s"), lvl(c.level)); !ok || p.Count != c.want {
			t.Errorf("%s %s: %d (%v), want %d", c.name, c.level, p.Count, ok, c.want)
		}
	}
	if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.ddata.reads.failed", "{read}"), lvl("local")); !ok || got != 1 {
		t.Errorf("failed local reads %d (%v), want 1", got, ok)
	}
	if _, ok := ms["troupe.ddata.writes.failed"]; ok {
		t.Error("failed writes counted")
	}
	if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.ddata.keys", "{key}")); !ok || got != 2 {
		t.Errorf("keys %d (%v), want 2", got, ok)
	}
	if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.ddata.errors", "{error}"), attribute.String("kind", "invalid_data")); !ok || got != 0 {
		t.Errorf("invalid data %d (%v), want 0", got, ok)
	}
}

func TestMetricsCountGossipBytes(t *testing.T) {
	readers := []*metrictest.Reader{metrictest.NewReader(t), metrictest.NewReader(t)}
	reg := serialization.NewRegistry()
	tc := &testCluster{t: t, reg: reg, cfg: func(int) Config { return fastConfig() }}
	tc.c = multinode.Start(t, multinode.Options{Nodes: 2, Registry: reg,
		ConfigureSystem: func(i int, c *actor.Config) { c.MeterProvider = readers[i].Provider }})
	for i := range 2 {
		tc.startReplicator(i)
	}
	for i := range 2 {
		tc.awaitPeers(i, 1)
	}
	key := NewKey[*GCounter]("shared")
	self := tc.r(0).SelfUniqueAddress()
	update(t, tc.r(0), key, WriteLocal(), func(c *GCounter) (*GCounter, error) { c.Increment(self, 5); return c, nil })
	awaitValue(tc, 1, key, 10*time.Second, "the counter at 5", counterIs(5))
	if got, _ := metrictest.IntValue(readers[0].Metric(readers[0].Collect(), "troupe.ddata.gossip.bytes", "By")); got <= 0 {
		t.Errorf("node 0 sent %d gossip bytes, want some", got)
	}
}
