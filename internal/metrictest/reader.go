package metrictest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Reader is a MeterProvider with a manual reader: give Provider to the systems under
// test (actor.Config.MeterProvider), then Collect what they recorded.
type Reader struct {
	t testing.TB
	r *sdkmetric.ManualReader
	// Provider is the MeterProvider to record into; it is shut down when the test ends.
	Provider *sdkmetric.MeterProvider
}

// NewReader returns a Reader whose provider is shut down when t ends.
func NewReader(t testing.TB) *Reader {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &Reader{t: t, r: r, Provider: mp}
}

// Collect returns the metrics recorded so far, by name.
func (m *Reader) Collect() map[string]metricdata.Metrics {
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

// Metric returns the named metric of a collection, failing the test when it is missing
// or its unit is not unit.
func (m *Reader) Metric(ms map[string]metricdata.Metrics, name, unit string) metricdata.Metrics {
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

// IntValue returns the value of the int64 sum or gauge point whose attributes are
// exactly attrs, and whether there is one.
func IntValue(mm metricdata.Metrics, attrs ...attribute.KeyValue) (int64, bool) {
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

// HistPoint returns the histogram point whose attributes are exactly attrs, and
// whether there is one.
func HistPoint[N int64 | float64](mm metricdata.Metrics, attrs ...attribute.KeyValue) (metricdata.HistogramDataPoint[N], bool) {
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
