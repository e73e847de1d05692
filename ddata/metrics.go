package ddata

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the replicator's metrics.
const MeterName = "github.com/troupe-go/troupe/ddata"

// levelNames are the values of the level attribute, by levelKind (the Plus levels are
// "majority_plus").
var levelNames = [...]string{levelLocal: "local", levelFrom: "from", levelMajority: "majority", levelAll: "all"}

// metricLevel returns the level attribute's value for l.
func metricLevel(l level) int {
	if l.Kind == levelMajority && l.Additional > 0 {
		return len(levelNames) // majority_plus
	}
	if int(l.Kind) < len(levelNames) {
		return int(l.Kind)
	}
	return int(levelLocal)
}

// ddataMetrics are the replicator's instruments recorded as requests finish, while the
// system has a MeterProvider; Replicator.metrics is nil otherwise.
type ddataMetrics struct {
	read, write             metric.Float64Histogram
	readFailed, writeFailed metric.Int64Counter
	levelOpts               [len(levelNames) + 1][]metric.RecordOption
	levelAdd                [len(levelNames) + 1][]metric.AddOption
}

// gauges are the replicator's figures the metrics read, kept only while metrics are on.
type gauges struct {
	keys        atomic.Int64  // keys held, deleted ones included
	gossipBytes atomic.Uint64 // bytes of values and deltas sent to other replicators
}

// startMetrics creates the instruments when the system has a MeterProvider.
func (r *Replicator) startMetrics() {
	mp := r.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	m := &ddataMetrics{}
	var err error
	m.read, err = mt.Float64Histogram("troupe.ddata.read.duration", metric.WithUnit("s"),
		metric.WithDescription("Time a Read took on this node, by consistency level (local, from, majority, majority_plus, all)."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	m.write, err = mt.Float64Histogram("troupe.ddata.write.duration", metric.WithUnit("s"),
		metric.WithDescription("Time an Update or Delete took on this node, by consistency level."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	m.readFailed, err = mt.Int64Counter("troupe.ddata.reads.failed", metric.WithUnit("{read}"),
		metric.WithDescription("Reads that returned an error (not found, timed out, ...), by consistency level."))
	errs = append(errs, err)
	m.writeFailed, err = mt.Int64Counter("troupe.ddata.writes.failed", metric.WithUnit("{write}"),
		metric.WithDescription("Updates and Deletes that returned an error (timed out, modify failed, ...), by consistency level."))
	errs = append(errs, err)
	names := append(levelNames[:], "majority_plus")
	for i, n := range names {
		set := attribute.NewSet(attribute.String("level", n))
		m.levelOpts[i] = []metric.RecordOption{metric.WithAttributeSet(set)}
		m.levelAdd[i] = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	keys, err := mt.Int64ObservableUpDownCounter("troupe.ddata.keys", metric.WithUnit("{key}"),
		metric.WithDescription("Keys the replicator holds, deleted ones (tombstones) included."))
	errs = append(errs, err)
	gossip, err := mt.Int64ObservableCounter("troupe.ddata.gossip.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of encoded values and deltas this replicator sent to others in gossip and delta propagation."))
	errs = append(errs, err)
	failures, err := mt.Int64ObservableCounter("troupe.ddata.errors", metric.WithUnit("{error}"),
		metric.WithDescription("What the replicator refused or could not do, by kind: invalid_data, ignored, send_failures, too_large, store_failures, load_failures, panics."))
	errs = append(errs, err)
	kind := func(k string) metric.ObserveOption { return metric.WithAttributes(attribute.String("kind", k)) }
	c := &r.stats
	kinds := []struct {
		opt metric.ObserveOption
		n   *atomic.Uint64
	}{
		{kind("invalid_data"), &c.invalidData}, {kind("ignored"), &c.ignored}, {kind("send_failures"), &c.sendFailures},
		{kind("too_large"), &c.tooLarge}, {kind("store_failures"), &c.storeFailures},
		{kind("load_failures"), &c.loadFailures}, {kind("panics"), &c.panics},
	}
	errs = append(errs, telemetry.Observe(r.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(keys, r.gauges.keys.Load())
		o.ObserveInt64(gossip, int64(r.gauges.gossipBytes.Load()))
		for _, k := range kinds {
			o.ObserveInt64(failures, int64(k.n.Load()), k.opt)
		}
		return nil
	}, keys, gossip, failures))
	telemetry.Report(r.sys.Logger(), "ddata", errs)
	r.metrics = m
}

// started returns the start time of a request, with metrics on.
func (r *Replicator) started() time.Time {
	if r.metrics == nil {
		return time.Time{}
	}
	return time.Now()
}

// readDone records a finished read.
func (r *Replicator) readDone(l level, start time.Time, err error) {
	m := r.metrics
	if m == nil || start.IsZero() {
		return
	}
	i := metricLevel(l)
	m.read.Record(context.Background(), time.Since(start).Seconds(), m.levelOpts[i]...)
	if err != nil {
		m.readFailed.Add(context.Background(), 1, m.levelAdd[i]...)
	}
}

// writeDone records a finished update or delete.
func (r *Replicator) writeDone(l level, start time.Time, err error) {
	m := r.metrics
	if m == nil || start.IsZero() {
		return
	}
	i := metricLevel(l)
	m.write.Record(context.Background(), time.Since(start).Seconds(), m.levelOpts[i]...)
	if err != nil {
		m.writeFailed.Add(context.Background(), 1, m.levelAdd[i]...)
	}
}
