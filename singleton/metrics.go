package singleton

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the singleton package's metrics.
const MeterName = "github.com/troupe-go/troupe/singleton"

// singletonMetrics holds the histograms recorded as hand-overs and take-overs end,
// while the system has a MeterProvider; extension.metrics is nil otherwise. The
// gauges are read from the managers' statuses and the proxies' counts by a callback.
type singletonMetrics struct {
	handOver, takeOver metric.Float64Histogram
}

// startMetrics registers the instruments when the system has a MeterProvider. It runs
// once, when the package's per-system state is created.
func (e *extension) startMetrics() {
	mp := e.sys.MeterProvider()
	if mp == nil {
		return
	}
	mt := mp.Meter(MeterName)
	var errs []error
	running, err := mt.Int64ObservableUpDownCounter("troupe.singleton.running", metric.WithUnit("{singleton}"),
		metric.WithDescription("1 while the singleton runs on this member, 0 while its manager runs here and the singleton elsewhere, by singleton name."))
	errs = append(errs, err)
	buffered, err := mt.Int64ObservableUpDownCounter("troupe.singleton.proxy.buffered", metric.WithUnit("{message}"),
		metric.WithDescription("Messages this member's proxies hold while the singleton's location is unknown or it moves, by singleton name."))
	errs = append(errs, err)
	dropped, err := mt.Int64ObservableCounter("troupe.singleton.drops", metric.WithUnit("{message}"),
		metric.WithDescription("Messages for singletons this member's managers and proxies dropped (full buffers; each is also a dead letter)."))
	errs = append(errs, err)
	m := &singletonMetrics{}
	m.handOver, err = mt.Float64Histogram("troupe.singleton.handover.duration", metric.WithUnit("s"),
		metric.WithDescription("On a leaving member that ran the singleton: time from the start of the hand-over to the moment it may leave, by singleton name."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	m.takeOver, err = mt.Float64Histogram("troupe.singleton.takeover.duration", metric.WithUnit("s"),
		metric.WithDescription("On the member that becomes the oldest: time from learning it is the oldest to the singleton running (waiting for the previous oldest's hand-over or removal, and the lease), by singleton name."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	errs = append(errs, err)
	errs = append(errs, telemetry.Observe(e.sys.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		e.mu.Lock()
		managers := make([]*Manager, 0, len(e.managers))
		for _, m := range e.managers {
			managers = append(managers, m)
		}
		proxies := make(map[string]int64, len(e.buffered))
		for name, n := range e.buffered {
			proxies[name] = n.Load()
		}
		e.mu.Unlock()
		for _, m := range managers {
			st := m.Status()
			if st.Stopped {
				continue
			}
			v := int64(0)
			if st.Running {
				v = 1
			}
			o.ObserveInt64(running, v, metric.WithAttributes(attribute.String("singleton", m.name)))
		}
		for name, n := range proxies {
			o.ObserveInt64(buffered, n, metric.WithAttributes(attribute.String("singleton", name)))
		}
		o.ObserveInt64(dropped, int64(e.dropped.Load()))
		return nil
	}, running, buffered, dropped))
	telemetry.Report(e.sys.Logger(), "singleton", errs)
	e.metrics = m
}

// proxyBuffered returns the count of messages the proxies of the singleton name hold.
func (e *extension) proxyBuffered(name string) *atomic.Int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := e.buffered[name]
	if n == nil {
		n = new(atomic.Int64)
		e.buffered[name] = n
	}
	return n
}

// transitions times a manager's hand-overs and take-overs from its state changes.
type transitions struct {
	oldest       bool      // the last state was BecomingOldest or Oldest
	becameOldest time.Time // when this member learned it is the oldest; zero once the singleton runs
	leaving      time.Time // when the hand-over began; zero once finished
}

// changed records what a state change ends, with metrics on.
func (t *transitions) changed(m *singletonMetrics, name string, st State, running, finished bool, now time.Time) {
	if m == nil {
		return
	}
	at := metric.WithAttributes(attribute.String("singleton", name))
	oldest := st == StateBecomingOldest || st == StateOldest
	if oldest && !t.oldest {
		t.becameOldest = now
	}
	t.oldest = oldest
	if running && !t.becameOldest.IsZero() {
		m.takeOver.Record(context.Background(), now.Sub(t.becameOldest).Seconds(), at)
		t.becameOldest = time.Time{}
	}
	switch {
	case (st == StateWasOldest || st == StateHandingOver) && t.leaving.IsZero():
		t.leaving = now
	case finished && !t.leaving.IsZero():
		m.handOver.Record(context.Background(), now.Sub(t.leaving).Seconds(), at)
		t.leaving = time.Time{}
	}
}
