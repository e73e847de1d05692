package sharding

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/hooks"
	"github.com/troupe-go/troupe/internal/wiretypes"
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
// allocation, and the decoded deliveries share them.
//
// It is encoded as an array of deliveriesFields elements: the index (five uvarints per
// delivery), the shards and entities, the encodings, the senders' full paths ("" for
// none) and the manifests. Elements beyond deliveriesFields (from a newer version) are
// skipped.
type msgDeliveries struct {
	// out is what a region sends; nil in a decoded batch.
	out *deliveryBatch
	// in is what a region received: the decoded deliveries, in order.
	in []batchedDelivery
}

// batchedDelivery is one delivery of a received msgDeliveries.
type batchedDelivery struct {
	shard    ShardID
	entity   EntityID
	sender   actor.Ref
	manifest string
	payload  []byte
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

// maxDeliveriesBytes bounds the encoding of a batch; frameReserve is what a frame needs
// besides its message (its header, the recipient, the sender, the manifest).
const (
	maxDeliveriesBytes = 32 << 10
	frameReserve       = 1 << 10
)

// deliveriesLimit returns the bytes a batch's encoding may take in sys: at most
// maxDeliveriesBytes, and within a frame of its transport.
func deliveriesLimit(sys *actor.System) int {
	frame := 256 << 10
	if r := hooks.RemoteOf(sys); r != nil {
		frame = r.MaxFrameSize()
	}
	return min(maxDeliveriesBytes, max(frame-frameReserve, frame/2))
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
		uvarintLen(len(payload)) + uvarintLen(len(d.shard)) + uvarintLen(len(d.entity)) + 2
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
	if size > alone {
		b.payloads = out[:start]
		return &msgDelivery{Shard: d.shard, Entity: d.entity, Manifest: manifest, Payload: bytes.Clone(payload)}, nil
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
	s, m = -1, -1
	if len(b.refs) > 0 && b.refs[b.lastSender] == sender {
		s = b.lastSender
	} else {
		for i, r := range b.refs {
			if r == sender {
				s = i
				break
			}
		}
	}
	if len(b.manifests) > 0 && b.manifests[b.lastManifest] == manifest {
		m = b.lastManifest
	} else {
		for i, name := range b.manifests {
			if name == manifest {
				m = i
				break
			}
		}
	}
	return s, m
}

// reset empties b for the next deliveries to the same region, keeping its buffers.
func (b *deliveryBatch) reset() {
	clear(b.refs)
	*b = deliveryBatch{to: b.to, index: b.index[:0], ids: b.ids[:0], payloads: b.payloads[:0],
		refs: b.refs[:0], senders: b.senders[:0], manifests: b.manifests[:0]}
}

func uvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
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
		b = batchOf(m.in)
	}
	if err := errors.Join(
		enc.EncodeArrayLen(deliveriesFields),
		enc.EncodeBytes(b.index),
		enc.EncodeBytes(b.ids),
		enc.EncodeBytes(b.payloads),
		enc.EncodeArrayLen(len(b.senders)),
	); err != nil {
		return err
	}
	for _, s := range b.senders {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	if err := enc.EncodeArrayLen(len(b.manifests)); err != nil {
		return err
	}
	for _, s := range b.manifests {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	return nil
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
		return fmt.Errorf("%w: %w", errMalformedDeliveries, err)
	}
	*m = msgDeliveries{in: in}
	return nil
}

func decodeDeliveries(dec *msgpack.Decoder) ([]batchedDelivery, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < deliveriesFields {
		return nil, fmt.Errorf("%d elements, want %d", n, deliveriesFields)
	}
	index, err := dec.DecodeBytes()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	// Read as a string (msgpack reads a byte string as one): the decoded identifiers
	// share it.
	ids, err := dec.DecodeString()
	if err != nil {
		return nil, fmt.Errorf("identifiers: %w", err)
	}
	payloads, err := dec.DecodeBytes()
	if err != nil {
		return nil, fmt.Errorf("encodings: %w", err)
	}
	count, err := indexEntries(index)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, errors.New("no deliveries")
	}
	senders, err := decodeSenders(dec, count)
	if err != nil {
		return nil, err
	}
	manifests, err := decodeTable(dec, count, "manifests")
	if err != nil {
		return nil, err
	}
	for range n - deliveriesFields {
		if err := dec.Skip(); err != nil {
			return nil, fmt.Errorf("a newer version's element: %w", err)
		}
	}
	out := make([]batchedDelivery, count)
	idAt, payloadAt := 0, 0
	for i := range out {
		var e [indexWidth]uint64
		for j := range e {
			v, k := binary.Uvarint(index)
			e[j], index = v, index[k:]
		}
		switch {
		case e[0] >= uint64(len(senders)) || e[1] >= uint64(len(manifests)):
			return nil, fmt.Errorf("delivery %d: sender %d or manifest %d outside the tables", i, e[0], e[1])
		case e[2] == 0 || e[3] == 0:
			return nil, fmt.Errorf("delivery %d: an empty shard or entity", i)
		case e[2] > uint64(len(ids)-idAt) || e[3] > uint64(len(ids)-idAt)-e[2]:
			return nil, fmt.Errorf("delivery %d: identifiers beyond the %d bytes given", i, len(ids))
		case e[4] > uint64(len(payloads)-payloadAt):
			return nil, fmt.Errorf("delivery %d: an encoding beyond the %d bytes given", i, len(payloads))
		}
		shardEnd := idAt + int(e[2])
		entityEnd := shardEnd + int(e[3])
		payloadEnd := payloadAt + int(e[4])
		out[i] = batchedDelivery{
			shard:    ShardID(ids[idAt:shardEnd]),
			entity:   EntityID(ids[shardEnd:entityEnd]),
			sender:   senders[e[0]],
			manifest: manifests[e[1]],
			payload:  payloads[payloadAt:payloadEnd:payloadEnd],
		}
		idAt, payloadAt = entityEnd, payloadEnd
	}
	if idAt != len(ids) || payloadAt != len(payloads) {
		return nil, fmt.Errorf("%d bytes of identifiers and %d of encodings, the index names %d and %d",
			len(ids), len(payloads), idAt, payloadAt)
	}
	return out, nil
}

// indexEntries checks that index is whole entries of indexWidth uvarints, and counts
// them.
func indexEntries(index []byte) (int, error) {
	values := 0
	for len(index) > 0 {
		_, k := binary.Uvarint(index)
		if k <= 0 {
			return 0, errors.New("a bad number in the index")
		}
		index = index[k:]
		values++
	}
	if values%indexWidth != 0 {
		return 0, fmt.Errorf("an index of %d numbers", values)
	}
	return values / indexWidth, nil
}

// decodeTable reads an array of at least one and at most max strings.
func decodeTable(dec *msgpack.Decoder, max int, what string) ([]string, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if n < 1 || n > max {
		return nil, fmt.Errorf("%d %s for %d deliveries", n, what, max)
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = dec.DecodeString(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

// maxSenderLen bounds a sender's full path.
const maxSenderLen = 4096

// decodeSenders reads the senders' table of a batch of count deliveries and resolves
// each.
func decodeSenders(dec *msgpack.Decoder, count int) ([]actor.Ref, error) {
	paths, err := decodeTable(dec, count, "senders")
	if err != nil {
		return nil, err
	}
	refs := make([]actor.Ref, len(paths))
	resolver, _ := serialization.DecoderContext(dec).(serialization.RefResolver)
	for i, s := range paths {
		if s == "" {
			continue
		}
		if len(s) > maxSenderLen {
			return nil, fmt.Errorf("a sender of %d bytes", len(s))
		}
		if resolver == nil {
			return nil, errors.New("a sender decodes only with a serialization.RefResolver as the context")
		}
		if refs[i], err = resolver.ResolveRef(s); err != nil {
			return nil, fmt.Errorf("sender %q: %w", truncate(s, 200), err)
		}
	}
	return refs, nil
}

// truncate shortens s to at most n bytes for an error message.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// msgDeliveries is one of Troupe's own wire types: every registry knows it.
func init() { wiretypes.MustRegister[*msgDeliveries](deliveriesName) }
