package ddata

import (
	"cmp"
	"slices"
	"strings"

	"github.com/troupe-go/troupe/cluster"
)

// compareNodes orders nodes by Addr (as bytes), then by UID. Every node computes
// the same order, which is all the encodings and the register's tie-break need.
//
// It is deliberately not member.CompareAddress, the order of every "lowest address"
// rule: this order is part of the wire and durable formats (decoders reject node
// lists out of this order, and durable values on disk were written in it) and of
// LWWRegister's tie-break, which every node of a rolling upgrade must compute alike.
func compareNodes(a, b cluster.UniqueAddress) int {
	if c := strings.Compare(a.Addr, b.Addr); c != 0 {
		return c
	}
	return cmp.Compare(a.UID, b.UID)
}

// sortNodes sorts nodes in place by compareNodes and returns them.
func sortNodes(nodes []cluster.UniqueAddress) []cluster.UniqueAddress {
	slices.SortFunc(nodes, compareNodes)
	return nodes
}

// nodeDot is one event of one node: the node's seq-th change.
type nodeDot struct {
	node cluster.UniqueAddress
	seq  uint64
}

// nodeTable interns the nodes named by one value, so that per-element state refers
// to a node by a small index instead of repeating its address. Indices are never
// reused; a node whose state is pruned keeps its index (and is left out of the
// encoding).
type nodeTable struct {
	nodes []cluster.UniqueAddress
	index map[cluster.UniqueAddress]uint32
}

// id returns n's index, adding n when it is new.
func (t *nodeTable) id(n cluster.UniqueAddress) uint32 {
	if i, ok := t.index[n]; ok {
		return i
	}
	if t.index == nil {
		t.index = make(map[cluster.UniqueAddress]uint32)
	}
	i := uint32(len(t.nodes))
	t.nodes = append(t.nodes, n)
	t.index[n] = i
	return i
}

// lookup returns n's index, if n is in the table.
func (t *nodeTable) lookup(n cluster.UniqueAddress) (uint32, bool) {
	i, ok := t.index[n]
	return i, ok
}

// clone returns an independent copy.
func (t *nodeTable) clone() nodeTable {
	c := nodeTable{nodes: slices.Clone(t.nodes)}
	if t.index != nil {
		c.index = make(map[cluster.UniqueAddress]uint32, len(t.index))
		for k, v := range t.index {
			c.index[k] = v
		}
	}
	return c
}
