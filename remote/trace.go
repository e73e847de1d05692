package remote

import (
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"go.opentelemetry.io/otel/trace"
)

// A traced user message travels as a kindTraced frame: the kind, the trace block,
// then the fields of a user frame (recipient, sender, manifest, payload) as in a
// kindUser frame. The trace block is W3C trace context in binary: the trace id (16
// bytes), the parent span id (8 bytes), the trace flags (1 byte) and the tracestate
// header's value as a string (usually empty). Messages without a trace context, and
// every message while tracing is off, travel as kindUser frames: nothing is added.

// traceBlockMin is the size of a trace block with an empty tracestate.
const traceBlockMin = 16 + 8 + 1 + 1

// maxTraceState bounds a tracestate value: the W3C limit is 32 members of at most 256
// characters each, and vendors keep it far shorter.
const maxTraceState = 1024

// isUserKind reports whether a frame of kind carries a user message.
func isUserKind(kind byte) bool { return kind == kindUser || kind == kindTraced }

// appendTraceBlock appends sc's trace block. A tracestate longer than a reader
// accepts is left out.
func appendTraceBlock(dst []byte, sc *trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	dst = append(dst, tid[:]...)
	dst = append(dst, sid[:]...)
	dst = append(dst, byte(sc.TraceFlags()))
	ts := sc.TraceState().String()
	if len(ts) > maxTraceState {
		ts = ""
	}
	return appendString(dst, ts)
}

// userFieldsAt splits a user frame body into its trace block (nil for a kindUser
// frame) and the bytes of its user fields. ok is false when a kindTraced body is too
// short for its trace block.
func userFieldsAt(body []byte) (block, fields []byte, ok bool) {
	if body[0] == kindUser {
		return nil, body[1:], true
	}
	if len(body) < 1+traceBlockMin {
		return nil, nil, false
	}
	d := decoder{b: body[1+traceBlockMin-1:]}
	d.bytes("tracestate", maxTraceState)
	if d.err != nil {
		return nil, nil, false
	}
	n := len(body) - len(d.b)
	return body[1:n], body[n:], true
}

// parseTraceBlock decodes a trace block that userFieldsAt split off. Its ids must be
// valid; a tracestate that does not parse is dropped, as W3C trace context asks.
func parseTraceBlock(block []byte) (trace.SpanContext, error) {
	var cfg trace.SpanContextConfig
	copy(cfg.TraceID[:], block[:16])
	copy(cfg.SpanID[:], block[16:24])
	cfg.TraceFlags = trace.TraceFlags(block[24])
	cfg.Remote = true
	d := decoder{b: block[25:]}
	if s := d.bytes("tracestate", maxTraceState); len(s) > 0 {
		if ts, err := trace.ParseTraceState(string(s)); err == nil {
			cfg.TraceState = ts
		}
	}
	sc := trace.NewSpanContext(cfg)
	if !sc.IsValid() {
		return trace.SpanContext{}, fmt.Errorf("%w: a trace context with a zero trace or span id", errMalformed)
	}
	return sc, nil
}

// SendTraced queues msg for the peer with the trace context sc, which the receiving
// system hands to the recipient (actor.TransportHost.SendTraced).
func (rr remoteRef) SendTraced(msg any, sender actor.Ref, sc trace.SpanContext) error {
	live, err := rr.live()
	if err != nil {
		rr.peer.r.deadLetter(rr, msg, sender, err)
		return err
	}
	return live.peer.user.sendUser(live, msg, sender, nil, &sc)
}

// SendTraced publishes msg as a dead letter, as Send does.
func (a absentRef) SendTraced(msg any, sender actor.Ref, _ trace.SpanContext) error {
	return a.Send(msg, sender)
}
