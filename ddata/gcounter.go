package ddata

import (
	"maps"
	"math"
	"math/big"
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// GCounter is a grow-only counter: each node counts its own increments, the value
// is the sum, and a merge keeps each node's larger count. Use it for totals that
// only go up (page views, events processed); use PNCounter when the count also
// goes down.
//
// The zero value is a counter at 0, ready to use. An increment costs one map
// update plus one for the delta.
type GCounter struct {
	state map[cluster.UniqueAddress]uint64
	delta map[cluster.UniqueAddress]uint64 // entries changed since the last TakeDelta
}

// NewGCounter returns a counter at 0.
func NewGCounter() *GCounter { return &GCounter{} }

// Increment adds n to node's count; node is the local node (the replicator's
// SelfUniqueAddress). A count saturates at math.MaxUint64 instead of wrapping.
func (c *GCounter) Increment(node cluster.UniqueAddress, n uint64) {
	if n == 0 {
		return
	}
	if c.state == nil {
		c.state = make(map[cluster.UniqueAddress]uint64)
	}
	x := c.state[node] + n
	if x < n {
		x = math.MaxUint64
	}
	c.state[node] = x
	if c.delta == nil {
		c.delta = make(map[cluster.UniqueAddress]uint64, 1)
	}
	c.delta[node] = x
}

// Value returns the sum of all nodes' counts, saturated at math.MaxUint64 (see
// BigValue for the exact sum).
func (c *GCounter) Value() uint64 {
	var sum uint64
	for _, x := range c.state {
		s := sum + x
		if s < sum {
			return math.MaxUint64
		}
		sum = s
	}
	return sum
}

// BigValue returns the exact sum of all nodes' counts.
func (c *GCounter) BigValue() *big.Int {
	sum, x := new(big.Int), new(big.Int)
	for _, n := range c.state {
		sum.Add(sum, x.SetUint64(n))
	}
	return sum
}

// Merge keeps, per node, the larger count of the receiver and o.
func (c *GCounter) Merge(o *GCounter) { c.mergeCounts(o.state) }

func (c *GCounter) mergeCounts(m map[cluster.UniqueAddress]uint64) {
	for n, x := range m {
		if x > c.state[n] {
			if c.state == nil {
				c.state = make(map[cluster.UniqueAddress]uint64, len(m))
			}
			c.state[n] = x
		}
	}
}

// Clone returns a copy of the state without the pending delta.
func (c *GCounter) Clone() *GCounter { return &GCounter{state: maps.Clone(c.state)} }

// MergeData merges a *GCounter.
func (c *GCounter) MergeData(other ReplicatedData) error {
	o, ok := other.(*GCounter)
	if !ok || o == nil {
		return mismatch("*GCounter", other)
	}
	c.Merge(o)
	return nil
}

// CloneData returns Clone.
func (c *GCounter) CloneData() ReplicatedData { return c.Clone() }

// TakeDelta returns the entries incremented since the last call.
func (c *GCounter) TakeDelta() (Delta, bool) {
	d := c.takeDelta()
	if d == nil {
		return nil, false
	}
	return d, true
}

func (c *GCounter) takeDelta() *GCounterDelta {
	if len(c.delta) == 0 {
		return nil
	}
	d := &GCounterDelta{entries: c.delta}
	c.delta = nil
	return d
}

// MergeDelta applies a *GCounterDelta.
func (c *GCounter) MergeDelta(d Delta) error {
	gd, ok := d.(*GCounterDelta)
	if !ok || gd == nil {
		return mismatch("*GCounterDelta", d)
	}
	c.mergeCounts(gd.entries)
	return nil
}

// NewDelta returns an empty *GCounterDelta.
func (c *GCounter) NewDelta() Delta { return &GCounterDelta{} }

// ModifiedByNodes returns the nodes with a count, in order.
func (c *GCounter) ModifiedByNodes() []cluster.UniqueAddress {
	return sortNodes(slices.Collect(maps.Keys(c.state)))
}

// NeedPruningFrom reports whether removed has a count.
func (c *GCounter) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	_, ok := c.state[removed]
	return ok
}

// Prune adds removed's count to into's and drops removed; the value is unchanged.
func (c *GCounter) Prune(removed, into cluster.UniqueAddress) {
	x, ok := c.state[removed]
	if !ok {
		return
	}
	delete(c.state, removed)
	y := c.state[into] + x
	if y < x {
		y = math.MaxUint64
	}
	c.state[into] = y
}

// PruningCleanup drops removed's count.
func (c *GCounter) PruningCleanup(removed cluster.UniqueAddress) { delete(c.state, removed) }

// EncodeMsgpack writes [[addr, uid, count]...] in node order.
func (c *GCounter) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeCounts(enc, c.state) }

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (c *GCounter) DecodeMsgpack(dec *msgpack.Decoder) error {
	m, err := decodeCounts(dec, math.MaxUint64)
	if err != nil {
		return err
	}
	*c = GCounter{state: m}
	return nil
}

// GCounterDelta is the delta of a GCounter: the new counts of the nodes that
// incremented. It is not causal: applying it twice, or out of order, is harmless.
type GCounterDelta struct {
	entries map[cluster.UniqueAddress]uint64
}

// Compose keeps, per node, the larger count.
func (d *GCounterDelta) Compose(later Delta) (Delta, error) {
	l, ok := later.(*GCounterDelta)
	if !ok || l == nil {
		return nil, mismatch("*GCounterDelta", later)
	}
	return &GCounterDelta{entries: maxCounts(d.entries, l.entries)}, nil
}

// maxCounts returns a new map with the per-node maximum of a and b.
func maxCounts(a, b map[cluster.UniqueAddress]uint64) map[cluster.UniqueAddress]uint64 {
	m := make(map[cluster.UniqueAddress]uint64, len(a)+len(b))
	for n, x := range a {
		m[n] = x
	}
	for n, x := range b {
		if x > m[n] {
			m[n] = x
		}
	}
	return m
}

// NewData returns a new GCounter.
func (d *GCounterDelta) NewData() DeltaData { return NewGCounter() }

// Causal returns false.
func (d *GCounterDelta) Causal() bool { return false }

// Size returns the number of entries.
func (d *GCounterDelta) Size() int { return len(d.entries) }

// EncodeMsgpack writes the entries like a GCounter.
func (d *GCounterDelta) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeCounts(enc, d.entries)
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (d *GCounterDelta) DecodeMsgpack(dec *msgpack.Decoder) error {
	m, err := decodeCounts(dec, math.MaxUint64)
	if err != nil {
		return err
	}
	d.entries = m
	return nil
}
