package singleton

import (
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/vmihailenco/msgpack/v5"
)

// post is how a core.Envelope travels on its own, from a manager to its successor
// (proxies send batches, see batch; a manager still takes a post from a proxy):
// without its payload's sender, which travels as the message's sender (the transport
// names a sender once per connection instead of in every message), and encoded as a
// compact array: postFields elements, and a tenth, the payload's trace context
// (internal/tracewire), only when it has one. Elements beyond (from a newer version)
// are skipped, and so is the trace by a version before it: its singleton gets the
// message without its trace.
type post struct {
	proxy    core.ProxyID
	seq      uint64
	after    uint64
	prev     cluster.UniqueAddress
	manifest string
	data     []byte
	trace    []byte // nil for none
}

// postName is post's name on the wire.
const postName = "troupe.singleton.Post.v1"

// postFields is the number of elements of post's encoding without a trace.
const postFields = 9

func toPost(e core.Envelope) post {
	return post{proxy: e.Proxy, seq: e.Seq, after: e.After, prev: e.Prev, manifest: e.Payload.Manifest, data: e.Payload.Data,
		trace: e.Payload.Trace}
}

// envelope returns the envelope p carried, with sender as its payload's sender.
func (p *post) envelope(sender actor.Ref) core.Envelope {
	return core.Envelope{Proxy: p.proxy, Seq: p.seq, After: p.after, Prev: p.prev,
		Payload: core.Payload{Sender: sender, Manifest: p.manifest, Data: p.data, Trace: p.trace}}
}

// EncodeMsgpack writes p as an array of postFields elements, and its trace when it
// has one.
func (p post) EncodeMsgpack(enc *msgpack.Encoder) error {
	fields := postFields
	if p.trace != nil {
		fields++
	}
	err := errors.Join(
		enc.EncodeArrayLen(fields),
		enc.EncodeString(p.proxy.Node.Addr),
		enc.EncodeUint(p.proxy.Node.UID),
		enc.EncodeString(p.proxy.Path),
		enc.EncodeUint(p.seq),
		enc.EncodeUint(p.after),
		enc.EncodeString(p.prev.Addr),
		enc.EncodeUint(p.prev.UID),
		enc.EncodeString(p.manifest),
		enc.EncodeBytes(p.data),
	)
	if err != nil || p.trace == nil {
		return err
	}
	return enc.EncodeBytes(p.trace)
}

// errPost is returned for an encoding that is not a post.
var errPost = errors.New("singleton: malformed post")

// DecodeMsgpack reads what EncodeMsgpack wrote, and checks the trace; elements
// beyond (from a newer version) are skipped.
func (p *post) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < postFields {
		return fmt.Errorf("%w: %d elements", errPost, n)
	}
	var q post
	if q.proxy.Node.Addr, err = dec.DecodeString(); err != nil {
		return err
	}
	if q.proxy.Node.UID, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if q.proxy.Path, err = dec.DecodeString(); err != nil {
		return err
	}
	if q.seq, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if q.after, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if q.prev.Addr, err = dec.DecodeString(); err != nil {
		return err
	}
	if q.prev.UID, err = dec.DecodeUint64(); err != nil {
		return err
	}
	if q.manifest, err = dec.DecodeString(); err != nil {
		return err
	}
	if q.data, err = dec.DecodeBytes(); err != nil {
		return err
	}
	if n > postFields {
		if q.trace, err = dec.DecodeBytes(); err != nil {
			return fmt.Errorf("%w: trace: %w", errPost, err)
		}
		if q.trace != nil {
			if _, err := tracewire.Parse(q.trace); err != nil {
				return fmt.Errorf("%w: %w", errPost, err)
			}
		}
	}
	for i := postFields + 1; i < n; i++ {
		if err := dec.Skip(); err != nil {
			return err
		}
	}
	*p = q
	return nil
}

// post is one of Troupe's own wire types: every registry knows it.
func init() { wiretypes.MustRegister[post](postName) }
