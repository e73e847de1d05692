// Package wirebatch holds what Troupe's batched wire messages share: the singleton's
// proxy batches and sharding's batches of deliveries both carry many messages in one,
// with an index of uvarints per message and tables of the senders and manifests they
// name once each. It has the pieces both encode and check in the same way; each
// message type keeps its own layout and its own error to wrap these errors in. It
// also names the decoder context through which a batch decoding on a transport's
// reader finds the system it arrived at (ReceivingSystem).
package wirebatch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxSenderLen bounds a sender's full path in a table of senders.
const MaxSenderLen = 4096

// UvarintLen returns the bytes binary.AppendUvarint takes for n.
func UvarintLen(n int) int {
	k := 1
	for ; n >= 0x80; n >>= 7 {
		k++
	}
	return k
}

// Position returns where v stands in a table being built, or -1: it looks at
// table[last] first, as consecutive messages of a batch usually repeat the last
// sender and manifest, then at the rest in order.
func Position[T comparable](table []T, last int, v T) int {
	if last < len(table) && table[last] == v {
		return last
	}
	for i, x := range table {
		if x == v {
			return i
		}
	}
	return -1
}

// IndexEntries checks that index is whole entries of width uvarints each, and counts
// them.
func IndexEntries(index []byte, width int) (int, error) {
	values := 0
	for len(index) > 0 {
		_, k := binary.Uvarint(index)
		if k <= 0 {
			return 0, errors.New("a bad number in the index")
		}
		index = index[k:]
		values++
	}
	if values%width != 0 {
		return 0, fmt.Errorf("an index of %d numbers", values)
	}
	return values / width, nil
}

// MaxReuse bounds the capacity of a buffer ReadBytes reads into and its caller keeps
// for the next batch: twice the largest batch, so that the buffer of an ordinary batch
// is reused and that of an unusual one goes to the garbage collector.
const MaxReuse = 64 << 10

// ReadBytes reads a byte string (or nil, as an empty one) from dec into buf's array when it fits
// there, into a new array otherwise, and returns it: the same bytes as
// dec.DecodeBytes, without an allocation when buf is large enough. A batch's decoder
// reads its encodings with it into a buffer it reuses once every message of the batch
// is decoded (and so copied out of it).
func ReadBytes(dec *msgpack.Decoder, buf []byte) ([]byte, error) {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = 0 // nil, which DecodeBytes reads as an empty byte string
	}
	if r, ok := dec.Buffered().(interface{ Len() int }); ok && n > r.Len() {
		// The reader holds the rest of the input (a frame, or the data given to
		// Unmarshal): no buffer for bytes that are not there.
		return nil, fmt.Errorf("a byte string of %d bytes in %d", n, r.Len())
	}
	if n > cap(buf) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if err := dec.ReadFull(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// EncodeTable writes table as an array of strings.
func EncodeTable(enc *msgpack.Encoder, table []string) error {
	if err := enc.EncodeArrayLen(len(table)); err != nil {
		return err
	}
	for _, s := range table {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	return nil
}

// DecodeTable reads an array of at least one and at most max strings (a table of a
// batch of max messages); what names the table in errors.
func DecodeTable(dec *msgpack.Decoder, max int, what string) ([]string, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if n < 1 || n > max {
		return nil, fmt.Errorf("%d %s for %d messages", n, what, max)
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = dec.DecodeString(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

// DecodeSenders reads the senders' table of a batch of count messages ("" for no
// sender) and resolves each with the decoder's context, a serialization.RefResolver
// (the transport's); one that does not resolve fails the whole table.
func DecodeSenders(dec *msgpack.Decoder, count int) ([]actor.Ref, error) {
	paths, err := DecodeTable(dec, count, "senders")
	if err != nil {
		return nil, err
	}
	refs := make([]actor.Ref, len(paths))
	resolver, _ := serialization.DecoderContext(dec).(serialization.RefResolver)
	for i, s := range paths {
		if s == "" {
			continue
		}
		if len(s) > MaxSenderLen {
			return nil, fmt.Errorf("a sender of %d bytes", len(s))
		}
		if resolver == nil {
			return nil, errors.New("a sender decodes only with a serialization.RefResolver as the context")
		}
		if refs[i], err = resolver.ResolveRef(s); err != nil {
			return nil, fmt.Errorf("sender %q: %w", truncate(s), err)
		}
	}
	return refs, nil
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// ReceivingSystem is implemented by the decoder context (serialization.DecoderContext)
// under which a transport decodes what arrives for a system (remote's resolvers), and
// by sharding's own when it reads a batch back: it names that system. A batch of
// messages decoding there can so find the extension it is for, and decode its
// messages at once, off the recipient's goroutine, as plain remote messages are.
type ReceivingSystem interface {
	ReceivingSystem() *actor.System
}

// frameReserve is what a frame's own fields take besides a batch: its header,
// recipient, sender and manifest.
const frameReserve = 1 << 10

// Limit returns the bytes a layer's batch of messages (the singleton's proxies',
// sharding's regions') may take when the transport's frames hold frame bytes: at most
// limit, and within one frame (half of it, or all but what the frame's own fields
// need, whichever is more).
func Limit(frame, limit int) int {
	return min(limit, max(frame-frameReserve, frame/2))
}
