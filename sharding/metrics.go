package sharding

import (
	"context"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of sharding's metrics.
const MeterName = "github.com/troupe-go/troupe/sharding"

// shardingMetrics holds what is recorded as it happens (the hand-off durations) while
// the system has a MeterProvider; Sharding.metrics is nil otherwise. Everything else is
// read from each type's counters (typeStats) by one callback.
type shardingMetrics struct {
	handOff metric.Float64Histogram
}

// startMetrics registers sharding's instruments when the system has a MeterProvider.
func (s *Sharding) startMetrics() {
	mp := s.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		i, err := mt.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		i, err := mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return i
	}
	shards := upDown("troupe.sharding.shards", "{shard}", "Shards hosted on this node, by entity type.")
	entities := upDown("troupe.sharding.entities", "{entity}", "Entities running on this node, by entity type.")
	buffered := upDown("troupe.sharding.buffered", "{message}",
		"Messages this node's region and shards hold while a shard's home is unknown, it is handed off, or its entity starts, by entity type.")
	started := counter("troupe.sharding.entities.started", "{entity}", "Entity incarnations started on this node, by entity type.")
	passivations := counter("troupe.sharding.passivations", "{entity}",
		"Entities passivated on this node (on request, idle, or beyond the active limit; not at hand-off), by entity type.")
	drops := counter("troupe.sharding.drops", "{message}",
		"Messages sent to dead letters by this node's regions and shards, by entity type and reason: buffer_full, unplaceable, undelivered.")
	allocated := counter("troupe.sharding.shards.allocated", "{shard}",
		"Shard homes allocated by the coordinator while it runs on this node, by entity type.")
	hoStarted := counter("troupe.sharding.handoffs.started", "{handoff}",
		"Shard hand-offs (rebalance or region shutdown) started by the coordinator while it runs on this node, by entity type.")
	hoCompleted := counter("troupe.sharding.handoffs.completed", "{handoff}",
		"Shard hand-offs that completed, counted by the coordinator on this node, by entity type.")
	hoFailed := counter("troupe.sharding.handoffs.failed", "{handoff}",
		"Shard hand-offs that failed (the shard stayed at its home), counted by the coordinator on this node, by entity type.")
	m := &shardingMetrics{}
	var err error
	m.handOff, err = mt.Float64Histogram("troupe.sharding.handoff.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the shard hand-offs the coordinator on this node ran, by entity type and outcome (completed, failed)."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	errs = append(errs, telemetry.Observe(s.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		s.mu.Lock()
		entries := make([]*typeEntry, 0, len(s.types))
		for _, e := range s.types {
			entries = append(entries, e)
		}
		s.mu.Unlock()
		for _, e := range entries {
			st := e.stats
			typ := attribute.String("type", e.name)
			at := metric.WithAttributes(typ)
			o.ObserveInt64(shards, st.shards.Load(), at)
			o.ObserveInt64(entities, st.entities.Load(), at)
			o.ObserveInt64(buffered, st.buffered.Load(), at)
			o.ObserveInt64(started, int64(st.entitiesStarted.Load()), at)
			o.ObserveInt64(passivations, int64(st.passivations.Load()), at)
			o.ObserveInt64(drops, int64(st.bufferDropped.Load()), metric.WithAttributes(typ, attribute.String("reason", "buffer_full")))
			o.ObserveInt64(drops, int64(st.unplaceable.Load()), metric.WithAttributes(typ, attribute.String("reason", "unplaceable")))
			o.ObserveInt64(drops, int64(st.undelivered.Load()), metric.WithAttributes(typ, attribute.String("reason", "undelivered")))
			o.ObserveInt64(allocated, int64(st.allocated.Load()), at)
			o.ObserveInt64(hoStarted, int64(st.handOffsStarted.Load()), at)
			o.ObserveInt64(hoCompleted, int64(st.handOffsCompleted.Load()), at)
			o.ObserveInt64(hoFailed, int64(st.handOffsFailed.Load()), at)
		}
		return nil
	}, shards, entities, buffered, started, passivations, drops, allocated, hoStarted, hoCompleted, hoFailed))
	telemetry.Report(s.log, "sharding", errs)
	s.metrics = m
}

// handOffEnded records the duration of a hand-off the coordinator saw end.
func (s *Sharding) handOffEnded(typeName string, d time.Duration, completed bool) {
	if s.metrics == nil {
		return
	}
	outcome := "completed"
	if !completed {
		outcome = "failed"
	}
	s.metrics.handOff.Record(context.Background(), d.Seconds(),
		metric.WithAttributes(attribute.String("type", typeName), attribute.String("outcome", outcome)))
}

// published is what a region or shard actor last added to its type's gauges, so that
// it can add the difference after each step and take it all back when it stops.
type published struct {
	buffered     int64
	passivations uint64
}

// sync adds to stats the change of the actor's buffered messages and passivations.
func (p *published) sync(stats *typeStats, buffered int64, passivations uint64) {
	if d := buffered - p.buffered; d != 0 {
		stats.buffered.Add(d)
		p.buffered = buffered
	}
	if d := passivations - p.passivations; d != 0 {
		stats.passivations.Add(d)
		p.passivations = passivations
	}
}
