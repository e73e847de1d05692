// Package metrictest reads the metrics a test's systems record: a MeterProvider of the
// OpenTelemetry SDK with a manual reader, and lookups of a collection's points by name,
// unit and attributes. Only tests import it: the library itself depends on the metric
// API alone.
package metrictest
