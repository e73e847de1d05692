package pgjournal

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/persistence"
	"go.opentelemetry.io/otel/attribute"
)

func TestMetricsCountCommitsWritesEventsAndConflicts(t *testing.T) {
	m := metrictest.NewReader(t)
	s, _ := openFresh(t, func(c *setup) { c.MeterProvider = m.Provider })
	ctx := testContext(t)
	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw("a", 1, 2), aw("b", 1, 3)})
	if err != nil || len(results) != 2 || results[0] != nil || results[1] != nil {
		t.Fatalf("write: %v %v", results, err)
	}
	// A second writer of a's sequence numbers: a conflict.
	results, err = s.WriteMessages(ctx, []persistence.AtomicWrite{aw("a", 1, 1)})
	if err != nil || len(results) != 1 || !errors.Is(results[0], persistence.ErrSequenceConflict) {
		t.Fatalf("conflicting write: %v %v", results, err)
	}
	st := s.Stats()
	ms := m.Collect()
	for _, c := range []struct {
		name, unit string
		attrs      []attribute.KeyValue
		want       int64
	}{
		{"troupe.pgjournal.commits", "{commit}", []attribute.KeyValue{attribute.String("outcome", "committed")}, st.Commits},
		{"troupe.pgjournal.commits", "{commit}", []attribute.KeyValue{attribute.String("outcome", "failed")}, 0},
		{"troupe.pgjournal.writes", "{write}", nil, 2},
		{"troupe.pgjournal.events", "{event}", nil, 5},
		{"troupe.pgjournal.conflicts", "{write}", nil, 1},
		{"troupe.pgjournal.reruns", "{commit}", nil, st.Reruns},
	} {
		if got, ok := metrictest.IntValue(m.Metric(ms, c.name, c.unit), c.attrs...); !ok || got != c.want {
			t.Errorf("%s %v: %d (%v), want %d", c.name, c.attrs, got, ok, c.want)
		}
	}
	if st.Commits < 1 {
		t.Errorf("%d commits", st.Commits)
	}
}
