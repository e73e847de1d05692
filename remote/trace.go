package remote

import (
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// A traced user message travels as a kindTraced frame: the kind, the trace block,
// then the fields of a user frame (recipient, sender, manifest, payload) as in a
// kindUser frame. The trace block is W3C trace context in binary (internal/tracewire:
// trace id, parent span id, flags, tracestate). Messages without a trace context, and
// every message while tracing is off, travel as kindUser frames: nothing is added.

// isUserKind reports whether a frame of kind carries a user message.
func isUserKind(kind byte) bool { return kind == kindUser || kind == kindTraced }

// userFieldsAt splits a user frame body into its trace block (nil for a kindUser
// frame) and the bytes of its user fields. ok is false when a kindTraced body is too
// short for its trace block.
func userFieldsAt(body []byte) (block, fields []byte, ok bool) {
	if body[0] == kindUser {
		return nil, body[1:], true
	}
	n, err := tracewire.Split(body[1:])
	if err != nil {
		return nil, nil, false
	}
	return body[1 : 1+n], body[1+n:], true
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
