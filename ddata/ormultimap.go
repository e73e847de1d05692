package ddata

import (
	"iter"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// ORMultiMap maps keys to sets of values: an ORMap of ORSets. Use it for relations
// (the sessions of each user, the tags of each document).
//
// As with ORMap, removing a key while another replica adds to its set keeps the
// key, with the elements each side still holds.
//
// The zero value is an empty map, ready to use.
type ORMultiMap[K comparable, V comparable] struct {
	m ORMap[K, *ORSet[V]]
}

// NewORMultiMap returns an empty map.
func NewORMultiMap[K comparable, V comparable]() *ORMultiMap[K, V] { return &ORMultiMap[K, V]{} }

// AddBinding adds v to key's set on behalf of node (the local node).
func (mm *ORMultiMap[K, V]) AddBinding(node cluster.UniqueAddress, key K, v V) {
	_ = mm.m.Update(node, key, NewORSet[V], func(s *ORSet[V]) { s.Add(node, v) }) // cannot fail with an init
}

// RemoveBinding removes v from key's set on behalf of node (the local node), and
// the key when its set becomes empty.
func (mm *ORMultiMap[K, V]) RemoveBinding(node cluster.UniqueAddress, key K, v V) {
	s, ok := mm.m.Get(key)
	if !ok || !s.Contains(v) {
		return
	}
	_ = mm.m.Update(node, key, NewORSet[V], func(s *ORSet[V]) { s.Remove(v) }) // cannot fail with an init
	if s, _ := mm.m.Get(key); s.Len() == 0 {
		mm.m.Remove(key)
	}
}

// Put replaces key's set with values on behalf of node (the local node): the
// elements it held here are removed, values added.
func (mm *ORMultiMap[K, V]) Put(node cluster.UniqueAddress, key K, values []V) {
	_ = mm.m.Update(node, key, NewORSet[V], func(s *ORSet[V]) { // cannot fail with an init
		s.Clear()
		for _, v := range values {
			s.Add(node, v)
		}
	})
}

// Get returns key's values in a new slice, in no particular order.
func (mm *ORMultiMap[K, V]) Get(key K) ([]V, bool) {
	s, ok := mm.m.Get(key)
	if !ok {
		return nil, false
	}
	return s.Elements(), true
}

// ContainsBinding reports whether key's set holds v.
func (mm *ORMultiMap[K, V]) ContainsBinding(key K, v V) bool {
	s, ok := mm.m.Get(key)
	return ok && s.Contains(v)
}

// Remove removes key and its set.
func (mm *ORMultiMap[K, V]) Remove(key K) { mm.m.Remove(key) }

// Len returns the number of keys.
func (mm *ORMultiMap[K, V]) Len() int { return mm.m.Len() }

// Keys returns the keys in a new slice, in no particular order.
func (mm *ORMultiMap[K, V]) Keys() []K { return mm.m.Keys() }

// All iterates over the keys and their sets (owned by the map: read them only), in
// no particular order.
func (mm *ORMultiMap[K, V]) All() iter.Seq2[K, *ORSet[V]] { return mm.m.All() }

// Merge merges o.
func (mm *ORMultiMap[K, V]) Merge(o *ORMultiMap[K, V]) { _ = mm.m.Merge(&o.m) } // sets never fail

// Clone returns a copy without the pending delta.
func (mm *ORMultiMap[K, V]) Clone() *ORMultiMap[K, V] { return &ORMultiMap[K, V]{m: *mm.m.Clone()} }

// MergeData merges an *ORMultiMap[K, V].
func (mm *ORMultiMap[K, V]) MergeData(other ReplicatedData) error {
	o, ok := other.(*ORMultiMap[K, V])
	if !ok || o == nil {
		return mismatch("*ORMultiMap", other)
	}
	mm.Merge(o)
	return nil
}

// CloneData returns Clone.
func (mm *ORMultiMap[K, V]) CloneData() ReplicatedData { return mm.Clone() }

// TakeDelta returns the changes since the last call as an *ORMultiMapDelta[K, V].
func (mm *ORMultiMap[K, V]) TakeDelta() (Delta, bool) {
	d, changed := mm.m.TakeDelta()
	if d == nil {
		return nil, changed
	}
	return &ORMultiMapDelta[K, V]{d: *d.(*ORMapDelta[K, *ORSet[V]])}, true
}

// MergeDelta applies an *ORMultiMapDelta[K, V].
func (mm *ORMultiMap[K, V]) MergeDelta(d Delta) error {
	md, ok := d.(*ORMultiMapDelta[K, V])
	if !ok || md == nil {
		return mismatch("*ORMultiMapDelta", d)
	}
	return mm.m.applyOps(md.d.ops)
}

// NewDelta returns an empty *ORMultiMapDelta[K, V].
func (mm *ORMultiMap[K, V]) NewDelta() Delta { return &ORMultiMapDelta[K, V]{} }

// ModifiedByNodes returns the nodes holding state in the keys or sets.
func (mm *ORMultiMap[K, V]) ModifiedByNodes() []cluster.UniqueAddress {
	return mm.m.ModifiedByNodes()
}

// NeedPruningFrom reports whether removed holds state in the keys or sets.
func (mm *ORMultiMap[K, V]) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	return mm.m.NeedPruningFrom(removed)
}

// Prune prunes the keys and the sets.
func (mm *ORMultiMap[K, V]) Prune(removed, into cluster.UniqueAddress) { mm.m.Prune(removed, into) }

// PruningCleanup cleans up the keys and the sets.
func (mm *ORMultiMap[K, V]) PruningCleanup(removed cluster.UniqueAddress) {
	mm.m.PruningCleanup(removed)
}

// EncodeMsgpack writes the map as an ORMap of ORSets.
func (mm *ORMultiMap[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error {
	return mm.m.EncodeMsgpack(enc)
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (mm *ORMultiMap[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error {
	return mm.m.DecodeMsgpack(dec)
}

// ORMultiMapDelta is the delta of an ORMultiMap. It is causal and immutable.
type ORMultiMapDelta[K comparable, V comparable] struct {
	d ORMapDelta[K, *ORSet[V]]
}

// Compose returns the receiver followed by later.
func (d *ORMultiMapDelta[K, V]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*ORMultiMapDelta[K, V])
	if !ok || l == nil {
		return nil, mismatch("*ORMultiMapDelta", later)
	}
	c, _ := d.d.Compose(&l.d)
	return &ORMultiMapDelta[K, V]{d: *c.(*ORMapDelta[K, *ORSet[V]])}, nil
}

// NewData returns a new ORMultiMap.
func (d *ORMultiMapDelta[K, V]) NewData() DeltaData { return NewORMultiMap[K, V]() }

// Causal returns true.
func (d *ORMultiMapDelta[K, V]) Causal() bool { return true }

// Size returns the number of operations, counting those inside the sets' deltas.
func (d *ORMultiMapDelta[K, V]) Size() int { return d.d.Size() }

// EncodeMsgpack writes the delta as an ORMapDelta.
func (d *ORMultiMapDelta[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error {
	return d.d.EncodeMsgpack(enc)
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (d *ORMultiMapDelta[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error {
	return d.d.DecodeMsgpack(dec)
}
