// Package spantest records the spans a test's systems make: a TracerProvider of the
// OpenTelemetry SDK that keeps every span in memory, and lookups that a test
// synchronises on (WaitFor) and asserts parents with. Only tests import it: the
// library itself depends on the trace API alone.
package spantest
