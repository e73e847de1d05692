package sharding

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// meterReader is a MeterProvider with a manual reader, and the readings of its
// collections.
type meterReader struct {
	t  testing.TB
	r  *sdkmetric.ManualReader
	mp *sdkmetric.MeterProvider
}

func newMeterReader(t testing.TB) *meterReader {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &meterReader{t: t, r: r, mp: mp}
}

// collect returns the metrics by name.
func (m *meterReader) collect() map[string]metricdata.Metrics {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.r.Collect(context.Background(), &rm); err != nil {
		m.t.Fatalf("collect: %v", err)
	}
	out := make(map[string]metricdata.Metrics)
	for _, sm := range rm.ScopeMetrics {
		for _, mm := range sm.Metrics {
			out[mm.Name] = mm
		}
	}
	return out
}

// metric returns the named metric of a collection, checking its unit.
func (m *meterReader) metric(ms map[string]metricdata.Metrics, name, unit string) metricdata.Metrics {
	m.t.Helper()
	mm, ok := ms[name]
	if !ok {
		m.t.Fatalf("no metric %s", name)
	}
	if mm.Unit != unit {
		m.t.Fatalf("%s: unit %q, want %q", name, mm.Unit, unit)
	}
	return mm
}

// intValue returns the value of the int64 sum or gauge point whose attributes are
// exactly attrs, and whether there is one.
func intValue(mm metricdata.Metrics, attrs ...attribute.KeyValue) (int64, bool) {
	want := attribute.NewSet(attrs...)
	var pts []metricdata.DataPoint[int64]
	switch d := mm.Data.(type) {
	case metricdata.Sum[int64]:
		pts = d.DataPoints
	case metricdata.Gauge[int64]:
		pts = d.DataPoints
	}
	for _, p := range pts {
		if p.Attributes.Equals(&want) {
			return p.Value, true
		}
	}
	return 0, false
}

// histPoint returns the histogram point whose attributes are exactly attrs.
func histPoint[N int64 | float64](mm metricdata.Metrics, attrs ...attribute.KeyValue) (metricdata.HistogramDataPoint[N], bool) {
	want := attribute.NewSet(attrs...)
	if d, ok := mm.Data.(metricdata.Histogram[N]); ok {
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p, true
			}
		}
	}
	return metricdata.HistogramDataPoint[N]{}, false
}
