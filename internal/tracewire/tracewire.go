package tracewire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"
)

// MinLen is the length of an encoding with an empty tracestate.
const MinLen = 16 + 8 + 1 + 1

// MaxTraceState bounds the tracestate value: W3C allows 32 members of at most 256
// characters each, and vendors keep it far shorter. Append leaves a longer one out.
const MaxTraceState = 1024

// ErrMalformed is wrapped by the errors of Parse.
var ErrMalformed = errors.New("malformed trace context")

// Len returns the length of sc's encoding.
func Len(sc *trace.SpanContext) int {
	n := len(sc.TraceState().String())
	if n > MaxTraceState {
		n = 0
	}
	return MinLen - 1 + binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(n)) + n
}

// Append appends sc's encoding to dst.
func Append(dst []byte, sc *trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = append(dst, tid[:]...)
	dst = append(dst, sid[:]...)
	dst = append(dst, byte(sc.TraceFlags()))
	ts := sc.TraceState().String()
	if len(ts) > MaxTraceState {
		ts = ""
	}
	dst = binary.AppendUvarint(dst, uint64(len(ts)))
	return append(dst, ts...)
}

// Split returns the length of the encoding at the start of b.
func Split(b []byte) (int, error) {
	if len(b) < MinLen {
		return 0, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	n, k := binary.Uvarint(b[MinLen-1:])
	if k <= 0 || n > MaxTraceState || n > uint64(len(b)-(MinLen-1+k)) {
		return 0, fmt.Errorf("%w: bad tracestate length", ErrMalformed)
	}
	return MinLen - 1 + k + int(n), nil
}

// Parse decodes the encoding that makes up b, as the context of a remote parent. Its
// ids must be valid; a tracestate that does not parse is dropped, as W3C trace
// context asks.
func Parse(b []byte) (trace.SpanContext, error) {
	n, err := Split(b)
	if err != nil {
		return trace.SpanContext{}, err
	}
	if n != len(b) {
		return trace.SpanContext{}, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-n)
	}
	var cfg trace.SpanContextConfig
	copy(cfg.TraceID[:], b[:16])
	copy(cfg.SpanID[:], b[16:24])
	cfg.TraceFlags = trace.TraceFlags(b[24])
	cfg.Remote = true
	_, k := binary.Uvarint(b[MinLen-1:])
	if ts := b[MinLen-1+k:]; len(ts) > 0 {
		if state, err := trace.ParseTraceState(string(ts)); err == nil {
			cfg.TraceState = state
		}
	}
	sc := trace.NewSpanContext(cfg)
	if !sc.IsValid() {
		return trace.SpanContext{}, fmt.Errorf("%w: a zero trace or span id", ErrMalformed)
	}
	return sc, nil
}

// Of returns the span context ctx carries, nil when it carries none. Only a span
// context found is copied to the heap: nil costs nothing.
func Of(ctx context.Context) *trace.SpanContext {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	p := new(trace.SpanContext)
	*p = sc
	return p
}

// Context returns a context carrying sc as a remote parent; context.Background()
// for nil.
func Context(sc *trace.SpanContext) context.Context {
	if sc == nil {
		return context.Background()
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), *sc)
}
