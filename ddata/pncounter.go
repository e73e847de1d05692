package ddata

import (
	"math"
	"math/big"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// PNCounter is a counter that goes up and down: two GCounters, one for increments
// and one for decrements, and the value is their difference. Use it for quantities
// such as stock levels or active sessions.
//
// The zero value is a counter at 0, ready to use.
type PNCounter struct {
	p, n GCounter
}

// NewPNCounter returns a counter at 0.
func NewPNCounter() *PNCounter { return &PNCounter{} }

// Increment adds n on behalf of node (the local node).
func (c *PNCounter) Increment(node cluster.UniqueAddress, n uint64) { c.p.Increment(node, n) }

// Decrement subtracts n on behalf of node (the local node).
func (c *PNCounter) Decrement(node cluster.UniqueAddress, n uint64) { c.n.Increment(node, n) }

// Add adds delta, which may be negative, on behalf of node.
func (c *PNCounter) Add(node cluster.UniqueAddress, delta int64) {
	if delta >= 0 {
		c.Increment(node, uint64(delta))
	} else {
		c.Decrement(node, uint64(-(delta+1))+1)
	}
}

// Value returns increments minus decrements, clamped to the int64 range (see
// BigValue for the exact difference).
func (c *PNCounter) Value() int64 {
	p, n := c.p.Value(), c.n.Value()
	if p == math.MaxUint64 || n == math.MaxUint64 {
		v := c.BigValue()
		switch {
		case v.IsInt64():
			return v.Int64()
		case v.Sign() > 0:
			return math.MaxInt64
		default:
			return math.MinInt64
		}
	}
	if p >= n {
		return int64(min(p-n, math.MaxInt64))
	}
	d := n - p
	if d >= 1<<63 {
		return math.MinInt64
	}
	return -int64(d)
}

// BigValue returns the exact difference.
func (c *PNCounter) BigValue() *big.Int {
	return new(big.Int).Sub(c.p.BigValue(), c.n.BigValue())
}

// Merge merges the increments and the decrements of o.
func (c *PNCounter) Merge(o *PNCounter) {
	c.p.Merge(&o.p)
	c.n.Merge(&o.n)
}

// Clone returns a copy of the state without the pending delta.
func (c *PNCounter) Clone() *PNCounter {
	return &PNCounter{p: *c.p.Clone(), n: *c.n.Clone()}
}

// MergeData merges a *PNCounter.
func (c *PNCounter) MergeData(other ReplicatedData) error {
	o, ok := other.(*PNCounter)
	if !ok || o == nil {
		return mismatch("*PNCounter", other)
	}
	c.Merge(o)
	return nil
}

// CloneData returns Clone.
func (c *PNCounter) CloneData() ReplicatedData { return c.Clone() }

// TakeDelta returns the counts changed since the last call.
func (c *PNCounter) TakeDelta() (Delta, bool) {
	p, n := c.p.takeDelta(), c.n.takeDelta()
	if p == nil && n == nil {
		return nil, false
	}
	d := &PNCounterDelta{}
	if p != nil {
		d.p = p.entries
	}
	if n != nil {
		d.n = n.entries
	}
	return d, true
}

// MergeDelta applies a *PNCounterDelta.
func (c *PNCounter) MergeDelta(d Delta) error {
	pd, ok := d.(*PNCounterDelta)
	if !ok || pd == nil {
		return mismatch("*PNCounterDelta", d)
	}
	c.p.mergeCounts(pd.p)
	c.n.mergeCounts(pd.n)
	return nil
}

// NewDelta returns an empty *PNCounterDelta.
func (c *PNCounter) NewDelta() Delta { return &PNCounterDelta{} }

// ModifiedByNodes returns the nodes with a count, in order.
func (c *PNCounter) ModifiedByNodes() []cluster.UniqueAddress {
	seen := make(map[cluster.UniqueAddress]bool)
	var out []cluster.UniqueAddress
	for _, g := range []*GCounter{&c.p, &c.n} {
		for n := range g.state {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return sortNodes(out)
}

// NeedPruningFrom reports whether removed has a count.
func (c *PNCounter) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	return c.p.NeedPruningFrom(removed) || c.n.NeedPruningFrom(removed)
}

// Prune moves removed's counts to into; the value is unchanged.
func (c *PNCounter) Prune(removed, into cluster.UniqueAddress) {
	c.p.Prune(removed, into)
	c.n.Prune(removed, into)
}

// PruningCleanup drops removed's counts.
func (c *PNCounter) PruningCleanup(removed cluster.UniqueAddress) {
	c.p.PruningCleanup(removed)
	c.n.PruningCleanup(removed)
}

// EncodeMsgpack writes [increments, decrements], each like a GCounter.
func (c *PNCounter) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeCountPair(enc, countsOf(c.p.state), countsOf(c.n.state))
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (c *PNCounter) DecodeMsgpack(dec *msgpack.Decoder) error {
	p, n, err := decodeCountPair(dec)
	if err != nil {
		return err
	}
	*c = PNCounter{p: GCounter{state: countMap(p)}, n: GCounter{state: countMap(n)}}
	return nil
}

func encodeCountPair(enc *msgpack.Encoder, p, n []nodeCount) error {
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := encodeCounts(enc, p); err != nil {
		return err
	}
	return encodeCounts(enc, n)
}

func decodeCountPair(dec *msgpack.Decoder) (p, n []nodeCount, err error) {
	if _, err = decodeLen(dec, "PNCounter", 2, 2); err != nil {
		return nil, nil, err
	}
	if p, err = decodeCounts(dec, math.MaxUint64); err != nil {
		return nil, nil, err
	}
	if n, err = decodeCounts(dec, math.MaxUint64); err != nil {
		return nil, nil, err
	}
	return p, n, nil
}

// PNCounterDelta is the delta of a PNCounter. It is not causal.
type PNCounterDelta struct {
	p, n []nodeCount
}

// Compose keeps, per node, the larger counts.
func (d *PNCounterDelta) Compose(later Delta) (Delta, error) {
	l, ok := later.(*PNCounterDelta)
	if !ok || l == nil {
		return nil, mismatch("*PNCounterDelta", later)
	}
	return &PNCounterDelta{p: maxCounts(d.p, l.p), n: maxCounts(d.n, l.n)}, nil
}

// NewData returns a new PNCounter.
func (d *PNCounterDelta) NewData() DeltaData { return NewPNCounter() }

// Causal returns false.
func (d *PNCounterDelta) Causal() bool { return false }

// Size returns the number of entries.
func (d *PNCounterDelta) Size() int { return len(d.p) + len(d.n) }

// EncodeMsgpack writes [increments, decrements].
func (d *PNCounterDelta) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeCountPair(enc, d.p, d.n)
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (d *PNCounterDelta) DecodeMsgpack(dec *msgpack.Decoder) error {
	p, n, err := decodeCountPair(dec)
	if err != nil {
		return err
	}
	d.p, d.n = p, n
	return nil
}
