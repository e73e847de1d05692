package sharding

import (
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/serialization"
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
}

// msgDelivery carries a delivery from one region to another: a forward (the frame's
// sender is the original sender) or one message of a hand-over (HandOver set; the
// frame's sender is the region handing over, and Sender the original sender). Between
// systems the message travels serialized as Manifest and Payload, through the registry
// sharding was started with; within one system it travels as it is.
type msgDelivery struct {
	Shard    ShardID   `msgpack:"shard"`
	Entity   EntityID  `msgpack:"entity"`
	Start    bool      `msgpack:"start,omitempty"`
	HandOver bool      `msgpack:"handOver,omitempty"`
	Sender   actor.Ref `msgpack:"sender"`
	Manifest string    `msgpack:"manifest,omitempty"`
	Payload  []byte    `msgpack:"payload,omitempty"`

	local any // the message itself, within one system
}

// msgHandOverDone ends a hand-over of Shard from the sending region.
type msgHandOverDone struct {
	Shard ShardID `msgpack:"shard"`
}

// ---- messages within one system (never serialized) ----

// shardHandOff tells a shard actor to hand off.
type shardHandOff struct{}

// shardReady tells the region that a shard takes messages.
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
type timerFired struct{ key timerKey }

// The messages between regions are Troupe's own wire types.
func init() {
	wiretypes.MustRegister[*msgDelivery]("troupe.sharding.Delivery.v1")
	wiretypes.MustRegister[msgHandOverDone]("troupe.sharding.HandOverDone.v1")
}

// wireDelivery returns the form of d that goes to region to: as it is within this
// system, serialized otherwise. handOver marks one message of a hand-over.
func wireDelivery(reg *serialization.Registry, to actor.Ref, d *delivery, handOver bool) (*msgDelivery, error) {
	m := &msgDelivery{Shard: d.shard, Entity: d.entity, Start: d.start, HandOver: handOver}
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

// unwire turns a received msgDelivery back into a delivery; sender is the frame's
// sender (used unless the message carries its own).
func unwire(reg *serialization.Registry, sys *actor.System, m *msgDelivery, sender actor.Ref) (*delivery, error) {
	d := &delivery{shard: m.Shard, entity: m.Entity, sender: sender, start: m.Start}
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
