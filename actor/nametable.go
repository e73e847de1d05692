package actor

import "hash/maphash"

// nameTable indexes a parent's named children by name: an open-addressing hash set of
// cells, keyed by the name each cell holds, with linear probing. A slot is one
// pointer, so a child costs about 16 bytes of table at the usual load, where a Go map
// entry (name and pointer) cost 30 to 55: a sharding shard is the parent of every
// entity it runs, a million of them in a headline figure. Guarded, as children, by
// extras.mu.
type nameTable struct {
	slots []*cell // nil or a power of two long; a nil slot is free
	n     int
}

// nameSeed randomises the table's hashes per process: names can come from outside
// (entity ids), and a fixed hash would let a sender make every name collide.
var nameSeed = maphash.MakeSeed()

// minNameSlots is the size of a table's first allocation.
const minNameSlots = 8

func (t *nameTable) len() int { return t.n }

// home is the slot where name's probe sequence starts.
func (t *nameTable) home(name string) int {
	return int(maphash.String(nameSeed, name) & uint64(len(t.slots)-1))
}

// get returns the child named name, or nil.
func (t *nameTable) get(name string) *cell {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(name); ; i = (i + 1) & mask {
		k := t.slots[i]
		if k == nil || *k.name == name {
			return k
		}
	}
}

// add indexes k, whose name no indexed child has.
func (t *nameTable) add(k *cell) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minNameSlots, 2*len(t.slots)))
	}
	t.insert(k)
	t.n++
}

// insert puts k in the first free slot of its probe sequence.
func (t *nameTable) insert(k *cell) {
	mask := len(t.slots) - 1
	i := t.home(*k.name)
	for t.slots[i] != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = k
}

// remove unindexes k and reports whether it was indexed (another child of the same
// name is left alone). The entries after k in its run move back, so that no probe
// sequence has a hole and no slot needs a tombstone.
func (t *nameTable) remove(k *cell) bool {
	if t.n == 0 {
		return false
	}
	mask := len(t.slots) - 1
	i := t.home(*k.name)
	for t.slots[i] != k {
		if t.slots[i] == nil {
			return false
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies cyclically in
		// (i, j]: then the probe from its home reaches j without passing i.
		h := t.home(*t.slots[j].name)
		if (i < j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
	if t.n*8 < len(t.slots) && len(t.slots) > minNameSlots {
		t.resize(len(t.slots) / 2) // many children stopped: give the memory back
	}
	return true
}

// resize moves the entries to a table of size slots.
func (t *nameTable) resize(size int) {
	old := t.slots
	t.slots = make([]*cell, size)
	for _, k := range old {
		if k != nil {
			t.insert(k)
		}
	}
}

// each calls fn for every indexed child.
func (t *nameTable) each(fn func(*cell)) {
	for _, k := range t.slots {
		if k != nil {
			fn(k)
		}
	}
}
