package ddata

import "slices"

// dot is one event of one node within a value: the seq-th change made by the node
// at index node of the value's nodeTable.
type dot struct {
	node uint32
	seq  uint64
}

// dotSet holds the dots that keep one element alive: never empty, at most one dot
// per node. A dotSet is immutable once stored (operations build new ones), so
// clones of a value may share the overflow slice.
type dotSet struct {
	first dot
	more  []dot
}

// size returns the number of dots.
func (d *dotSet) size() int { return 1 + len(d.more) }

// at returns the i-th dot.
func (d *dotSet) at(i int) dot {
	if i == 0 {
		return d.first
	}
	return d.more[i-1]
}

// seqOf returns the seq of node's dot, or 0 when the set has none.
func (d *dotSet) seqOf(node uint32) uint64 {
	if d.first.node == node {
		return d.first.seq
	}
	for _, x := range d.more {
		if x.node == node {
			return x.seq
		}
	}
	return 0
}

// equal reports whether both sets hold the same dots (same node indices).
func (d *dotSet) equal(o *dotSet) bool {
	if d.size() != o.size() {
		return false
	}
	if d.first == o.first && slices.Equal(d.more, o.more) {
		return true
	}
	for i := range d.size() {
		x := d.at(i)
		if o.seqOf(x.node) != x.seq {
			return false
		}
	}
	return true
}

// packDots turns a non-empty scratch slice into a dotSet that owns its storage.
func packDots(buf []dot) dotSet {
	ds := dotSet{first: buf[0]}
	if len(buf) > 1 {
		ds.more = slices.Clone(buf[1:])
	}
	return ds
}

// coveredBy reports whether vv (indexed like the dot's node) has seen d.
func (d dot) coveredBy(vv []uint64) bool {
	return int(d.node) < len(vv) && d.seq <= vv[d.node]
}

// coveredByDots reports whether some dot of ctx, of d's node, is at or after d.
func (d dot) coveredByDots(ctx []dot) bool {
	for _, c := range ctx {
		if c.node == d.node && d.seq <= c.seq {
			return true
		}
	}
	return false
}
