package replication

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Defaults of delta propagation (Akka's).
const (
	// DefaultMaxDeltaSize: a composed delta larger than this is not sent; the
	// receiver asks for the full value instead.
	DefaultMaxDeltaSize = 50
	// gossipIntervalDivisor: deltas are propagated every gossip-interval/5.
	gossipIntervalDivisor = 5
	// minDeltaInterval bounds the propagation interval from below.
	minDeltaInterval = 200 * time.Millisecond
	// maxDeltaEntries bounds the deltas kept per key for nodes that have not
	// been sent them; a node that falls further behind gets the full value.
	maxDeltaEntries = 1000
)

// DeltaInterval returns how often deltas are propagated: max(gossip/5, 200ms).
func DeltaInterval(gossip time.Duration) time.Duration {
	return max(gossip/gossipIntervalDivisor, minDeltaInterval)
}

// Composer is what delta propagation needs of a delta: composing it with a later
// one of the same key and origin, and its size (ddata's Delta).
type Composer[D any] interface {
	// Compose returns a delta with the effect of the receiver followed by later,
	// or an error when they do not compose.
	Compose(later D) (D, error)
	// Size returns the number of elements the delta carries.
	Size() int
}

// deltaEntry is one local change of a key: its delta, or none when the change has
// no delta and needs the full value.
type deltaEntry[D any] struct {
	seq      uint64
	delta    D
	hasDelta bool
}

// DeltaSend is what delta propagation sends one node for one key: the composition
// of the key's deltas FromSeq..ToSeq, or, when Full, no delta: they cannot be sent
// as one (a change without a delta, deltas that do not compose, or a composition
// larger than the maximum size), and the receiver is to ask for the full value.
type DeltaSend[D any] struct {
	Key            string
	Delta          D
	Full           bool
	FromSeq, ToSeq uint64
}

// DeltaPropagation is the sending side of delta propagation: it numbers the local
// deltas of each key 1, 2, 3, ..., and every propagation tick picks a few nodes
// round-robin and builds, per node, the deltas of each key it has not been sent, as
// one composed delta per key with its sequence range.
//
// The replicator may take a key's delta after every update (as Akka does) or, for
// WriteLocal updates, mark the key and take its delta once per propagation tick.
// Before a write with another consistency level, take the key's pending delta
// first, so that what the write sends is numbered.
type DeltaPropagation[N comparable, D Composer[D]] struct {
	maxDeltaSize int
	cmp          func(a, b N) int
	nodes        []N                        // the other nodes, sorted
	entries      map[string][]deltaEntry[D] // per key, in seq order
	seq          map[string]uint64          // per key, the last seq given
	sent         map[string]map[N]uint64
	round        int
}

// NewDeltaPropagation returns an empty propagation; nodes are ordered by cmp.
// maxDeltaSize <= 0 means DefaultMaxDeltaSize.
func NewDeltaPropagation[N comparable, D Composer[D]](maxDeltaSize int, cmp func(a, b N) int) *DeltaPropagation[N, D] {
	if maxDeltaSize <= 0 {
		maxDeltaSize = DefaultMaxDeltaSize
	}
	return &DeltaPropagation[N, D]{
		maxDeltaSize: maxDeltaSize,
		cmp:          cmp,
		entries:      make(map[string][]deltaEntry[D]),
		seq:          make(map[string]uint64),
		sent:         make(map[string]map[N]uint64),
	}
}

// SetNodes replaces the set of other nodes (reachable members). Removed nodes are
// forgotten.
func (p *DeltaPropagation[N, D]) SetNodes(nodes []N) {
	p.nodes = slices.SortedFunc(slices.Values(nodes), p.cmp)
	for _, m := range p.sent {
		for n := range m {
			if _, ok := slices.BinarySearchFunc(p.nodes, n, p.cmp); !ok {
				delete(m, n)
			}
		}
	}
}

// Update records a local change of key with its delta and returns the change's
// sequence number. The replicator stores it in the key's envelope, so that the
// full value tells which deltas it includes.
func (p *DeltaPropagation[N, D]) Update(key string, d D) uint64 {
	return p.add(key, deltaEntry[D]{delta: d, hasDelta: true})
}

// UpdateFull records a local change of key that has no delta (it travels as full
// state) and returns its sequence number.
func (p *DeltaPropagation[N, D]) UpdateFull(key string) uint64 {
	return p.add(key, deltaEntry[D]{})
}

func (p *DeltaPropagation[N, D]) add(key string, e deltaEntry[D]) uint64 {
	s := p.seq[key] + 1
	p.seq[key] = s
	e.seq = s
	list := append(p.entries[key], e)
	if len(list) > maxDeltaEntries {
		list = slices.Delete(list, 0, len(list)-maxDeltaEntries)
	}
	p.entries[key] = list
	return s
}

// Bump records a local change of key that no node is sent as a delta (there is
// no node to send it to) and returns its sequence number. It forgets the key's
// pending entries: a node that later gets the key's next delta sees the gap and
// asks for the full value, which holds the change.
func (p *DeltaPropagation[N, D]) Bump(key string) uint64 {
	s := p.seq[key] + 1
	p.seq[key] = s
	delete(p.entries, key)
	return s
}

// CurrentVersion returns the last sequence number given for key.
func (p *DeltaPropagation[N, D]) CurrentVersion(key string) uint64 { return p.seq[key] }

// LastDelta returns key's last recorded change when it has a delta no larger than
// the maximum size: what a write may send instead of the full value.
func (p *DeltaPropagation[N, D]) LastDelta(key string) (d D, seq uint64, ok bool) {
	list := p.entries[key]
	if len(list) == 0 {
		return d, 0, false
	}
	last := list[len(list)-1]
	if !last.hasDelta || last.delta.Size() > p.maxDeltaSize {
		return d, 0, false
	}
	return last.delta, last.seq, true
}

// Delete forgets key.
func (p *DeltaPropagation[N, D]) Delete(key string) {
	delete(p.entries, key)
	delete(p.seq, key)
	delete(p.sent, key)
}

// SliceSize returns how many nodes a tick sends to: between 2 and 10, about a fifth
// of the nodes (so every node is reached within a gossip interval).
func SliceSize(n int) int {
	return min(max(n/gossipIntervalDivisor+1, 2), min(n, 10))
}

// Collect picks this tick's nodes and returns what to send each (nodes with nothing
// to send are left out), marking it sent. Entries every node has been sent are
// dropped.
func (p *DeltaPropagation[N, D]) Collect() map[N][]DeltaSend[D] {
	if len(p.nodes) == 0 || len(p.entries) == 0 {
		return nil
	}
	size := SliceSize(len(p.nodes))
	start := (p.round * size) % len(p.nodes)
	p.round++
	type rangeKey struct {
		key      string
		from, to uint64
	}
	type composed struct {
		d  D
		ok bool
	}
	cache := make(map[rangeKey]composed)
	out := make(map[N][]DeltaSend[D])
	keys := slices.Sorted(maps.Keys(p.entries))
	for i := range size {
		node := p.nodes[(start+i)%len(p.nodes)]
		for _, key := range keys {
			entries := p.entries[key]
			last := p.sent[key][node]
			j, _ := slices.BinarySearchFunc(entries, last+1, func(e deltaEntry[D], s uint64) int {
				return cmp.Compare(e.seq, s)
			})
			pending := entries[j:]
			if len(pending) == 0 {
				continue
			}
			rk := rangeKey{key, pending[0].seq, pending[len(pending)-1].seq}
			c, ok := cache[rk]
			if !ok {
				c.d, c.ok = p.compose(pending)
				cache[rk] = c
			}
			out[node] = append(out[node], DeltaSend[D]{Key: key, Delta: c.d, Full: !c.ok, FromSeq: rk.from, ToSeq: rk.to})
			if p.sent[key] == nil {
				p.sent[key] = make(map[N]uint64)
			}
			p.sent[key][node] = rk.to
		}
	}
	p.cleanup()
	return out
}

// compose composes entries into one delta; false when one has no delta, they do
// not compose, or the result is larger than maxDeltaSize.
func (p *DeltaPropagation[N, D]) compose(entries []deltaEntry[D]) (D, bool) {
	var d, zero D
	for i, e := range entries {
		if !e.hasDelta {
			return zero, false
		}
		if i == 0 {
			d = e.delta
			continue
		}
		var err error
		if d, err = d.Compose(e.delta); err != nil {
			return zero, false
		}
	}
	if d.Size() > p.maxDeltaSize {
		return zero, false
	}
	return d, true
}

// cleanup drops the entries every node has been sent.
func (p *DeltaPropagation[N, D]) cleanup() {
	for key, entries := range p.entries {
		lowest := uint64(0)
		for i, n := range p.nodes {
			s := p.sent[key][n]
			if i == 0 || s < lowest {
				lowest = s
			}
		}
		j := 0
		for j < len(entries) && entries[j].seq <= lowest {
			j++
		}
		if j == len(entries) {
			delete(p.entries, key) // seq and sent stay: numbering goes on
		} else if j > 0 {
			p.entries[key] = slices.Clone(entries[j:])
		}
	}
}

// DeltaVerdict is what a receiver does with a delta.
type DeltaVerdict uint8

// The verdicts.
const (
	DeltaApply    DeltaVerdict = iota // apply it, then record toSeq
	DeltaSeen                         // every change in it is included already: ignore it
	DeltaNeedFull                     // a gap or no delta: ask the sender for the full value
)

// Received describes the receiver's side of a delta of one key from one origin.
type Received struct {
	HasDelta bool   // the sender sent a delta (not "ask for the full value")
	Causal   bool   // the delta's type must be applied in order per origin
	Deleted  bool   // the receiver holds the key as deleted
	Current  uint64 // the last sequence number of the origin the receiver includes
	FromSeq  uint64
	ToSeq    uint64
}

// CheckDelta decides about a received delta. A missing delta needs the full
// value. A key deleted here ignores it. Deltas that are not causal are always
// applied (they are idempotent). Causal deltas apply only when they continue what
// the receiver has from the origin; a composition that overlaps it is applied
// whole (re-applying is harmless).
func CheckDelta(r Received) DeltaVerdict {
	switch {
	case !r.HasDelta:
		return DeltaNeedFull
	case r.Deleted:
		return DeltaSeen
	case !r.Causal:
		return DeltaApply
	case r.ToSeq <= r.Current:
		return DeltaSeen
	case r.FromSeq > r.Current+1:
		return DeltaNeedFull
	}
	return DeltaApply
}
