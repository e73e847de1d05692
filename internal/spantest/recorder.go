package spantest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Recorder is a TracerProvider that keeps every ended span. Its waits fail the test
// (or subtest) they are given.
type Recorder struct {
	// Provider is the provider to configure systems with.
	Provider *sdktrace.TracerProvider

	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	changed chan struct{} // closed and replaced when a span ends
}

// NewRecorder returns a Recorder that samples every span, shut down when the test
// ends.
func NewRecorder(t testing.TB) *Recorder {
	r := &Recorder{changed: make(chan struct{})}
	r.Provider = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(r))
	t.Cleanup(func() { _ = r.Provider.Shutdown(context.Background()) })
	return r
}

// OnStart implements sdktrace.SpanProcessor.
func (r *Recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it keeps s.
func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Shutdown implements sdktrace.SpanProcessor.
func (r *Recorder) Shutdown(context.Context) error { return nil }

// ForceFlush implements sdktrace.SpanProcessor.
func (r *Recorder) ForceFlush(context.Context) error { return nil }

// Spans returns the spans ended so far, in the order they ended.
func (r *Recorder) Spans() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), r.spans...)
}

// WaitFor waits until a span named name has ended and returns the first one; t fails
// after timeout.
func (r *Recorder) WaitFor(t testing.TB, name string, timeout time.Duration) sdktrace.ReadOnlySpan {
	t.Helper()
	return r.WaitForIn(t, trace.TraceID{}, name, timeout)
}

// WaitForIn is WaitFor for a span of the trace id (of any trace for the zero id).
func (r *Recorder) WaitForIn(t testing.TB, id trace.TraceID, name string, timeout time.Duration) sdktrace.ReadOnlySpan {
	t.Helper()
	return r.Await(t, fmt.Sprintf("span %q", name), timeout, func(s sdktrace.ReadOnlySpan) bool {
		return s.Name() == name && (!id.IsValid() || s.SpanContext().TraceID() == id)
	})
}

// WaitForAt is WaitForIn for the span of the actor at path (its
// messaging.destination.name).
func (r *Recorder) WaitForAt(t testing.TB, id trace.TraceID, name, path string, timeout time.Duration) sdktrace.ReadOnlySpan {
	t.Helper()
	return r.Await(t, fmt.Sprintf("span %q at %s", name, path), timeout, func(s sdktrace.ReadOnlySpan) bool {
		return s.Name() == name && s.SpanContext().TraceID() == id && Attr(s, "messaging.destination.name") == path
	})
}

// Await waits until a span that match accepts has ended and returns the first one;
// the test fails after timeout, naming what it waited for.
func (r *Recorder) Await(t testing.TB, what string, timeout time.Duration, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if match(s) {
				r.mu.Unlock()
				return s
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no %s within %v; spans: %s", what, timeout, r.names())
			return nil
		}
	}
}

func (r *Recorder) names() string {
	var b strings.Builder
	for i, s := range r.Spans() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Name())
	}
	return b.String()
}

// ChildOf fails the test unless child's parent is parent's span.
func ChildOf(t testing.TB, child sdktrace.ReadOnlySpan, parent trace.SpanContext) {
	t.Helper()
	if got := child.Parent(); got.TraceID() != parent.TraceID() || got.SpanID() != parent.SpanID() {
		t.Fatalf("span %q has parent %s/%s, want %s/%s", child.Name(), got.TraceID(), got.SpanID(), parent.TraceID(), parent.SpanID())
	}
}

// Attr returns the value of a span's attribute as a string, "" when it has none.
func Attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return fmt.Sprint(a.Value.AsInterface())
		}
	}
	return ""
}

// OnNode fails t unless span s is of an actor of sys: the actor its
// messaging.destination.name names lives there.
func OnNode(t testing.TB, s sdktrace.ReadOnlySpan, sys *actor.System) {
	t.Helper()
	path := Attr(s, "messaging.destination.name")
	ref, err := sys.Resolve(path)
	if err != nil || !ref.IsLocal() {
		t.Errorf("span %q of %s: not an actor of %s (%v)", s.Name(), path, sys.Address(), err)
	}
}
