package tracewire_test

import (
	"fmt"

	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// A context is appended to a message's encoding and parsed back on the other side.
func Example() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	b := tracewire.Append(nil, &sc)
	got, err := tracewire.Parse(b)
	fmt.Println(len(b), got.TraceID() == sc.TraceID(), got.IsRemote(), err)
	// Output: 26 true true <nil>
}
