// Package telemetry holds what Troupe's packages share to report their metrics on the
// OpenTelemetry metric API.
package telemetry

// SecondsBuckets are the bucket boundaries, in seconds, of Troupe's duration
// histograms: 10µs to 60s. OpenTelemetry's default boundaries suit milliseconds, not
// seconds. Callers must not modify the slice.
var SecondsBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}
