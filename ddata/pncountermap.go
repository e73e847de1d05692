package ddata

import (
	"iter"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// PNCounterMap maps keys to PNCounters: an ORMap of counters. Use it for many
// counters under one replicator key (votes per option, stock per product).
//
// The zero value is an empty map, ready to use.
type PNCounterMap[K comparable] struct {
	m ORMap[K, *PNCounter]
}

// NewPNCounterMap returns an empty map.
func NewPNCounterMap[K comparable]() *PNCounterMap[K] { return &PNCounterMap[K]{} }

// Increment adds n to key's counter on behalf of node (the local node), creating
// the counter at 0 when key is absent.
func (c *PNCounterMap[K]) Increment(node cluster.UniqueAddress, key K, n uint64) {
	_ = c.m.Update(node, key, NewPNCounter, func(p *PNCounter) { p.Increment(node, n) }) // cannot fail with an init
}

// Decrement subtracts n from key's counter on behalf of node (the local node).
func (c *PNCounterMap[K]) Decrement(node cluster.UniqueAddress, key K, n uint64) {
	_ = c.m.Update(node, key, NewPNCounter, func(p *PNCounter) { p.Decrement(node, n) }) // cannot fail with an init
}

// Get returns key's counter value.
func (c *PNCounterMap[K]) Get(key K) (int64, bool) {
	p, ok := c.m.Get(key)
	if !ok {
		return 0, false
	}
	return p.Value(), true
}

// Remove removes key. A concurrent increment elsewhere keeps the key, and the
// counter then also holds what it had before the remove (as in Akka).
func (c *PNCounterMap[K]) Remove(key K) { c.m.Remove(key) }

// Len returns the number of keys.
func (c *PNCounterMap[K]) Len() int { return c.m.Len() }

// Keys returns the keys in a new slice, in no particular order.
func (c *PNCounterMap[K]) Keys() []K { return c.m.Keys() }

// All iterates over the keys and counter values in no particular order.
func (c *PNCounterMap[K]) All() iter.Seq2[K, int64] {
	return func(yield func(K, int64) bool) {
		for k, p := range c.m.All() {
			if !yield(k, p.Value()) {
				return
			}
		}
	}
}

// Merge merges o.
func (c *PNCounterMap[K]) Merge(o *PNCounterMap[K]) { _ = c.m.Merge(&o.m) } // counters never fail

// Clone returns a copy without the pending delta.
func (c *PNCounterMap[K]) Clone() *PNCounterMap[K] { return &PNCounterMap[K]{m: *c.m.Clone()} }

// MergeData merges a *PNCounterMap[K].
func (c *PNCounterMap[K]) MergeData(other ReplicatedData) error {
	o, ok := other.(*PNCounterMap[K])
	if !ok || o == nil {
		return mismatch("*PNCounterMap", other)
	}
	c.Merge(o)
	return nil
}

// CloneData returns Clone.
func (c *PNCounterMap[K]) CloneData() ReplicatedData { return c.Clone() }

// TakeDelta returns the changes since the last call as a *PNCounterMapDelta[K].
func (c *PNCounterMap[K]) TakeDelta() (Delta, bool) {
	d, changed := c.m.TakeDelta()
	if d == nil {
		return nil, changed
	}
	return &PNCounterMapDelta[K]{d: *d.(*ORMapDelta[K, *PNCounter])}, true
}

// MergeDelta applies a *PNCounterMapDelta[K].
func (c *PNCounterMap[K]) MergeDelta(d Delta) error {
	pd, ok := d.(*PNCounterMapDelta[K])
	if !ok || pd == nil {
		return mismatch("*PNCounterMapDelta", d)
	}
	return c.m.applyOps(pd.d.ops)
}

// NewDelta returns an empty *PNCounterMapDelta[K].
func (c *PNCounterMap[K]) NewDelta() Delta { return &PNCounterMapDelta[K]{} }

// ModifiedByNodes returns the nodes holding state in the keys or counters.
func (c *PNCounterMap[K]) ModifiedByNodes() []cluster.UniqueAddress { return c.m.ModifiedByNodes() }

// NeedPruningFrom reports whether removed holds state in the keys or counters.
func (c *PNCounterMap[K]) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	return c.m.NeedPruningFrom(removed)
}

// Prune prunes the keys and the counters; every counter keeps its value.
func (c *PNCounterMap[K]) Prune(removed, into cluster.UniqueAddress) { c.m.Prune(removed, into) }

// PruningCleanup cleans up the keys and the counters.
func (c *PNCounterMap[K]) PruningCleanup(removed cluster.UniqueAddress) {
	c.m.PruningCleanup(removed)
}

// EncodeMsgpack writes the map as an ORMap of PNCounters.
func (c *PNCounterMap[K]) EncodeMsgpack(enc *msgpack.Encoder) error { return c.m.EncodeMsgpack(enc) }

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (c *PNCounterMap[K]) DecodeMsgpack(dec *msgpack.Decoder) error { return c.m.DecodeMsgpack(dec) }

// PNCounterMapDelta is the delta of a PNCounterMap. It is causal and immutable.
type PNCounterMapDelta[K comparable] struct {
	d ORMapDelta[K, *PNCounter]
}

// Compose returns the receiver followed by later.
func (d *PNCounterMapDelta[K]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*PNCounterMapDelta[K])
	if !ok || l == nil {
		return nil, mismatch("*PNCounterMapDelta", later)
	}
	c, _ := d.d.Compose(&l.d)
	return &PNCounterMapDelta[K]{d: *c.(*ORMapDelta[K, *PNCounter])}, nil
}

// NewData returns a new PNCounterMap.
func (d *PNCounterMapDelta[K]) NewData() DeltaData { return NewPNCounterMap[K]() }

// Causal returns true.
func (d *PNCounterMapDelta[K]) Causal() bool { return true }

// Size returns the number of operations and counter entries.
func (d *PNCounterMapDelta[K]) Size() int { return d.d.Size() }

// EncodeMsgpack writes the delta as an ORMapDelta.
func (d *PNCounterMapDelta[K]) EncodeMsgpack(enc *msgpack.Encoder) error {
	return d.d.EncodeMsgpack(enc)
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (d *PNCounterMapDelta[K]) DecodeMsgpack(dec *msgpack.Decoder) error {
	return d.d.DecodeMsgpack(dec)
}
