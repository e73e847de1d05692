package persistence

import (
	"context"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the persistence runtime's metrics.
const MeterName = "github.com/troupe-go/troupe/persistence"

// persistMetrics are the histograms recorded as writes and recoveries finish, while
// the system has a MeterProvider (Persistence.metrics is nil otherwise). The counters
// behind Stats are read by a callback.
type persistMetrics struct {
	persist  metric.Float64Histogram
	batch    metric.Int64Histogram
	recovery metric.Float64Histogram
}

// startMetrics creates the instruments when the system has a MeterProvider.
func (p *Persistence) startMetrics() {
	mp := p.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	m := &persistMetrics{}
	var err error
	m.persist, err = mt.Float64Histogram("troupe.persistence.persist.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an entity's write being handed to the journal batcher to the journal's answer, per write."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	m.batch, err = mt.Int64Histogram("troupe.persistence.batch.size", metric.WithUnit("{event}"),
		metric.WithDescription("Events per journal call: the writes of many entities merged into one call (group commit)."),
		metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000))
	errs = append(errs, err)
	m.recovery, err = mt.Float64Histogram("troupe.persistence.recovery.duration", metric.WithUnit("s"),
		metric.WithDescription("Time an entity took to recover (snapshot and events replayed), for the recoveries that succeeded."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	failures, err := mt.Int64ObservableCounter("troupe.persistence.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Journal and snapshot-store failures, by kind: events_rejected, writes_failed, sequence_conflicts, recoveries_failed, calls_timed_out, calls_rejected."))
	errs = append(errs, err)
	drops, err := mt.Int64ObservableCounter("troupe.persistence.drops", metric.WithUnit("{message}"),
		metric.WithDescription("Work that went to dead letters or never ran, by kind: commands_dropped (stash full), handlers_dropped, results_undelivered."))
	errs = append(errs, err)
	breaker, err := mt.Int64ObservableGauge("troupe.persistence.breaker.state", metric.WithUnit("1"),
		metric.WithDescription("State of a plug-in's circuit breaker, by plugin (journal, snapshot): 0 closed, 1 open, 2 half-open."))
	errs = append(errs, err)
	kind := func(k string) metric.ObserveOption { return metric.WithAttributes(attribute.String("kind", k)) }
	errKinds := []struct {
		opt metric.ObserveOption
		n   func() uint64
	}{
		{kind("events_rejected"), p.stats.eventsRejected.Load},
		{kind("writes_failed"), p.stats.writesFailed.Load},
		{kind("sequence_conflicts"), p.stats.sequenceConflicts.Load},
		{kind("recoveries_failed"), p.stats.recoveriesFailed.Load},
		{kind("calls_timed_out"), p.stats.callsTimedOut.Load},
		{kind("calls_rejected"), p.stats.callsRejected.Load},
	}
	dropKinds := []struct {
		opt metric.ObserveOption
		n   func() uint64
	}{
		{kind("commands_dropped"), p.stats.commandsDropped.Load},
		{kind("handlers_dropped"), p.stats.handlersDropped.Load},
		{kind("results_undelivered"), p.stats.resultsUndelivered.Load},
	}
	journal := metric.WithAttributes(attribute.String("plugin", "journal"))
	snapshot := metric.WithAttributes(attribute.String("plugin", "snapshot"))
	errs = append(errs, telemetry.Observe(p.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		for _, k := range errKinds {
			o.ObserveInt64(failures, int64(k.n()), k.opt)
		}
		for _, k := range dropKinds {
			o.ObserveInt64(drops, int64(k.n()), k.opt)
		}
		o.ObserveInt64(breaker, int64(p.calls.jb.state()), journal)
		o.ObserveInt64(breaker, int64(p.calls.sb.state()), snapshot)
		return nil
	}, failures, drops, breaker))
	telemetry.Report(p.sys.Logger(), "persistence", errs)
	p.metrics = m
}

// callDone records a journal call's batch size and the latency of each of its jobs.
func (m *persistMetrics) callDone(jobs []writeJob[*runner], writes []AtomicWrite) {
	ctx := context.Background()
	n := 0
	for _, w := range writes {
		n += len(w.Events)
	}
	m.batch.Record(ctx, int64(n))
	now := time.Now()
	for _, j := range jobs {
		m.persist.Record(ctx, now.Sub(j.at).Seconds())
	}
}
