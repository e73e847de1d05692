package singleton

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/troupe-go/troupe/actor"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/internal/wirebatch"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/remote"
	"github.com/vmihailenco/msgpack/v5"
)

// batch is how a core.Batch travels from a proxy to a manager: one wire message for
// many user messages. Each distinct sender and manifest is written once, in a table;
// an index gives, for each message, its sender's and manifest's positions in the
// tables and the length of its encoding; the encodings follow each other in one byte
// string, which the decoder reads into a buffer the decoded payloads share, and which
// the manager reuses for a later batch once it has delivered them (batchMemory).
//
// It is encoded as an array of batchFields elements: the proxy (member address, uid,
// path), First, After, Prev (address, uid), the index (three uvarints per message),
// the encodings, the senders' full paths ("" for none) and the manifests; and, only
// when some message was sent in a trace context, a twelfth: the traces, a byte string
// of a message's position in the batch (a uvarint; ascending) followed by its trace
// context (internal/tracewire), for each traced message. Elements beyond (from a
// newer version) are skipped, and so are the traces by a version before them: its
// singleton gets the messages without their traces.
type batch struct {
	b core.Batch
	// t holds the tables when packBatches made the batch; EncodeMsgpack builds them
	// when it is nil.
	t *batchTables
	// mem holds b's payloads and their encodings when DecodeMsgpack made the batch:
	// the manager gives it back (release) once it delivered them all, decoded.
	mem *batchMemory
}

// batchMemory is the memory of a decoded batch: its payloads and the encodings they
// share. A stream of batches through a manager reuses a few of them instead of
// allocating both for each batch (the encodings are a batch's largest allocation,
// and the payloads hold pointers the garbage collector scans).
type batchMemory struct {
	data     []byte
	payloads []core.Payload
}

// batchMemories holds the memory of batches delivered, for the next ones to decode.
var batchMemories = sync.Pool{New: func() any { return new(batchMemory) }}

// release gives m back for another batch to use. Nothing may refer to the payloads or
// their encodings any more: every message was decoded (a decoded message shares
// nothing with its encoding), and none was held, forwarded or dropped.
func (m *batchMemory) release() {
	if cap(m.data) > wirebatch.MaxReuse || cap(m.payloads) > wirebatch.MaxReuse/8 {
		return
	}
	clear(m.payloads)
	batchMemories.Put(m)
}

// batchName is batch's name on the wire.
const batchName = "troupe.singleton.Batch.v1"

// batchFields is the number of elements of batch's encoding without traces.
const batchFields = 11

// batchOverhead bounds what a batch's encoding adds to its proxy's and Prev's
// addresses, its tables, index and encodings: the array, the numbers and the lengths.
const batchOverhead = 64

// maxBatchBytes bounds a batch's encoding (see wirebatch.Limit).
const maxBatchBytes = 32 << 10

// batchLimit returns the bytes a batch's encoding may take in sys.
func batchLimit(sys *actor.System) int {
	return wirebatch.Limit(remote.Get(sys).MaxFrameSize(), maxBatchBytes)
}

// errBatch is returned for an encoding that is not a batch.
var errBatch = errors.New("singleton: malformed batch")

// batchTables are a batch's tables and index, and the bytes they and the encodings
// take.
type batchTables struct {
	refs      []actor.Ref // the senders, for the lookup
	senders   []string    // their full paths
	manifests []string
	index     []byte
	traces    []byte // the traces element: position and context of each traced message
	count     int    // the messages added
	size      int
	// The table entries of the last message added: the next one usually has the same.
	lastSender, lastManifest int
}

// entry is where a message's sender and manifest are in the tables (-1: not yet, and
// uri is the sender's full path), and the bytes adding it takes.
type entry struct {
	sender, manifest int
	uri              string
	size             int
}

// lookup returns p's entry.
func (t *batchTables) lookup(p core.Payload) entry {
	e := entry{
		sender:   wirebatch.Position(t.refs, t.lastSender, p.Sender),
		manifest: wirebatch.Position(t.manifests, t.lastManifest, p.Manifest),
		size:     len(p.Data) + 2 + wirebatch.UvarintLen(len(p.Data)),
	}
	if e.sender < 0 {
		e.uri = p.Sender.URI()
		e.size += len(e.uri) + 5
	}
	if e.manifest < 0 {
		e.size += len(p.Manifest) + 5
	}
	if p.Trace != nil {
		e.size += len(p.Trace) + traceOverhead
	}
	return e
}

// traceOverhead bounds what a traced message adds to a batch's encoding besides its
// trace context: its position (a uvarint of three bytes at most: a batch holds far
// fewer than 2^21 messages) and the traces element's header (five bytes at most),
// counted with every traced message.
const traceOverhead = 8

// add records p, whose entry is e.
func (t *batchTables) add(p core.Payload, e entry) {
	if e.sender < 0 {
		e.sender = len(t.refs)
		t.refs = append(t.refs, p.Sender)
		t.senders = append(t.senders, e.uri)
	}
	if e.manifest < 0 {
		e.manifest = len(t.manifests)
		t.manifests = append(t.manifests, p.Manifest)
	}
	t.lastSender, t.lastManifest = e.sender, e.manifest
	t.index = binary.AppendUvarint(t.index, uint64(e.sender))
	t.index = binary.AppendUvarint(t.index, uint64(e.manifest))
	t.index = binary.AppendUvarint(t.index, uint64(len(p.Data)))
	if p.Trace != nil {
		t.traces = binary.AppendUvarint(t.traces, uint64(t.count))
		t.traces = append(t.traces, p.Trace...)
	}
	t.count++
	t.size += e.size
}

// tablesOf returns the tables of ps.
func tablesOf(ps []core.Payload) *batchTables {
	t := &batchTables{}
	for _, p := range ps {
		t.add(p, t.lookup(p))
	}
	return t
}

// packBatches splits b into batches whose encodings take at most limit bytes each (a
// message too large for that alone in its own), with their tables.
func packBatches(b core.Batch, limit int) []batch {
	fixed := batchOverhead + len(b.Proxy.Node.Addr) + len(b.Proxy.Path) + len(b.Prev.Addr)
	var out []batch
	t := &batchTables{index: make([]byte, 0, 3*len(b.Payloads))}
	start := 0
	for i, p := range b.Payloads {
		e := t.lookup(p)
		if i > start && fixed+t.size+e.size > limit {
			out = append(out, batch{b: b.Slice(start, i), t: t})
			t, start = &batchTables{index: make([]byte, 0, 3*(len(b.Payloads)-i))}, i
			e = t.lookup(p)
		}
		t.add(p, e)
	}
	return append(out, batch{b: b.Slice(start, len(b.Payloads)), t: t})
}

// EncodeMsgpack writes w as an array of batchFields elements, and the traces when
// some message has one.
func (w batch) EncodeMsgpack(enc *msgpack.Encoder) error {
	t := w.t
	if t == nil {
		t = tablesOf(w.b.Payloads)
	}
	n := 0
	for _, p := range w.b.Payloads {
		n += len(p.Data)
	}
	fields := batchFields
	if len(t.traces) > 0 {
		fields++
	}
	if err := errors.Join(
		enc.EncodeArrayLen(fields),
		enc.EncodeString(w.b.Proxy.Node.Addr),
		enc.EncodeUint(w.b.Proxy.Node.UID),
		enc.EncodeString(w.b.Proxy.Path),
		enc.EncodeUint(w.b.First),
		enc.EncodeUint(w.b.After),
		enc.EncodeString(w.b.Prev.Addr),
		enc.EncodeUint(w.b.Prev.UID),
		enc.EncodeBytes(t.index),
		enc.EncodeBytesLen(n),
	); err != nil {
		return err
	}
	out := enc.Writer()
	for _, p := range w.b.Payloads {
		if _, err := out.Write(p.Data); err != nil {
			return err
		}
	}
	err := errors.Join(wirebatch.EncodeTable(enc, t.senders), wirebatch.EncodeTable(enc, t.manifests))
	if err != nil || fields == batchFields {
		return err
	}
	return enc.EncodeBytes(t.traces)
}

// DecodeMsgpack reads what EncodeMsgpack wrote, and checks it: at least one message,
// every index entry within the tables and the encodings, the encodings used up, the
// Seqs within range, the traces in order, each of a message of the batch and valid.
// The senders are resolved with the decoder's context, a serialization.RefResolver
// (the transport's); one that does not resolve fails the whole batch.
func (w *batch) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < batchFields {
		return fmt.Errorf("%w: %d elements", errBatch, n)
	}
	var b core.Batch
	if b.Proxy.Node.Addr, err = dec.DecodeString(); err != nil {
		return err
	}
	if b.Proxy.Node.UID, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if b.Proxy.Path, err = dec.DecodeString(); err != nil {
		return err
	}
	if b.First, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if b.After, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if b.Prev.Addr, err = dec.DecodeString(); err != nil {
		return err
	}
	if b.Prev.UID, err = dec.DecodeUint64(); err != nil {
		return err
	}
	index, err := dec.DecodeBytes()
	if err != nil {
		return err
	}
	mem := batchMemories.Get().(*batchMemory)
	data, err := wirebatch.ReadBytes(dec, mem.data)
	if err != nil {
		batchMemories.Put(mem)
		return err
	}
	mem.data = data
	if err := decodePayloads(dec, n, index, &b, mem); err != nil {
		mem.release()
		return err
	}
	w.b, w.t, w.mem = b, nil, mem
	return nil
}

// decodePayloads reads the rest of a batch of n elements whose index and encodings
// (in mem.data) are read, and sets b.Payloads, in mem.payloads.
func decodePayloads(dec *msgpack.Decoder, n int, index []byte, b *core.Batch, mem *batchMemory) error {
	data := mem.data
	count, err := wirebatch.IndexEntries(index, 3)
	if err != nil {
		return fmt.Errorf("%w: %w", errBatch, err)
	}
	switch {
	case count == 0:
		return fmt.Errorf("%w: no messages", errBatch)
	case b.Proxy.Node.Addr == "" || b.Proxy.Path == "":
		return fmt.Errorf("%w: no proxy", errBatch)
	case b.First == 0 || b.First-1 > math.MaxUint64-uint64(count):
		return fmt.Errorf("%w: first sequence number %d for %d messages", errBatch, b.First, count)
	}
	senders, err := wirebatch.DecodeSenders(dec, count)
	if err != nil {
		return fmt.Errorf("%w: %w", errBatch, err)
	}
	manifests, err := wirebatch.DecodeTable(dec, count, "manifests")
	if err != nil {
		return fmt.Errorf("%w: %w", errBatch, err)
	}
	var traces []byte
	if n > batchFields {
		if traces, err = dec.DecodeBytes(); err != nil {
			return fmt.Errorf("%w: traces: %w", errBatch, err)
		}
	}
	for i := batchFields + 1; i < n; i++ {
		if err := dec.Skip(); err != nil {
			return err
		}
	}
	if cap(mem.payloads) < count {
		mem.payloads = make([]core.Payload, count)
	}
	b.Payloads = mem.payloads[:count:count]
	off := 0
	for i := range b.Payloads {
		var e [3]uint64
		for j := range e {
			v, k := binary.Uvarint(index)
			e[j], index = v, index[k:]
		}
		if e[0] >= uint64(len(senders)) || e[1] >= uint64(len(manifests)) || e[2] > uint64(len(data)-off) {
			return fmt.Errorf("%w: entry %d (%d, %d, %d) outside the tables or the encodings", errBatch, i, e[0], e[1], e[2])
		}
		end := off + int(e[2])
		b.Payloads[i] = core.Payload{Sender: senders[e[0]], Manifest: manifests[e[1]], Data: data[off:end:end]}
		off = end
	}
	if off != len(data) {
		return fmt.Errorf("%w: %d bytes of encodings, the index names %d", errBatch, len(data), off)
	}
	return decodeTraces(traces, b.Payloads)
}

// decodeTraces sets the traces of ps from a batch's traces element: each a message's
// position, above the one before, and a valid trace context.
func decodeTraces(traces []byte, ps []core.Payload) error {
	next := uint64(0) // the lowest position the next trace may have
	for len(traces) > 0 {
		i, k := binary.Uvarint(traces)
		if k <= 0 || i < next || i >= uint64(len(ps)) {
			return fmt.Errorf("%w: a trace for message %d of %d, after %d", errBatch, i, len(ps), next)
		}
		traces = traces[k:]
		n, err := tracewire.Split(traces)
		if err == nil {
			_, err = tracewire.Parse(traces[:n])
		}
		if err != nil {
			return fmt.Errorf("%w: the trace of message %d: %w", errBatch, i, err)
		}
		ps[i].Trace, traces, next = traces[:n:n], traces[n:], i+1
	}
	return nil
}

// batch is one of Troupe's own wire types: every registry knows it.
func init() { wiretypes.MustRegister[batch](batchName) }
