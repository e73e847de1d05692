package tracewire_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

func spanContext(t *testing.T, state string) trace.SpanContext {
	t.Helper()
	cfg := trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled}
	if state != "" {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TraceState = ts
	}
	return trace.NewSpanContext(cfg)
}

// An encoding reads back as the same context, marked remote; Len is its length.
func TestRoundTrip(t *testing.T) {
	for _, state := range []string{"", "vendor=abc,other=x"} {
		sc := spanContext(t, state)
		b := tracewire.Append([]byte{9}, &sc)[1:]
		if len(b) != tracewire.Len(&sc) {
			t.Errorf("encoding of %d bytes, Len says %d", len(b), tracewire.Len(&sc))
		}
		got, err := tracewire.Parse(b)
		if err != nil || !got.Equal(sc.WithRemote(true)) {
			t.Errorf("read back as %v, %v; want %v", got, err, sc)
		}
		if n, err := tracewire.Split(append(b, 7, 7)); err != nil || n != len(b) {
			t.Errorf("Split: %d, %v", n, err)
		}
	}
}

// Bad encodings are errors, never panics; a tracestate that does not parse is
// dropped and the context kept.
func TestMalformed(t *testing.T) {
	sc := spanContext(t, "")
	good := tracewire.Append(nil, &sc)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short":          good[:tracewire.MinLen-1],
		"zero ids":       make([]byte, tracewire.MinLen),
		"state too long": append(append([]byte(nil), good[:tracewire.MinLen-1]...), 0xff, 0x7f),
		"state beyond":   append(append([]byte(nil), good[:tracewire.MinLen-1]...), 40, 'x'),
		"trailing":       append(append([]byte(nil), good...), 0),
	} {
		if _, err := tracewire.Parse(b); !errors.Is(err, tracewire.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	bad := append(append([]byte(nil), good[:tracewire.MinLen-1]...), 5)
	bad = append(bad, "a b=c"...)
	got, err := tracewire.Parse(bad)
	if err != nil || !got.IsValid() || got.TraceState().Len() != 0 {
		t.Errorf("a bad tracestate: %v, %v", got, err)
	}
	long := spanContext(t, "k="+strings.Repeat("v", 250)+",l="+strings.Repeat("w", 250)+",m="+strings.Repeat("x", 250)+",n="+strings.Repeat("y", 250)+",o="+strings.Repeat("z", 250))
	if got, err := tracewire.Parse(tracewire.Append(nil, &long)); err != nil || got.TraceState().Len() != 0 {
		t.Errorf("a tracestate beyond MaxTraceState: %v, %v", got.TraceState(), err)
	}
}

// Of and Context carry a span context in and out of a context.Context.
func TestContext(t *testing.T) {
	if tracewire.Of(context.Background()) != nil || tracewire.Context(nil) != context.Background() {
		t.Fatal("no span context: nil, and the background context")
	}
	sc := spanContext(t, "")
	got := tracewire.Of(tracewire.Context(&sc))
	if got == nil || !got.Equal(sc.WithRemote(true)) {
		t.Fatalf("read back %v, want %v", got, sc)
	}
}

// Of allocates nothing for a context without a span: callers take it for every
// message, and tracing must be free while it is off.
func TestOfAllocatesNothingWithoutASpan(t *testing.T) {
	ctx := context.Background()
	var got *trace.SpanContext
	if n := testing.AllocsPerRun(100, func() { got = tracewire.Of(ctx) }); n != 0 || got != nil {
		t.Fatalf("Of(context.Background()): %v, %v allocations", got, n)
	}
}
