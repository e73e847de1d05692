package sharding

import (
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	"go.opentelemetry.io/otel/trace"
)

// delivery is one message on its way to an entity: the envelope the region and shard
// cores carry (their M). It is created once, when the message enters a region, and
// passed by pointer from the region to the shard; only its message reaches the entity.
type delivery struct {
	shard  ShardID
	entity EntityID
	msg    any       // what the entity receives (the stop message for a stop)
	sender actor.Ref // the original sender
	start  bool      // a StartEntity: start the entity, answer StartEntityAck
	// trace is the trace context the message was sent in, nil for none (always while
	// tracing is off): the entity handles the message in it.
	trace *trace.SpanContext
}

// UserMessage returns what the user sent, for a delivery that becomes a dead letter
// (its shard stopped before it arrived; actor.MessageWrapper): a StartEntity, or the
// Envelope of the entity's message.
func (d *delivery) UserMessage() any {
	if d.start {
		return StartEntity{ID: d.entity}
	}
	return Envelope{EntityID: d.entity, Message: d.msg}
}

// msgDelivery carries a delivery from one region to another: a forward (the frame's
// sender is the original sender) or one message of a hand-over (HandOver set; the
// frame's sender is the region handing over, and Sender the original sender). Between
// systems the message travels serialized as Manifest and Payload, through the registry
// sharding was started with; within one system it travels as it is.
//
// Between systems a msgDelivery is encoded by EncodeMsgpack and DecodeMsgpack, as a
// compact array, not by msgpack's reflection (it is one per message sent to another
// node).
type msgDelivery struct {
	Shard    ShardID
	Entity   EntityID
	Start    bool
	HandOver bool
	Sender   actor.Ref
	Manifest string
	Payload  []byte
	// Trace is the trace context the message was sent in, nil for none. It is
	// encoded as an eighth element only when there is one (internal/tracewire).
	Trace *trace.SpanContext

	local any // the message itself, within one system; never encoded
}

// deliveryName is msgDelivery's name on the wire.
const deliveryName = "troupe.sharding.Delivery.v2"

// deliveryFields is the number of elements of msgDelivery's encoding.
const deliveryFields = 7

// EncodeMsgpack writes m as an array of deliveryFields elements: shard, entity, start,
// handOver, sender, manifest, payload, and the trace context when there is one. The
// sender is written as serialization writes an actor.Ref (its URI, "" for the zero
// Ref); local is not written.
func (m msgDelivery) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := deliveryFields
	if m.Trace != nil {
		n++
	}
	err := errors.Join(
		enc.EncodeArrayLen(n),
		enc.EncodeString(string(m.Shard)),
		enc.EncodeString(string(m.Entity)),
		enc.EncodeBool(m.Start),
		enc.EncodeBool(m.HandOver),
		encodeSender(enc, m.Sender),
		enc.EncodeString(m.Manifest),
		enc.EncodeBytes(m.Payload),
	)
	if err != nil || m.Trace == nil {
		return err
	}
	return enc.EncodeBytes(tracewire.Append(nil, m.Trace))
}

// encodeSender writes ref as serialization's codec for an actor.Ref does: the zero Ref
// (the common case: a forward's sender travels as the frame's sender) directly as "",
// any other through that codec.
func encodeSender(enc *msgpack.Encoder, ref actor.Ref) error {
	if ref.IsZero() {
		return enc.EncodeString("")
	}
	return enc.Encode(ref)
}

// errMalformedDelivery is returned for an encoding that is not a msgDelivery.
var errMalformedDelivery = errors.New("sharding: malformed delivery")

// DecodeMsgpack reads what EncodeMsgpack wrote; elements beyond deliveryFields (from a
// newer version) are skipped. A non-empty sender is decoded by serialization's codec
// for an actor.Ref, which needs a serialization.RefResolver as the decoder's context.
// Any error wraps errMalformedDelivery; on error m is unchanged.
func (m *msgDelivery) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return fmt.Errorf("%w: %w", errMalformedDelivery, err)
	}
	if n < deliveryFields {
		return fmt.Errorf("%w: %d elements, want %d", errMalformedDelivery, n, deliveryFields)
	}
	var q msgDelivery
	field := "shard"
	s, err := dec.DecodeString()
	q.Shard = ShardID(s)
	if err == nil {
		field = "entity"
		s, err = dec.DecodeString()
		q.Entity = EntityID(s)
	}
	if err == nil {
		field = "start"
		q.Start, err = dec.DecodeBool()
	}
	if err == nil {
		field = "handOver"
		q.HandOver, err = dec.DecodeBool()
	}
	if err == nil {
		field = "sender"
		q.Sender, err = decodeSender(dec)
	}
	if err == nil {
		field = "manifest"
		q.Manifest, err = dec.DecodeString()
	}
	if err == nil {
		field = "payload"
		q.Payload, err = dec.DecodeBytes()
	}
	if err == nil && n > deliveryFields {
		field = "trace"
		var b []byte
		if b, err = dec.DecodeBytes(); err == nil && b != nil {
			var sc trace.SpanContext
			if sc, err = tracewire.Parse(b); err == nil {
				q.Trace = &sc
			}
		}
	}
	for i := deliveryFields + 1; err == nil && i < n; i++ {
		field = "a newer version's element"
		err = dec.Skip()
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errMalformedDelivery, field, err)
	}
	*m = q
	return nil
}

// decodeSender reads a sender written by EncodeMsgpack: the zero Ref for "" (or nil),
// otherwise whatever serialization's codec for an actor.Ref makes of it (it resolves
// the URI through the decoder's context, and bounds its length).
func decodeSender(dec *msgpack.Decoder) (actor.Ref, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return actor.Ref{}, err
	}
	if c == msgpcode.FixedStrLow || c == msgpcode.Nil {
		_, err := dec.DecodeString() // "" or nil: the zero Ref, no resolver needed
		return actor.Ref{}, err
	}
	var ref actor.Ref
	if err := dec.Decode(&ref); err != nil {
		return actor.Ref{}, err
	}
	return ref, nil
}

// msgHandOverDone ends a hand-over of Shard from the sending region.
type msgHandOverDone struct {
	Shard ShardID `msgpack:"shard"`
}

// ---- messages within one system (never serialized) ----

// shardHandOff tells a shard actor to hand off.
type shardHandOff struct{}

// ShardReady tells the region that a shard takes messages.
type shardReady struct{ shard ShardID }

// shardLeftovers gives the region what a stopped shard held undelivered; it precedes the
// shard's Terminated.
type shardLeftovers struct {
	shard ShardID
	msgs  []*delivery
}

// getShardEntities asks a shard actor for its running entities; it answers
// shardEntities.
type getShardEntities struct{}

// shardEntities answers getShardEntities.
type shardEntities struct {
	shard ShardID
	ids   []EntityID
}

// timerFired is a core timer's message.
type timerFired struct{ key shardcore.TimerKey }

// The messages between regions are Troupe's own wire types.
func init() {
	wiretypes.MustRegister[*msgDelivery](deliveryName)
	wiretypes.MustRegister[msgHandOverDone]("troupe.sharding.HandOverDone.v1")
}

// wireDelivery returns the form of d that goes to region to: as it is within this
// system, serialized otherwise. handOver marks one message of a hand-over.
func wireDelivery(reg *serialization.Registry, to actor.Ref, d *delivery, handOver bool) (*msgDelivery, error) {
	m := &msgDelivery{Shard: d.shard, Entity: d.entity, Start: d.start, HandOver: handOver, Trace: d.trace}
	if handOver {
		m.Sender = d.sender
	}
	if d.start {
		return m, nil
	}
	if to.IsLocal() {
		m.local = d.msg
		return m, nil
	}
	manifest, payload, err := reg.Marshal(d.msg)
	if err != nil {
		return nil, fmt.Errorf("sharding: message %T for entity %q cannot go to %v: %w", d.msg, d.entity, to, err)
	}
	m.Manifest, m.Payload = manifest, payload
	return m, nil
}

// refResolver resolves actor paths inside messages in one system.
type refResolver struct{ sys *actor.System }

// ResolveRef implements serialization.RefResolver.
func (r refResolver) ResolveRef(uri string) (actor.Ref, error) { return r.sys.Resolve(uri) }

// ReceivingSystem implements wirebatch.ReceivingSystem: a batch decoded with it decodes
// its messages at once, as on a transport's reader.
func (r refResolver) ReceivingSystem() *actor.System { return r.sys }

// unwire turns a received msgDelivery back into a delivery; sender is the frame's
// sender (used unless the message carries its own).
func unwire(reg *serialization.Registry, sys *actor.System, m *msgDelivery, sender actor.Ref) (*delivery, error) {
	d := &delivery{shard: m.Shard, entity: m.Entity, sender: sender, start: m.Start, trace: m.Trace}
	if m.HandOver {
		d.sender = m.Sender
	}
	switch {
	case m.Start:
	case m.local != nil:
		d.msg = m.local
	default:
		msg, err := reg.UnmarshalContext(m.Manifest, m.Payload, refResolver{sys})
		if err != nil {
			return nil, fmt.Errorf("sharding: message for entity %q: %w", m.Entity, err)
		}
		d.msg = msg
	}
	return d, nil
}
