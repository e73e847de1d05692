package persistence_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
	"go.opentelemetry.io/otel/attribute"
)

func TestMetricsRecordPersistRecoveryAndErrors(t *testing.T) {
	m := metrictest.NewReader(t)
	sys := testkit.NewSystem(t, actor.Config{MeterProvider: m.Provider})
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("metered", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	for i := 1; i <= 3; i++ {
		probe.Send(ref, increment{by: 1})
		probe.ExpectMsg(i)
	}
	_ = ref.Tell(decrement{by: 1}) // PersistAll: two events in one write
	probe.Send(ref, get{})
	probe.ExpectMsg(1)
	probe.Send(ref, unserialisable{})
	if err := testkit.ExpectMsgType[error](probe); !errors.Is(err, persistence.ErrRejected) {
		t.Fatalf("Persist of an unregistered type: %v", err)
	}

	ms := m.Collect()
	rec, ok := metrictest.HistPoint[float64](m.Metric(ms, "troupe.persistence.recovery.duration", "s"))
	if !ok || rec.Count != 1 {
		t.Errorf("recoveries recorded: %d (%v), want 1", rec.Count, ok)
	}
	lat, ok := metrictest.HistPoint[float64](m.Metric(ms, "troupe.persistence.persist.duration", "s"))
	if !ok || lat.Count != 4 {
		t.Errorf("writes timed: %d (%v), want 4", lat.Count, ok)
	}
	batch, ok := metrictest.HistPoint[int64](m.Metric(ms, "troupe.persistence.batch.size", "{event}"))
	if !ok || batch.Count != 4 || batch.Sum != 5 {
		t.Errorf("journal calls: %d with %d events (%v), want 4 with 5", batch.Count, batch.Sum, ok)
	}
	kind := func(k string) attribute.KeyValue { return attribute.String("kind", k) }
	errs := m.Metric(ms, "troupe.persistence.errors", "{error}")
	if got, _ := metrictest.IntValue(errs, kind("events_rejected")); got != 1 {
		t.Errorf("events rejected %d, want 1", got)
	}
	for _, p := range []string{"journal", "snapshot"} {
		if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.persistence.breaker.state", "1"), attribute.String("plugin", p)); !ok || got != 0 {
			t.Errorf("%s breaker %d (%v), want 0 (closed)", p, got, ok)
		}
	}
	if got, ok := metrictest.IntValue(m.Metric(ms, "troupe.persistence.drops", "{message}"), kind("commands_dropped")); !ok || got != 0 {
		t.Errorf("commands dropped %d (%v), want 0", got, ok)
	}

	// A failed write stops the entity and counts.
	probe.Watch(ref)
	store.InjectWriteFailure(errors.New("disk on fire"))
	_ = ref.Tell(increment{by: 1})
	probe.ExpectTerminated(ref)
	if got, _ := metrictest.IntValue(m.Metric(m.Collect(), "troupe.persistence.errors", "{error}"), kind("writes_failed")); got != 1 {
		t.Errorf("writes failed %d, want 1", got)
	}
}
