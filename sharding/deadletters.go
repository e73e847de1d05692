package sharding

import (
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
)

// Dead letters. What a region or a shard cannot deliver is published as a dead letter
// addressed to that region or shard, with the reason (an error to test with errors.Is:
// ErrBufferFull, ErrUnplaceable, ...), counted in the type's Stats and logged at a
// bounded rate. Its message is what the user sent, in the form the public API gives
// it: for a message the region had placed, the Envelope of the entity and the message
// the entity would have received (StartEntity for a start); a message that cannot be
// decoded is named by a remote.Undecodable in its Envelope. A region or a shard
// publishes them with actor.System.PublishDeadLetter, addressed to itself; an ask
// waiting for one fails at once.

// undecodable is the dead letter's message for a delivery to entity id whose
// encoding cannot be decoded.
func undecodable(id EntityID, manifest string, payload []byte) Envelope {
	return Envelope{EntityID: id, Message: remote.Undecodable{Manifest: manifest, Size: len(payload)}}
}

// EachUserMessage gives each delivery of the batch as the user sent it: the Envelope
// the receiving region would have placed (the entity and its message), with the
// delivery's own sender. It implements actor.MessageBatch, so that a batch that becomes
// a dead letter (the transport refused it, or the region it was for has stopped) is as
// many dead letters, each of them a user's message, and the dead-letter count is the
// count of messages. A message that cannot be decoded where this runs (no sharding
// there, or a type it does not know) is given as a remote.Undecodable in its Envelope.
func (m *msgDeliveries) EachUserMessage(yield func(msg any, sender actor.Ref)) {
	if m.out == nil {
		m.in.each(nil, yield)
		return
	}
	b := m.out
	view := receivedBatch{count: b.count, index: b.index, ids: string(b.ids), payloads: b.payloads,
		senders: b.refs, manifests: b.manifests}
	var codec *serialization.Codec
	if b.decoders != nil {
		codec = b.decoders.Get().(*serialization.Codec)
		defer b.decoders.Put(codec)
	}
	view.each(codec, yield)
}

// each gives b's deliveries to yield as EachUserMessage does, decoding with codec
// (when not nil) those not decoded on the transport's reader.
func (b *receivedBatch) each(codec *serialization.Codec, yield func(msg any, sender actor.Ref)) {
	var c batchCursor
	for d, ok := b.next(&c); ok; d, ok = b.next(&c) {
		msg := d.msg
		if msg == nil && codec != nil {
			if v, err := codec.Decode(d.manifest, d.payload); err == nil {
				msg = v
			}
		}
		if msg == nil {
			yield(undecodable(d.entity, d.manifest, d.payload), d.sender)
			continue
		}
		yield(Envelope{EntityID: d.entity, Message: msg}, d.sender)
	}
}
