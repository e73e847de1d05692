package actor

import (
	"sort"
	"strconv"
	"strings"
)

// children is a parent's index of its live children, guarded by extras.mu.
//
// Named children live in a nameTable (a sharding shard names each of its entities,
// and may run thousands). Anonymous children can be many (a guardian with a million of
// them is a benchmark, and a real pattern), so they cost no map entry: their ids are
// drawn under the parent's lock, so in spawn order they are in id order, and they are
// appended to fixed-size chunks. A child is found by id with a
// binary search over the chunks' first ids and a short scan inside one chunk, and
// removed by clearing its slot. A chunk that empties stays in the list (its first id
// keeps the search correct) until empty chunks outnumber the others, when the list is
// compacted. So an anonymous child costs one pointer, 8 bytes, where a map entry cost
// about 40, and spawning one is an append.
type children struct {
	named  nameTable
	chunks []*childChunk
	empty  int // chunks whose live count is 0
	anon   int // live anonymous children
}

// chunkSize makes a childChunk exactly 512 bytes, an allocator size class.
const chunkSize = 62

// childChunk holds anonymous children in id order; a nil slot is a child that has
// stopped (or, past used, one not spawned yet).
type childChunk struct {
	first uint64 // id of kids[0]
	used  uint32 // slots filled so far; only the last chunk is still filled
	live  uint32
	kids  [chunkSize]*cell
}

// add indexes a new child. An anonymous child must have the highest id of all the
// anonymous children added so far.
func (cs *children) add(k *cell) {
	if k.name != nil {
		cs.named.add(k)
		return
	}
	var last *childChunk
	if n := len(cs.chunks); n > 0 {
		last = cs.chunks[n-1]
	}
	if last == nil || last.used == chunkSize {
		last = &childChunk{first: k.id}
		cs.chunks = append(cs.chunks, last)
	} else if last.live == 0 {
		cs.empty-- // emptied before, and counted then; not empty any more
	}
	last.kids[last.used] = k
	last.used++
	last.live++
	cs.anon++
}

// count returns the number of live children.
func (cs *children) count() int { return cs.named.len() + cs.anon }

// remove unindexes k and reports whether it was indexed.
func (cs *children) remove(k *cell) bool {
	if k.name != nil {
		return cs.named.remove(k)
	}
	ch := cs.chunkOf(k.id)
	if ch == nil {
		return false
	}
	for i := range ch.used {
		if ch.kids[i] == k {
			ch.kids[i] = nil
			ch.live--
			cs.anon--
			if ch.live == 0 {
				cs.chunkEmptied()
			}
			return true
		}
	}
	return false
}

// chunkEmptied counts an emptied chunk, and drops the empty chunks once they are as many
// as the others. The last chunk stays, so that appends continue in it.
func (cs *children) chunkEmptied() {
	cs.empty++
	if cs.empty*2 < len(cs.chunks) {
		return
	}
	keep := cs.chunks[:0]
	for i, ch := range cs.chunks {
		if ch.live > 0 || i == len(cs.chunks)-1 {
			keep = append(keep, ch)
		}
	}
	clear(cs.chunks[len(keep):])
	cs.chunks = keep
	cs.empty = 0
	if last := keep[len(keep)-1]; last.live == 0 {
		cs.empty = 1
	}
}

// chunkOf returns the chunk that holds (or held) the anonymous child with id, or nil.
func (cs *children) chunkOf(id uint64) *childChunk {
	i := sort.Search(len(cs.chunks), func(i int) bool { return cs.chunks[i].first > id })
	if i == 0 {
		return nil
	}
	return cs.chunks[i-1]
}

// get returns the live child with the given name, or nil.
func (cs *children) get(name string) *cell {
	rest, anonymous := strings.CutPrefix(name, "$")
	if !anonymous {
		return cs.named.get(name)
	}
	id, err := strconv.ParseUint(rest, 36, 64)
	if err != nil || anonymousName(id) != name { // "$01" is not "$1"
		return nil
	}
	ch := cs.chunkOf(id)
	if ch == nil {
		return nil
	}
	for _, k := range ch.kids[:ch.used] {
		if k == nil {
			continue
		}
		if k.id >= id {
			if k.id == id {
				return k
			}
			return nil
		}
	}
	return nil
}

// has reports whether k is a live child.
func (cs *children) has(k *cell) bool {
	if k.name != nil {
		return cs.named.get(*k.name) == k
	}
	ch := cs.chunkOf(k.id)
	if ch == nil {
		return false
	}
	for _, kk := range ch.kids[:ch.used] {
		if kk == k {
			return true
		}
	}
	return false
}

// all returns the live children: the named ones, then the anonymous ones in spawn
// order.
func (cs *children) all() []*cell {
	n := cs.count()
	if n == 0 {
		return nil
	}
	kids := make([]*cell, 0, n)
	cs.named.each(func(k *cell) { kids = append(kids, k) })
	for _, ch := range cs.chunks {
		if ch.live == 0 {
			continue
		}
		for _, k := range ch.kids[:ch.used] {
			if k != nil {
				kids = append(kids, k)
			}
		}
	}
	return kids
}
