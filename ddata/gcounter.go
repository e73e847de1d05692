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
	delta []nodeCount // entries changed since the last TakeDelta, usually one
}

// nodeCount is one node's count.
type nodeCount struct {
	node cluster.UniqueAddress
	n    uint64
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
	for i := range c.delta {
		if c.delta[i].node == node {
			c.delta[i].n = x
			return
		}
	}
	c.delta = append(c.delta, nodeCount{node: node, n: x})
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
func (c *GCounter) Merge(o *GCounter) {
	for n, x := range o.state {
		c.raise(n, x)
	}
}

// raise sets node's count to x if x is larger.
func (c *GCounter) raise(node cluster.UniqueAddress, x uint64) {
	if x > c.state[node] {
		if c.state == nil {
			c.state = make(map[cluster.UniqueAddress]uint64)
		}
		c.state[node] = x
	}
}

func (c *GCounter) mergeCounts(counts []nodeCount) {
	for _, e := range counts {
		c.raise(e.node, e.n)
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
func (c *GCounter) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeCounts(enc, countsOf(c.state))
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (c *GCounter) DecodeMsgpack(dec *msgpack.Decoder) error {
	counts, err := decodeCounts(dec, math.MaxUint64)
	if err != nil {
		return err
	}
	*c = GCounter{state: countMap(counts)}
	return nil
}

// countsOf returns a count map as a slice (unsorted).
func countsOf(m map[cluster.UniqueAddress]uint64) []nodeCount {
	out := make([]nodeCount, 0, len(m))
	for n, x := range m {
		out = append(out, nodeCount{node: n, n: x})
	}
	return out
}

// countMap returns counts as a map, nil when empty.
func countMap(counts []nodeCount) map[cluster.UniqueAddress]uint64 {
	if len(counts) == 0 {
		return nil
	}
	m := make(map[cluster.UniqueAddress]uint64, len(counts))
	for _, e := range counts {
		m[e.node] = e.n
	}
	return m
}

// GCounterDelta is the delta of a GCounter: the new counts of the nodes that
// incremented. It is not causal: applying it twice, or out of order, is harmless.
type GCounterDelta struct {
	entries []nodeCount // one per node
}

// Compose keeps, per node, the larger count.
func (d *GCounterDelta) Compose(later Delta) (Delta, error) {
	l, ok := later.(*GCounterDelta)
	if !ok || l == nil {
		return nil, mismatch("*GCounterDelta", later)
	}
	return &GCounterDelta{entries: maxCounts(d.entries, l.entries)}, nil
}

// maxCounts returns a new slice with the per-node maximum of a and b.
func maxCounts(a, b []nodeCount) []nodeCount {
	m := slices.Clone(a)
next:
	for _, e := range b {
		for i := range m {
			if m[i].node == e.node {
				m[i].n = max(m[i].n, e.n)
				continue next
			}
		}
		m = append(m, e)
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
	counts, err := decodeCounts(dec, math.MaxUint64)
	if err != nil {
		return err
	}
	d.entries = counts
	return nil
}
