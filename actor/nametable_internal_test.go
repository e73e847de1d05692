package actor

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestNameTableActsAsAMap runs random adds, removes and lookups (few names, so that
// runs collide and wrap, and many removes, so that the table shrinks) against a map.
func TestNameTableActsAsAMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab nameTable
		ref := map[string]*cell{}
		newCell := func(name string) *cell { return &cell{name: &name} }
		for range rapid.IntRange(0, 400).Draw(t, "steps") {
			name := strconv.Itoa(rapid.IntRange(0, 60).Draw(t, "name"))
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				if ref[name] == nil {
					k := newCell(name)
					tab.add(k)
					ref[name] = k
				}
			case 2:
				k := ref[name]
				if k == nil {
					k = newCell(name) // never indexed: not removed
				}
				if got, want := tab.remove(k), ref[name] == k; got != want {
					t.Fatalf("remove %q: %v, want %v", name, got, want)
				}
				delete(ref, name)
			case 3:
				if tab.remove(newCell(name)) {
					t.Fatalf("removed %q through another cell of that name", name)
				}
			}
			if tab.len() != len(ref) {
				t.Fatalf("len %d, want %d", tab.len(), len(ref))
			}
			for i := range 61 {
				n := strconv.Itoa(i)
				if got := tab.get(n); got != ref[n] {
					t.Fatalf("get %q: %p, want %p", n, got, ref[n])
				}
			}
			seen := 0
			tab.each(func(k *cell) {
				seen++
				if ref[*k.name] != k {
					t.Fatalf("each yields %q, not indexed", *k.name)
				}
			})
			if seen != len(ref) {
				t.Fatalf("each yields %d, want %d", seen, len(ref))
			}
			if len(tab.slots) > minNameSlots && tab.n*8 < len(tab.slots) {
				t.Fatalf("%d entries in %d slots: not shrunk", tab.n, len(tab.slots))
			}
		}
	})
}

// A named child costs a slot of about 8 to 16 bytes, not a map entry.
func TestNameTableSize(t *testing.T) {
	var tab nameTable
	for i := range 1000 {
		name := strconv.Itoa(i)
		tab.add(&cell{name: &name})
	}
	if n := len(tab.slots); n > 2048 {
		t.Fatalf("1,000 names in %d slots", n)
	}
}
