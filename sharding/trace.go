package sharding

import (
	"context"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// A message sent to an entity in a trace context (an ask, SendContext, or a send
// from an actor that handles a traced message) keeps it on its way: the region takes
// it from the message it handles (traceOf) into the delivery, a delivery to another
// node carries it (msgDelivery.Trace; a traced delivery travels alone, not in a
// batch), and the entity gets the message in it (deliverTo). While tracing is off
// there is none, and nothing is added.

// traceOf returns the trace context of the message ctx handles; nil while tracing is
// off and for a message without one.
func traceOf(ctx actor.Context) *trace.SpanContext {
	if ctx.System().TracerProvider() == nil {
		return nil
	}
	return tracewire.Of(ctx.TraceContext())
}

// deliverTo sends msg to an entity's ref with sender, in the trace context tc (nil for
// none).
func deliverTo(ref actor.Ref, msg any, sender actor.Ref, tc *trace.SpanContext) error {
	if tc == nil {
		return ref.Send(msg, sender)
	}
	return ref.SendContext(tracewire.Context(tc), msg, sender)
}

// hasSpan reports whether ctx carries a span: a send in it goes through the region,
// which keeps the context (the fast paths do not).
func hasSpan(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}
