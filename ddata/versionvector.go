package ddata

import (
	"maps"
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// Ordering is how two version vectors relate.
type Ordering int

// The orderings Compare reports.
const (
	// Same: both vectors hold the same versions.
	Same Ordering = iota
	// Before: the receiver happened before the other (every version <=, one <).
	Before
	// After: the receiver happened after the other.
	After
	// Concurrent: each holds a version the other has not seen.
	Concurrent
)

// String returns the ordering's name.
func (o Ordering) String() string {
	switch o {
	case Same:
		return "Same"
	case Before:
		return "Before"
	case After:
		return "After"
	case Concurrent:
		return "Concurrent"
	}
	return "Ordering(?)"
}

// VersionVector counts, per node, the changes a replica has seen: a vector clock.
// Merge takes the per-node maximum. The zero value is an empty vector, ready to use.
// It is a CRDT itself, and it can be pruned.
type VersionVector struct {
	v map[cluster.UniqueAddress]uint64
}

// NewVersionVector returns an empty vector.
func NewVersionVector() *VersionVector { return &VersionVector{} }

// Increment adds one to node's version and returns the new version.
func (vv *VersionVector) Increment(node cluster.UniqueAddress) uint64 {
	if vv.v == nil {
		vv.v = make(map[cluster.UniqueAddress]uint64)
	}
	n := vv.v[node] + 1
	vv.v[node] = n
	return n
}

// Version returns node's version, 0 when node has none.
func (vv *VersionVector) Version(node cluster.UniqueAddress) uint64 { return vv.v[node] }

// Len returns the number of nodes with a version.
func (vv *VersionVector) Len() int { return len(vv.v) }

// Merge sets each node's version to the larger of the two.
func (vv *VersionVector) Merge(o *VersionVector) {
	for n, x := range o.v {
		if x > vv.v[n] {
			if vv.v == nil {
				vv.v = make(map[cluster.UniqueAddress]uint64, len(o.v))
			}
			vv.v[n] = x
		}
	}
}

// Compare reports how the receiver relates to o.
func (vv *VersionVector) Compare(o *VersionVector) Ordering {
	less, greater := false, false
	for n, x := range vv.v {
		switch y := o.v[n]; {
		case x < y:
			less = true
		case x > y:
			greater = true
		}
	}
	for n, y := range o.v {
		if _, ok := vv.v[n]; !ok && y > 0 {
			less = true
		}
	}
	switch {
	case less && greater:
		return Concurrent
	case less:
		return Before
	case greater:
		return After
	}
	return Same
}

// Clone returns an independent copy.
func (vv *VersionVector) Clone() *VersionVector {
	return &VersionVector{v: maps.Clone(vv.v)}
}

// MergeData merges a *VersionVector into the receiver.
func (vv *VersionVector) MergeData(other ReplicatedData) error {
	o, ok := other.(*VersionVector)
	if !ok || o == nil {
		return mismatch("*VersionVector", other)
	}
	vv.Merge(o)
	return nil
}

// CloneData returns Clone.
func (vv *VersionVector) CloneData() ReplicatedData { return vv.Clone() }

// ModifiedByNodes returns the nodes with a version, in order.
func (vv *VersionVector) ModifiedByNodes() []cluster.UniqueAddress {
	return sortNodes(slices.Collect(maps.Keys(vv.v)))
}

// NeedPruningFrom reports whether removed has a version.
func (vv *VersionVector) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	_, ok := vv.v[removed]
	return ok
}

// Prune drops removed and increments into, so that the pruned vector is after
// every vector that held removed's version.
func (vv *VersionVector) Prune(removed, into cluster.UniqueAddress) {
	if _, ok := vv.v[removed]; !ok {
		return
	}
	delete(vv.v, removed)
	vv.Increment(into)
}

// PruningCleanup drops removed.
func (vv *VersionVector) PruningCleanup(removed cluster.UniqueAddress) {
	delete(vv.v, removed)
}

// EncodeMsgpack writes [[addr, uid, version]...] in node order.
func (vv *VersionVector) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeCounts(enc, countsOf(vv.v))
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (vv *VersionVector) DecodeMsgpack(dec *msgpack.Decoder) error {
	counts, err := decodeCounts(dec, maxSeq)
	if err != nil {
		return err
	}
	vv.v = countMap(counts)
	return nil
}

// encodeCounts writes per-node counts as [[addr, uid, n]...] in node order, leaving
// out zero counts. counts is not changed.
func encodeCounts(enc *msgpack.Encoder, counts []nodeCount) error {
	counts = slices.DeleteFunc(slices.Clone(counts), func(e nodeCount) bool { return e.n == 0 })
	slices.SortFunc(counts, func(a, b nodeCount) int { return compareNodes(a.node, b.node) })
	if err := enc.EncodeArrayLen(len(counts)); err != nil {
		return err
	}
	for _, e := range counts {
		if err := enc.EncodeArrayLen(3); err != nil {
			return err
		}
		if err := enc.EncodeString(e.node.Addr); err != nil {
			return err
		}
		if err := enc.EncodeUint(e.node.UID); err != nil {
			return err
		}
		if err := enc.EncodeUint(e.n); err != nil {
			return err
		}
	}
	return nil
}

// decodeCounts reads what encodeCounts wrote: nodes strictly increasing, counts
// from 1 to most.
func decodeCounts(dec *msgpack.Decoder, most uint64) ([]nodeCount, error) {
	n, err := decodeLen(dec, "counts", 0, maxNodes)
	if err != nil {
		return nil, err
	}
	counts := make([]nodeCount, 0, n)
	for i := range n {
		if _, err := decodeLen(dec, "count", 3, 3); err != nil {
			return nil, err
		}
		node, err := decodeNodeFields(dec)
		if err != nil {
			return nil, err
		}
		if i > 0 && compareNodes(counts[i-1].node, node) >= 0 {
			return nil, invalid("nodes not in strictly increasing order")
		}
		x, err := decodeUint(dec)
		if err != nil {
			return nil, err
		}
		if x == 0 || x > most {
			return nil, invalid("count %d for %v", x, node)
		}
		counts = append(counts, nodeCount{node: node, n: x})
	}
	return counts, nil
}
