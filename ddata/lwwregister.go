package ddata

import (
	"bytes"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// Clock gives the timestamp of a new LWWRegister value from the register's current
// timestamp and the value being set. The result should be greater than current, so
// that a node's own later write wins over its earlier one.
type Clock[T any] func(current int64, value T) int64

// DefaultClock is the clock Set uses when given nil: the wall clock in
// microseconds since the Unix epoch, or current+1 when that is larger, so that
// timestamps from one node always increase. It reads the wall clock; pass your own
// Clock for deterministic tests or for a logical clock.
func DefaultClock[T any](current int64, _ T) int64 {
	return max(time.Now().UnixMicro(), current+1)
}

// ReverseClock is a Clock under which the earliest write wins: the timestamp is
// the negated wall clock in microseconds, or current-1 when that is smaller, so
// that timestamps decrease over time.
func ReverseClock[T any](current int64, _ T) int64 {
	return min(-time.Now().UnixMicro(), current-1)
}

// LWWRegister holds one value; a merge keeps the value with the higher timestamp,
// and of two with the same timestamp the one written by the lower node (by Addr,
// then UID). Use it for a value that is replaced as a whole (a configuration, a
// coordinator's state) when losing a concurrent write is acceptable: with wall
// clock timestamps the result depends on the nodes' clocks.
//
// T's msgpack encoding must be a function of its value: maps inside T, other than
// string-keyed ones, make encodings differ between nodes. The zero value is an
// unwritten register holding T's zero value, with timestamp 0 and no node; any
// written register wins over it in a merge, whatever its timestamp.
type LWWRegister[T any] struct {
	value T
	node  cluster.UniqueAddress
	ts    int64
}

// NewLWWRegister returns a register holding value, written by node (the local
// node) at clock's time; a nil clock is DefaultClock.
func NewLWWRegister[T any](node cluster.UniqueAddress, value T, clock Clock[T]) *LWWRegister[T] {
	r := &LWWRegister[T]{}
	r.Set(node, value, clock)
	return r
}

// Set replaces the value on behalf of node (the local node), with the timestamp
// clock(current timestamp, value); a nil clock is DefaultClock.
func (r *LWWRegister[T]) Set(node cluster.UniqueAddress, value T, clock Clock[T]) {
	if clock == nil {
		clock = DefaultClock[T]
	}
	r.ts = clock(r.ts, value)
	r.value, r.node = value, node
}

// Value returns the value. For T holding pointers, slices or maps, the result
// shares them with the register: do not change them.
func (r *LWWRegister[T]) Value() T { return r.value }

// UpdatedBy returns the node that wrote the value.
func (r *LWWRegister[T]) UpdatedBy() cluster.UniqueAddress { return r.node }

// Timestamp returns the value's timestamp.
func (r *LWWRegister[T]) Timestamp() int64 { return r.ts }

// Merge keeps o's value if it wins over the receiver's.
func (r *LWWRegister[T]) Merge(o *LWWRegister[T]) {
	if o.wins(r) {
		r.value, r.node, r.ts = o.value, o.node, o.ts
	}
}

// wins reports whether r's write wins over o's: a written register over an
// unwritten one, then the higher timestamp, then the lower node, then (for two
// writes that should never both exist) the smaller encoding, so that merge stays
// commutative whatever it is given.
func (r *LWWRegister[T]) wins(o *LWWRegister[T]) bool {
	if rw, ow := r.node.Addr != "", o.node.Addr != ""; rw != ow {
		return rw
	}
	if r.ts != o.ts {
		return r.ts > o.ts
	}
	if c := compareNodes(r.node, o.node); c != 0 {
		return c < 0
	}
	a, errA := appendCanonical(nil, r.value)
	b, errB := appendCanonical(nil, o.value)
	if errA != nil || errB != nil {
		return false
	}
	return bytes.Compare(a, b) < 0
}

// Clone returns a copy. T itself is copied by assignment: pointers, slices and
// maps inside it are shared.
func (r *LWWRegister[T]) Clone() *LWWRegister[T] {
	c := *r
	return &c
}

// MergeData merges a *LWWRegister[T].
func (r *LWWRegister[T]) MergeData(other ReplicatedData) error {
	o, ok := other.(*LWWRegister[T])
	if !ok || o == nil {
		return mismatch("*LWWRegister", other)
	}
	r.Merge(o)
	return nil
}

// CloneData returns Clone.
func (r *LWWRegister[T]) CloneData() ReplicatedData { return r.Clone() }

// EncodeMsgpack writes [addr, uid, timestamp, value].
func (r *LWWRegister[T]) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(4); err != nil {
		return err
	}
	if err := enc.EncodeString(r.node.Addr); err != nil {
		return err
	}
	if err := enc.EncodeUint(r.node.UID); err != nil {
		return err
	}
	if err := enc.EncodeInt(r.ts); err != nil {
		return err
	}
	return writeCanonical(enc, r.value)
}

// DecodeMsgpack reads what EncodeMsgpack wrote. A register without a node must
// have timestamp 0 (the zero register).
func (r *LWWRegister[T]) DecodeMsgpack(dec *msgpack.Decoder) error {
	if _, err := decodeLen(dec, "LWWRegister", 4, 4); err != nil {
		return err
	}
	addr, err := dec.DecodeString()
	if err != nil {
		return err
	}
	if len(addr) > maxAddrLen {
		return invalid("node address of %d bytes", len(addr))
	}
	uid, err := decodeUint(dec)
	if err != nil {
		return err
	}
	ts, err := dec.DecodeInt64()
	if err != nil {
		return err
	}
	if addr == "" && (uid != 0 || ts != 0) {
		return invalid("register written at %d without a node", ts)
	}
	var v T
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*r = LWWRegister[T]{value: v, node: cluster.UniqueAddress{Addr: addr, UID: uid}, ts: ts}
	return nil
}
