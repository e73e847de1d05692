package singleton

import (
	"github.com/troupe-go/troupe/actor"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"go.opentelemetry.io/otel/trace"
)

// outbox gathers the messages a proxy takes between two flushes: their encodings in
// one buffer, and the tables of the batch they will travel in (see batch), built as
// they come. The proxy flushes it when the flush it sent itself arrives (after
// whatever was in its mailbox then), when it holds a batch's worth, and before it
// handles anything else; a lone message therefore waits for one message at most.
type outbox struct {
	pending []core.Payload
	data    []byte
	tables  *batchTables
	// full is the size of the tables at which the outbox holds a batch's worth.
	full int
	// The capacities of the next buffers: the last ones' sizes, and a quarter more.
	dataHint, pendingHint int
	// flushQueued is set while a flush the proxy sent itself is on its way.
	flushQueued bool
}

// maxOutboxData bounds the capacity of an outbox's buffer: the largest allocation
// the runtime serves from its size classes.
const maxOutboxData = 32 << 10

// newOutbox returns the outbox of the proxy self, for batches of at most limit bytes.
func newOutbox(self core.ProxyID, limit int) outbox {
	// A batch adds its proxy, and its Prev, a member's address like the proxy's.
	fixed := batchOverhead + 2*len(self.Node.Addr) + len(self.Path)
	return outbox{full: max(limit-fixed, 1), dataHint: 256, pendingHint: 4}
}

// add encodes msg from sender with codec and takes it, with the trace context tc it
// was sent in (nil for none), encoded after it in the same buffer. It reports whether
// the outbox now holds a batch's worth, or fails (taking nothing) when msg cannot be
// encoded.
func (o *outbox) add(codec *serialization.Codec, msg any, sender actor.Ref, tc *trace.SpanContext) (full bool, err error) {
	if o.tables == nil {
		o.data = make([]byte, 0, o.dataHint)
		o.pending = make([]core.Payload, 0, o.pendingHint)
		o.tables = &batchTables{index: make([]byte, 0, 3*o.pendingHint)}
	}
	start := len(o.data)
	manifest, data, err := codec.Append(o.data, msg)
	if err != nil {
		return false, err
	}
	end := len(data)
	p := core.Payload{Sender: sender, Manifest: manifest, Data: data[start:end:end]}
	if tc != nil {
		data = tracewire.Append(data, tc)
		p.Trace = data[end:len(data):len(data)]
		p.Data = data[start:end:end] // Append may have moved the buffer
	}
	o.data = data
	o.pending = append(o.pending, p)
	o.tables.add(p, o.tables.lookup(p))
	return o.tables.size >= o.full, nil
}

// take returns what the outbox holds and empties it. The payloads keep their
// encodings (in data): the next messages go into new buffers, unless recycle gives
// these back. An empty outbox returns nothing and keeps its buffers: the proxy flushes
// before each of its own messages, and the flush it sent itself often finds the
// outbox emptied already (by a full batch), with the last batch's buffers recycled.
func (o *outbox) take() (ps []core.Payload, t *batchTables, data []byte) {
	if len(o.pending) == 0 {
		return nil, nil, nil
	}
	ps, t, data = o.pending, o.tables, o.data
	o.dataHint = min(len(o.data)+len(o.data)/4+256, maxOutboxData)
	o.pendingHint = min(len(ps)+len(ps)/4+1, maxOutboxData/64)
	o.pending, o.data, o.tables = nil, nil, nil
	return ps, t, data
}

// recycle gives back what take returned, once nothing refers to the payloads or their
// encodings any more (they were copied into frames): the next messages reuse them.
func (o *outbox) recycle(ps []core.Payload, t *batchTables, data []byte) {
	if o.tables != nil || t == nil || cap(data) > maxOutboxData {
		return
	}
	clear(ps)
	clear(t.refs)
	*t = batchTables{refs: t.refs[:0], senders: t.senders[:0], manifests: t.manifests[:0], index: t.index[:0], traces: t.traces[:0]}
	o.pending, o.tables, o.data = ps[:0], t, data[:0]
}

// tablesFor returns t when it holds the tables of b's payloads, which are ps, and
// b fits in a batch of limit bytes; nil otherwise.
func tablesFor(b core.Batch, ps []core.Payload, t *batchTables, limit int) *batchTables {
	if t == nil || len(b.Payloads) != len(ps) || len(ps) == 0 || &b.Payloads[0] != &ps[0] {
		return nil
	}
	if batchOverhead+len(b.Proxy.Node.Addr)+len(b.Proxy.Path)+len(b.Prev.Addr)+t.size > limit && len(ps) > 1 {
		return nil
	}
	return t
}
