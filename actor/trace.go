package actor

import (
	"context"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the runtime's spans.
const TracerName = "github.com/troupe-go/troupe/actor"

// TracerProvider returns Config.TracerProvider: nil when tracing is off.
func (s *System) TracerProvider() trace.TracerProvider { return s.cfg.TracerProvider }

// traced is a user message queued with the trace context it was sent in. It exists
// only while tracing is on: the runtime takes the message out before anything sees
// it (Receive, a priority function, dead letters), and the context becomes the
// current one while the message is handled.
type traced struct {
	msg any
	sc  trace.SpanContext
}

// isUntraced reports whether msg is a layer's own message (UntracedMessage).
func isUntraced(msg any) bool {
	_, ok := msg.(UntracedMessage)
	return ok
}

// untraced returns the message inside a traced one, or msg.
func untraced(msg any) any {
	if t, ok := msg.(*traced); ok {
		return t.msg
	}
	return msg
}

// current is what an actor knows of the trace of the message it handles: the span
// context its sends carry, and its own span when its kind opts in (Props.Trace).
type current struct {
	sc   trace.SpanContext
	span trace.Span // nil when the actor only passes the context on
}

// SendContext is Send with the trace context of ctx: when the system has a
// TracerProvider and ctx carries a span, the message carries its context, and the
// span the recipient makes for it (Props.Trace) is that span's child, on this node or
// another. Without either it is Send.
func (r Ref) SendContext(ctx context.Context, msg any, sender Ref) error {
	if r.p == nil {
		return ErrNoRecipient
	}
	if msg == nil {
		return ErrNilMessage
	}
	if r.p.system().tracer != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			return r.sendTraced(msg, sender, sc)
		}
	}
	return r.p.sendUser(msg, sender)
}

// TellContext is SendContext with no sender.
func (r Ref) TellContext(ctx context.Context, msg any) error {
	return r.SendContext(ctx, msg, Ref{})
}

// sendTraced sends msg with the trace context sc to an actor of this system, or
// through the transport to one elsewhere; to anything else (a future, dead letters)
// without it.
func (r Ref) sendTraced(msg any, sender Ref, sc trace.SpanContext) error {
	switch p := r.p.(type) {
	case *cell:
		return p.sendUser(&traced{msg: msg, sc: sc}, sender)
	case foreign:
		return p.p.SendTraced(msg, sender, sc)
	default:
		return r.p.sendUser(msg, sender)
	}
}

// SendTraced delivers msg from another system to the local actor to, with the trace
// context it was sent in (invalid for none).
func (h *TransportHost) SendTraced(to Ref, msg any, sender Ref, sc trace.SpanContext) error {
	if to.p == nil {
		return ErrNoRecipient
	}
	if msg == nil {
		return ErrNilMessage
	}
	if !sc.IsValid() || h.sys.tracer == nil {
		return to.p.sendUser(msg, sender)
	}
	return to.sendTraced(msg, sender, sc)
}

// send is Send from this actor: with the trace context of the message it handles.
func (c *cell) send(to Ref, msg any, sender Ref) error {
	if c.sys.tracer != nil {
		if x := c.x.Load(); x != nil && x.trace.sc.IsValid() {
			if to.p == nil {
				return ErrNoRecipient
			}
			if msg == nil {
				return ErrNilMessage
			}
			return to.sendTraced(msg, sender, x.trace.sc)
		}
	}
	return to.Send(msg, sender)
}

// TraceContext returns a context carrying the trace of the message being handled:
// its span when the actor's kind opts in (Props.Trace), or the context it arrived
// with. Pass it to Ask, to SendContext from other goroutines, or to the calls the
// actor makes (a database query, an HTTP request) so that they join the trace.
// Without a trace it is context.Background().
func (c *cell) TraceContext() context.Context {
	x := c.x.Load()
	if x == nil || !x.trace.sc.IsValid() {
		return context.Background()
	}
	if x.trace.span != nil {
		return trace.ContextWithSpan(context.Background(), x.trace.span)
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), x.trace.sc)
}

// receiveTraced handles the current message with a trace: in a span of its own when
// the actor's kind opts in (a root span when the message came without a context, so
// that the provider's sampler decides), or with the context it came with, which the
// actor's sends then carry on.
func (c *cell) receiveTraced(t *traced) {
	x := c.extras()
	if !c.props.Trace {
		x.trace = current{sc: t.sc}
		defer func() { x.trace = current{} }()
		c.receiveMaybeMeasured()
		return
	}
	parent := context.Background()
	if t != nil {
		parent = trace.ContextWithRemoteSpanContext(parent, t.sc)
	}
	attrs := []attribute.KeyValue{
		attribute.String("messaging.system", "troupe"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.destination.name", c.path()),
		attribute.String("troupe.message.type", typeName(c.cur.msg)),
	}
	if !c.cur.sender.IsZero() {
		attrs = append(attrs, attribute.String("troupe.sender", c.cur.sender.String()))
	}
	_, span := c.sys.tracer.Start(parent, spanName("troupe.receive ", c.cur.msg),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
	x.trace = current{sc: span.SpanContext(), span: span}
	defer func() {
		x.trace = current{}
		if r := recover(); r != nil {
			span.SetStatus(codes.Error, "Receive panicked")
			span.RecordError(panicReason(r))
			span.End()
			panic(r)
		}
		span.End()
	}()
	c.receiveMaybeMeasured()
}

// startAsk starts the client span of an ask from ctx, when tracing is on and ctx
// carries a span (an ask outside any trace, such as the runtime's and the
// extensions' own, starts none); the future ends it with its outcome.
func (f *Future) startAsk(ctx context.Context, target Ref, msg any) trace.SpanContext {
	tr := f.sys.tracer
	if tr == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return trace.SpanContext{}
	}
	if c, ok := msg.(MessageCarrier); ok {
		msg = c.CarriedMessage()
	}
	_, span := tr.Start(ctx, spanName("troupe.ask ", msg), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("messaging.system", "troupe"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", target.String()),
			attribute.String("troupe.message.type", typeName(msg)),
		))
	f.span = span
	return span.SpanContext()
}

// endSpan ends an ask's client span with the ask's outcome.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// spanNames caches span names by prefix and message type.
var spanNames sync.Map // spanKey -> string

type spanKey struct {
	prefix string
	t      reflect.Type
}

// spanName returns prefix followed by msg's type, such as "troupe.receive *app.Get".
func spanName(prefix string, msg any) string {
	k := spanKey{prefix, reflect.TypeOf(msg)}
	if s, ok := spanNames.Load(k); ok {
		return s.(string)
	}
	s := prefix + typeName(msg)
	spanNames.Store(k, s)
	return s
}
