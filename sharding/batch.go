package sharding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wirebatch"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// msgDeliveries carries many forwards from one region to a region on another node in
// one wire message (see outbox.go for when a region sends one). The receiving region
// handles its deliveries one after another, in order, as it would handle as many
// msgDeliveries: each with its own sender, which it sends the entity's replies to.
// Hand-overs and StartEntity travel as msgDelivery.
//
// Each distinct sender and manifest is written once, in a table; an index gives, for
// each delivery, its sender's and manifest's positions in the tables and the lengths
// of its shard, entity and encoding; the shards and entities follow each other in one
// byte string, and the encodings in another. The decoder reads each with one
// allocation at most (the index and the encodings into memory the receiving region
// gives back once it has decoded every delivery, receivedBatch.release) and checks
// the index; the receiving region reads the deliveries from them one after another
// (receivedBatch.next), sharing them. Decoded on a transport's reader for a system that
// runs sharding (its context names the system, wirebatch.ReceivingSystem), a batch also
// decodes every delivery's message there (receivedBatch.predecode), so that the region
// only routes them, as a plain remote message reaches its actor decoded.
//
// It is encoded as an array of deliveriesFields elements: the index (five uvarints per
// delivery), the shards and entities, the encodings, the senders' full paths ("" for
// none) and the manifests. Elements beyond deliveriesFields (from a newer version) are
// skipped.
type msgDeliveries struct {
	// out is what a region sends; nil in a decoded batch.
	out *deliveryBatch
	// in is what a region received.
	in receivedBatch
}

// receivedBatch is a decoded msgDeliveries, checked: next reads its deliveries.
type receivedBatch struct {
	count     int
	index     []byte
	ids       string
	payloads  []byte
	senders   []actor.Ref
	manifests []string
	// msgs holds, when the batch was decoded on a transport's reader (predecode), each
	// delivery's message, nil for one that did not decode there; nil otherwise.
	msgs []any
	// mem holds index's, payloads' and msgs' arrays, for release; nil once released.
	mem *receivedMemory
}

// receivedMemory is the memory of a decoded batch's index, encodings and messages. A
// stream of batches through a region reuses a few of them instead of allocating them
// for each batch (the encodings are a batch's largest allocation).
type receivedMemory struct {
	index, payloads []byte
	msgs            []any
}

// receivedMemories holds the memory of batches a region has taken, for the next ones
// to decode into.
var receivedMemories = sync.Pool{New: func() any { return new(receivedMemory) }}

// release gives the memory of b's index and encodings back for another batch to use.
// Nothing may refer to them any more: every delivery was decoded (a decoded message
// shares nothing with its encoding) or copied.
func (b *receivedBatch) release() {
	m := b.mem
	if m == nil {
		return
	}
	clear(b.msgs) // the messages are the region's now, not the pool's
	b.mem, b.index, b.payloads, b.msgs = nil, nil, nil, nil
	if cap(m.payloads) <= wirebatch.MaxReuse && cap(m.index) <= wirebatch.MaxReuse {
		receivedMemories.Put(m)
	}
}

// predecode decodes every delivery's message with codec, on the transport's reader
// goroutine, so that the region only routes them. A delivery that does not decode is
// left nil: the region decodes it again and sends it to dead letters with the error.
func (b *receivedBatch) predecode(codec *serialization.Codec) {
	msgs := b.mem.msgs[:0]
	if cap(msgs) < b.count || cap(msgs) > 4*b.count+64 {
		msgs = make([]any, 0, b.count) // too small, or too large to keep alive for a few
	}
	var c batchCursor
	for d, ok := b.next(&c); ok; d, ok = b.next(&c) {
		msg, err := codec.Decode(d.manifest, d.payload)
		if err != nil {
			msg = nil
		}
		msgs = append(msgs, msg)
	}
	b.msgs, b.mem.msgs = msgs, msgs
}

// batchCursor is where a reader of a receivedBatch is: the rest of the index, and the
// offsets of the next delivery's identifiers and encoding.
type batchCursor struct {
	index           []byte
	idAt, payloadAt int
	n               int // the number of deliveries read
	started         bool
}

// next returns the delivery at c and moves c past it; false after the last one.
func (b *receivedBatch) next(c *batchCursor) (batchedDelivery, bool) {
	if !c.started {
		c.index, c.started = b.index, true
	}
	if len(c.index) == 0 {
		return batchedDelivery{}, false
	}
	var e [indexWidth]int
	for j := range e {
		v, k := binary.Uvarint(c.index)
		e[j], c.index = int(v), c.index[k:] // checked by the decoder
	}
	shardEnd := c.idAt + e[2]
	entityEnd := shardEnd + e[3]
	payloadEnd := c.payloadAt + e[4]
	d := batchedDelivery{
		shard:    ShardID(b.ids[c.idAt:shardEnd]),
		entity:   EntityID(b.ids[shardEnd:entityEnd]),
		sender:   b.senders[e[0]],
		manifest: b.manifests[e[1]],
		payload:  b.payloads[c.payloadAt:payloadEnd:payloadEnd],
	}
	if c.n < len(b.msgs) {
		d.msg = b.msgs[c.n]
	}
	c.idAt, c.payloadAt = entityEnd, payloadEnd
	c.n++
	return d, true
}

// all returns the deliveries of b, in order.
func (b *receivedBatch) all() []batchedDelivery {
	out := make([]batchedDelivery, 0, b.count)
	var c batchCursor
	for d, ok := b.next(&c); ok; d, ok = b.next(&c) {
		out = append(out, d)
	}
	return out
}

// batchedDelivery is one delivery of a received msgDeliveries.
type batchedDelivery struct {
	shard    ShardID
	entity   EntityID
	sender   actor.Ref
	manifest string
	payload  []byte
	// msg is the message, decoded on the transport's reader; nil when the region
	// decodes payload itself.
	msg any
}

// deliveriesName is msgDeliveries' name on the wire.
const deliveriesName = "troupe.sharding.Deliveries.v1"

// deliveriesFields is the number of elements of msgDeliveries' encoding.
const deliveriesFields = 5

// indexWidth is the number of uvarints of a delivery's index entry.
const indexWidth = 5

// deliveriesOverhead bounds what msgDeliveries' encoding adds to its tables, index,
// identifiers and encodings: the array and the lengths.
const deliveriesOverhead = 32

// maxDeliveriesBytes bounds the encoding of a batch (see wirebatch.Limit).
const maxDeliveriesBytes = 32 << 10

// deliveriesLimit returns the bytes a batch's encoding may take in sys.
func deliveriesLimit(sys *actor.System) int {
	return wirebatch.Limit(remote.Get(sys).MaxFrameSize(), maxDeliveriesBytes)
}

// errMalformedDeliveries is returned for an encoding that is not a msgDeliveries.
var errMalformedDeliveries = errors.New("sharding: malformed batch of deliveries")

// deliveryBatch is a batch being built for one region: the deliveries forwarded to it
// since the last flush, as msgDeliveries encodes them.
type deliveryBatch struct {
	to        actor.Ref
	count     int
	index     []byte
	ids       []byte // the shards and entities
	payloads  []byte // the encodings
	refs      []actor.Ref
	senders   []string // the full paths of refs
	manifests []string
	// size is the bytes the deliveries take in the encoding, tables included.
	size int
	// The table entries of the last delivery added: the next one usually has the same.
	lastSender, lastManifest int
	// decoders gives Codecs that decode the encodings again, for a batch that becomes a
	// dead letter (EachUserMessage); nil: such a batch names its messages' types only.
	decoders *sync.Pool
}

// add encodes d's message with codec and adds d to b. A delivery whose part of the
// encoding would exceed alone bytes is not added: add returns it as a msgDelivery of
// its own. An error (the message cannot be encoded) adds nothing.
func (b *deliveryBatch) add(codec *serialization.Codec, d *delivery, alone int) (*msgDelivery, error) {
	start := len(b.payloads)
	manifest, out, err := codec.Append(b.payloads, d.msg)
	if err != nil {
		return nil, err
	}
	payload := out[start:]
	sender, manifestAt := b.lookup(d.sender, manifest)
	size := len(payload) + len(d.shard) + len(d.entity) +
		wirebatch.UvarintLen(len(payload)) + wirebatch.UvarintLen(len(d.shard)) + wirebatch.UvarintLen(len(d.entity)) + 2
	var uri string
	if sender < 0 {
		if !d.sender.IsZero() {
			uri = d.sender.URI()
		}
		size += len(uri) + 5
	}
	if manifestAt < 0 {
		size += len(manifest) + 5
	}
	if size > alone || d.trace != nil { // a traced message goes alone, with its context
		b.payloads = out[:start]
		return &msgDelivery{Shard: d.shard, Entity: d.entity, Manifest: manifest, Payload: bytes.Clone(payload), Trace: d.trace}, nil
	}
	b.payloads = out
	if sender < 0 {
		sender = len(b.refs)
		b.refs = append(b.refs, d.sender)
		b.senders = append(b.senders, uri)
	}
	if manifestAt < 0 {
		manifestAt = len(b.manifests)
		b.manifests = append(b.manifests, manifest)
	}
	b.lastSender, b.lastManifest = sender, manifestAt
	b.index = binary.AppendUvarint(b.index, uint64(sender))
	b.index = binary.AppendUvarint(b.index, uint64(manifestAt))
	b.index = binary.AppendUvarint(b.index, uint64(len(d.shard)))
	b.index = binary.AppendUvarint(b.index, uint64(len(d.entity)))
	b.index = binary.AppendUvarint(b.index, uint64(len(payload)))
	b.ids = append(append(b.ids, d.shard...), d.entity...)
	b.size += size
	b.count++
	return nil, nil
}

// lookup returns the positions of sender and manifest in b's tables, -1 for those
// not in them yet.
func (b *deliveryBatch) lookup(sender actor.Ref, manifest string) (s, m int) {
	return wirebatch.Position(b.refs, b.lastSender, sender), wirebatch.Position(b.manifests, b.lastManifest, manifest)
}

// reset empties b for the next deliveries to the same region, keeping its buffers.
func (b *deliveryBatch) reset() {
	clear(b.refs)
	*b = deliveryBatch{to: b.to, index: b.index[:0], ids: b.ids[:0], payloads: b.payloads[:0],
		refs: b.refs[:0], senders: b.senders[:0], manifests: b.manifests[:0], decoders: b.decoders}
}

// batchOf returns the batch of the decoded deliveries in, to encode them again.
func batchOf(in []batchedDelivery) *deliveryBatch {
	b := &deliveryBatch{}
	for _, d := range in {
		s, m := b.lookup(d.sender, d.manifest)
		if s < 0 {
			s = len(b.refs)
			b.refs = append(b.refs, d.sender)
			uri := ""
			if !d.sender.IsZero() {
				uri = d.sender.URI()
			}
			b.senders = append(b.senders, uri)
		}
		if m < 0 {
			m = len(b.manifests)
			b.manifests = append(b.manifests, d.manifest)
		}
		b.lastSender, b.lastManifest = s, m
		for _, v := range []int{s, m, len(d.shard), len(d.entity), len(d.payload)} {
			b.index = binary.AppendUvarint(b.index, uint64(v))
		}
		b.ids = append(append(b.ids, d.shard...), d.entity...)
		b.payloads = append(b.payloads, d.payload...)
		b.count++
	}
	return b
}

// EncodeMsgpack writes m as an array of deliveriesFields elements.
func (m msgDeliveries) EncodeMsgpack(enc *msgpack.Encoder) error {
	b := m.out
	if b == nil {
		b = batchOf(m.in.all())
	}
	if err := errors.Join(
		enc.EncodeArrayLen(deliveriesFields),
		enc.EncodeBytes(b.index),
		enc.EncodeBytes(b.ids),
		enc.EncodeBytes(b.payloads),
	); err != nil {
		return err
	}
	return errors.Join(wirebatch.EncodeTable(enc, b.senders), wirebatch.EncodeTable(enc, b.manifests))
}

// DecodeMsgpack reads what EncodeMsgpack wrote, and checks it: at least one delivery,
// every index entry within the tables, the identifiers and the encodings, each of
// those used up, no empty shard or entity. The senders are resolved with the
// decoder's context, a serialization.RefResolver (the transport's); one that does not
// resolve fails the whole batch. Any error wraps errMalformedDeliveries; on error m is
// unchanged.
func (m *msgDeliveries) DecodeMsgpack(dec *msgpack.Decoder) error {
	in, err := decodeDeliveries(dec)
	if err != nil {
		in.release()
		return fmt.Errorf("%w: %w", errMalformedDeliveries, err)
	}
	*m = msgDeliveries{in: in}
	return nil
}

func decodeDeliveries(dec *msgpack.Decoder) (receivedBatch, error) {
	var b receivedBatch
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return b, err
	}
	if n < deliveriesFields {
		return b, fmt.Errorf("%d elements, want %d", n, deliveriesFields)
	}
	mem := receivedMemories.Get().(*receivedMemory)
	if mem.index, err = wirebatch.ReadBytes(dec, mem.index); err != nil {
		return b, fmt.Errorf("index: %w", err)
	}
	// Read as a string (msgpack reads a byte string as one): the deliveries'
	// identifiers share it, and so do the shards and entities made of it.
	if b.ids, err = dec.DecodeString(); err != nil {
		return b, fmt.Errorf("identifiers: %w", err)
	}
	if mem.payloads, err = wirebatch.ReadBytes(dec, mem.payloads); err != nil {
		return b, fmt.Errorf("encodings: %w", err)
	}
	b.index, b.payloads, b.mem = mem.index, mem.payloads, mem
	if b.count, err = wirebatch.IndexEntries(b.index, indexWidth); err != nil {
		return b, err
	}
	if b.count == 0 {
		return b, errors.New("no deliveries")
	}
	if b.senders, err = wirebatch.DecodeSenders(dec, b.count); err != nil {
		return b, err
	}
	if b.manifests, err = wirebatch.DecodeTable(dec, b.count, "manifests"); err != nil {
		return b, err
	}
	for range n - deliveriesFields {
		if err := dec.Skip(); err != nil {
			return b, fmt.Errorf("a newer version's element: %w", err)
		}
	}
	if err := b.check(); err != nil {
		return b, err
	}
	if rs, ok := serialization.DecoderContext(dec).(wirebatch.ReceivingSystem); ok {
		if s := Get(rs.ReceivingSystem()); s != nil {
			codec := s.decoders.Get().(*serialization.Codec)
			b.predecode(codec)
			s.decoders.Put(codec)
		}
	}
	return b, nil
}

// check checks that every index entry of b is within its tables, identifiers and
// encodings, names a shard and an entity, and that the entries use up the
// identifiers and the encodings: next needs no checks of its own.
func (b *receivedBatch) check() error {
	index := b.index
	idAt, payloadAt := 0, 0
	for i := range b.count {
		var e [indexWidth]uint64
		for j := range e {
			v, k := binary.Uvarint(index)
			e[j], index = v, index[k:]
		}
		switch {
		case e[0] >= uint64(len(b.senders)) || e[1] >= uint64(len(b.manifests)):
			return fmt.Errorf("delivery %d: sender %d or manifest %d outside the tables", i, e[0], e[1])
		case e[2] == 0 || e[3] == 0:
			return fmt.Errorf("delivery %d: an empty shard or entity", i)
		case e[2] > uint64(len(b.ids)-idAt) || e[3] > uint64(len(b.ids)-idAt)-e[2]:
			return fmt.Errorf("delivery %d: identifiers beyond the %d bytes given", i, len(b.ids))
		case e[4] > uint64(len(b.payloads)-payloadAt):
			return fmt.Errorf("delivery %d: an encoding beyond the %d bytes given", i, len(b.payloads))
		}
		idAt += int(e[2] + e[3])
		payloadAt += int(e[4])
	}
	if idAt != len(b.ids) || payloadAt != len(b.payloads) {
		return fmt.Errorf("%d bytes of identifiers and %d of encodings, the index names %d and %d",
			len(b.ids), len(b.payloads), idAt, payloadAt)
	}
	return nil
}

// msgDeliveries is one of Troupe's own wire types: every registry knows it.
func init() { wiretypes.MustRegister[*msgDeliveries](deliveriesName) }
