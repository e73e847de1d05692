package ddata

import (
	"iter"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// LWWMap maps keys to last-writer-wins values: an ORMap of LWWRegisters. Use it for
// a collection of independently replaced values (settings per tenant, the latest
// location per device) when losing a concurrent write is acceptable.
//
// The zero value is an empty map, ready to use.
type LWWMap[K comparable, V any] struct {
	m ORMap[K, *LWWRegister[V]]
}

// NewLWWMap returns an empty map.
func NewLWWMap[K comparable, V any]() *LWWMap[K, V] { return &LWWMap[K, V]{} }

func newRegister[V any]() *LWWRegister[V] { return &LWWRegister[V]{} }

// Put sets key's value on behalf of node (the local node), timestamped by clock (nil
// is DefaultClock, see LWWRegister.Set).
func (l *LWWMap[K, V]) Put(node cluster.UniqueAddress, key K, value V, clock Clock[V]) {
	// Update fails only without an init.
	_ = l.m.Update(node, key, newRegister[V], func(r *LWWRegister[V]) { r.Set(node, value, clock) })
}

// Get returns key's value.
func (l *LWWMap[K, V]) Get(key K) (V, bool) {
	r, ok := l.m.Get(key)
	if !ok {
		var zero V
		return zero, false
	}
	return r.Value(), true
}

// Register returns key's register (owned by the map: read it only), for its
// timestamp and writer.
func (l *LWWMap[K, V]) Register(key K) (*LWWRegister[V], bool) { return l.m.Get(key) }

// Remove removes key.
func (l *LWWMap[K, V]) Remove(key K) { l.m.Remove(key) }

// Len returns the number of keys.
func (l *LWWMap[K, V]) Len() int { return l.m.Len() }

// Keys returns the keys in a new slice, in no particular order.
func (l *LWWMap[K, V]) Keys() []K { return l.m.Keys() }

// All iterates over the keys and values in no particular order.
func (l *LWWMap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, r := range l.m.All() {
			if !yield(k, r.Value()) {
				return
			}
		}
	}
}

// Merge merges o.
func (l *LWWMap[K, V]) Merge(o *LWWMap[K, V]) { _ = l.m.Merge(&o.m) } // registers never fail

// Clone returns a copy without the pending delta.
func (l *LWWMap[K, V]) Clone() *LWWMap[K, V] { return &LWWMap[K, V]{m: *l.m.Clone()} }

// MergeData merges an *LWWMap[K, V].
func (l *LWWMap[K, V]) MergeData(other ReplicatedData) error {
	o, ok := other.(*LWWMap[K, V])
	if !ok || o == nil {
		return mismatch("*LWWMap", other)
	}
	l.Merge(o)
	return nil
}

// CloneData returns Clone.
func (l *LWWMap[K, V]) CloneData() ReplicatedData { return l.Clone() }

// TakeDelta returns the changes since the last call as an *LWWMapDelta[K, V].
func (l *LWWMap[K, V]) TakeDelta() (Delta, bool) {
	d, changed := l.m.TakeDelta()
	if d == nil {
		return nil, changed
	}
	return &LWWMapDelta[K, V]{d: *d.(*ORMapDelta[K, *LWWRegister[V]])}, true
}

// MergeDelta applies an *LWWMapDelta[K, V].
func (l *LWWMap[K, V]) MergeDelta(d Delta) error {
	ld, ok := d.(*LWWMapDelta[K, V])
	if !ok || ld == nil {
		return mismatch("*LWWMapDelta", d)
	}
	return l.m.applyOps(ld.d.ops)
}

// NewDelta returns an empty *LWWMapDelta[K, V].
func (l *LWWMap[K, V]) NewDelta() Delta { return &LWWMapDelta[K, V]{} }

// ModifiedByNodes returns the nodes holding state in the keys.
func (l *LWWMap[K, V]) ModifiedByNodes() []cluster.UniqueAddress { return l.m.ModifiedByNodes() }

// NeedPruningFrom reports whether removed holds state in the keys.
func (l *LWWMap[K, V]) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	return l.m.NeedPruningFrom(removed)
}

// Prune prunes the keys.
func (l *LWWMap[K, V]) Prune(removed, into cluster.UniqueAddress) { l.m.Prune(removed, into) }

// PruningCleanup cleans up the keys.
func (l *LWWMap[K, V]) PruningCleanup(removed cluster.UniqueAddress) { l.m.PruningCleanup(removed) }

// EncodeMsgpack writes the map as an ORMap of LWWRegisters.
func (l *LWWMap[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error { return l.m.EncodeMsgpack(enc) }

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (l *LWWMap[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error { return l.m.DecodeMsgpack(dec) }

// LWWMapDelta is the delta of an LWWMap. It is causal and immutable.
type LWWMapDelta[K comparable, V any] struct {
	d ORMapDelta[K, *LWWRegister[V]]
}

// Compose returns the receiver followed by later.
func (d *LWWMapDelta[K, V]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*LWWMapDelta[K, V])
	if !ok || l == nil {
		return nil, mismatch("*LWWMapDelta", later)
	}
	c, _ := d.d.Compose(&l.d)
	return &LWWMapDelta[K, V]{d: *c.(*ORMapDelta[K, *LWWRegister[V]])}, nil
}

// NewData returns a new LWWMap.
func (d *LWWMapDelta[K, V]) NewData() DeltaData { return NewLWWMap[K, V]() }

// Causal returns true.
func (d *LWWMapDelta[K, V]) Causal() bool { return true }

// Size returns the number of operations.
func (d *LWWMapDelta[K, V]) Size() int { return d.d.Size() }

// EncodeMsgpack writes the delta as an ORMapDelta.
func (d *LWWMapDelta[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error { return d.d.EncodeMsgpack(enc) }

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (d *LWWMapDelta[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error { return d.d.DecodeMsgpack(dec) }
