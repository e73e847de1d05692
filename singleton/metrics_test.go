package singleton_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.opentelemetry.io/otel/attribute"
)

func TestMetricsShowWhereTheSingletonRunsAndTimeItsHandOver(t *testing.T) {
	readers := []*metrictest.Reader{metrictest.NewReader(t), metrictest.NewReader(t), metrictest.NewReader(t)}
	h := newHarness(t, harnessOptions{
		opts: multinode.Options{ConfigureSystem: func(i int, c *actor.Config) { c.MeterProvider = readers[i].Provider }},
		mod:  func(_ int, cfg *singleton.Config) { cfg.TerminationMessage = Terminate{} },
	})
	h.awaitRunning(0, 5*time.Second)
	name := attribute.String("singleton", "counter")
	for i, m := range readers {
		ms := m.Collect()
		want := int64(0)
		if i == 0 {
			want = 1
		}
		if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.singleton.running", "{singleton}"), name); !ok || got != want {
			t.Errorf("node %d: running %d (%v), want %d", i, got, ok, want)
		}
		if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.singleton.proxy.buffered", "{message}"), name); !ok || got != 0 {
			t.Errorf("node %d: proxy buffered %d (%v), want 0", i, got, ok)
		}
		if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.singleton.drops", "{message}")); !ok || got != 0 {
			t.Errorf("node %d: drops %d (%v), want 0", i, got, ok)
		}
	}
	if p, ok := metrictest.HistPoint[float64](readers[0].Metric(readers[0].Collect(), "troupe.singleton.takeover.duration", "s"), name); !ok || p.Count != 1 {
		t.Errorf("node 0: %d take-overs timed (%v), want 1", p.Count, ok)
	}

	next := h.byAge(0)[1]
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	if p, ok := metrictest.HistPoint[float64](readers[0].Metric(readers[0].Collect(), "troupe.singleton.handover.duration", "s"), name); !ok || p.Count != 1 {
		t.Errorf("node 0: %d hand-overs timed (%v), want 1", p.Count, ok)
	}
	ms := readers[next].Collect()
	if got, _ := metrictest.IntValue(readers[next].Metric(ms, "troupe.singleton.running", "{singleton}"), name); got != 1 {
		t.Errorf("node %d: running %d after the hand-over, want 1", next, got)
	}
	if p, ok := metrictest.HistPoint[float64](readers[next].Metric(ms, "troupe.singleton.takeover.duration", "s"), name); !ok || p.Count != 1 {
		t.Errorf("node %d: %d take-overs timed (%v), want 1", next, p.Count, ok)
	}
}
