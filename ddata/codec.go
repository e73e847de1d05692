package ddata

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// Bounds on decoded data. The registry already refuses containers that declare
// more entries than the input has bytes; these bound what one value may name.
const (
	// maxNodes is the most nodes one value may name.
	maxNodes = 1 << 16
	// maxAddrLen is the longest node address accepted.
	maxAddrLen = 1024
	// maxSeq is the largest dot or version accepted, so that a hostile peer
	// cannot push a node's counter to where the next increment would wrap.
	maxSeq = 1 << 62
)

// invalid returns an error wrapping ErrInvalidData.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidData, fmt.Sprintf(format, args...))
}

// mismatch returns an error wrapping ErrTypeMismatch.
func mismatch(want string, got any) error {
	return fmt.Errorf("%w: want %s, got %T", ErrTypeMismatch, want, got)
}

// encodeNode writes a node as [addr, uid].
func encodeNode(enc *msgpack.Encoder, n cluster.UniqueAddress) error {
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := enc.EncodeString(n.Addr); err != nil {
		return err
	}
	return enc.EncodeUint(n.UID)
}

// decodeNode reads [addr, uid] and checks the address.
func decodeNode(dec *msgpack.Decoder) (cluster.UniqueAddress, error) {
	if _, err := decodeLen(dec, "node", 2, 2); err != nil {
		return cluster.UniqueAddress{}, err
	}
	return decodeNodeFields(dec)
}

// decodeNodeFields reads addr and uid (without the array header).
func decodeNodeFields(dec *msgpack.Decoder) (cluster.UniqueAddress, error) {
	addr, err := dec.DecodeString()
	if err != nil {
		return cluster.UniqueAddress{}, err
	}
	if addr == "" || len(addr) > maxAddrLen {
		return cluster.UniqueAddress{}, invalid("node address of %d bytes", len(addr))
	}
	uid, err := decodeUint(dec)
	if err != nil {
		return cluster.UniqueAddress{}, err
	}
	return cluster.UniqueAddress{Addr: addr, UID: uid}, nil
}

// decodeLen reads an array header and checks min <= n <= max. A nil array is
// refused.
func decodeLen(dec *msgpack.Decoder, what string, min, max int) (int, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return 0, err
	}
	if n < min || n > max {
		return 0, invalid("%s: %d entries, want %d..%d", what, n, min, max)
	}
	return n, nil
}

// canonWriter collects encoded bytes.
type canonWriter struct{ b []byte }

func (w *canonWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *canonWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *canonWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

// canonEncoder encodes user values (elements, keys, register values, map values)
// the same way every time: compact integers, and (through canonicalize) every map's
// entries in the order of their encoded keys.
type canonEncoder struct {
	w   canonWriter
	enc *msgpack.Encoder
}

var canonPool = sync.Pool{New: func() any {
	c := &canonEncoder{}
	c.enc = msgpack.NewEncoder(&c.w)
	c.enc.UseCompactInts(true)
	c.enc.SetSortMapKeys(true)
	return c
}}

// appendCanonical appends the canonical encoding of v to dst.
func appendCanonical(dst []byte, v any) (out []byte, err error) {
	c := canonPool.Get().(*canonEncoder)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while encoding %T: %v", v, p)
			out = dst
		}
	}()
	c.w.b = dst
	if err := c.enc.Encode(v); err != nil {
		return dst, err // the encoder's state is unknown now; let it go
	}
	out, c.w.b = c.w.b, nil
	canonPool.Put(c)
	value, err := canonicalize(out[len(dst):])
	if err != nil {
		return dst, err
	}
	if len(value) > 0 && &value[0] != &out[len(dst)] {
		out = append(out[:len(dst)], value...)
	}
	return out, nil
}

// writeCanonical writes the canonical encoding of v to enc's output.
func writeCanonical(enc *msgpack.Encoder, v any) error {
	b, err := appendCanonical(nil, v)
	if err != nil {
		return err
	}
	_, err = enc.Writer().Write(b)
	return err
}

// sortedByEncoding returns the indices of items ordered by their canonical
// encodings, with the encodings: the deterministic order in which sets and maps
// are written. It fails if an item cannot be encoded or two items encode alike.
func sortedByEncoding[E any](items []E) (order []int, encs [][]byte, err error) {
	var buf []byte
	ends := make([]int, len(items))
	for i := range items {
		if buf, err = appendCanonical(buf, items[i]); err != nil {
			return nil, nil, fmt.Errorf("element %d: %w", i, err)
		}
		ends[i] = len(buf)
	}
	encs = make([][]byte, len(items))
	start := 0
	for i, end := range ends {
		encs[i] = buf[start:end:end]
		start = end
	}
	order = make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(encs[a], encs[b]) })
	for i := 1; i < len(order); i++ {
		if bytes.Equal(encs[order[i-1]], encs[order[i]]) {
			return nil, nil, fmt.Errorf("two elements encode alike")
		}
	}
	return order, encs, nil
}

// decodeUint reads an unsigned integer. msgpack's decoder would turn a negative
// integer into a huge unsigned one; here it is invalid.
func decodeUint(dec *msgpack.Decoder) (uint64, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return 0, err
	}
	if c >= 0xe0 || (c >= 0xd0 && c <= 0xd3) {
		n, err := dec.DecodeInt64()
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return 0, invalid("negative number %d", n)
		}
		return uint64(n), nil
	}
	return dec.DecodeUint64()
}
