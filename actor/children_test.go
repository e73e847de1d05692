package actor

import (
	"math/rand/v2"
	"testing"
)

// The children index against a plain map, through spawns and stops in random orders
// that empty chunks, compact the chunk list and keep appending.
func TestChildrenIndexMatchesAMap(t *testing.T) {
	for _, order := range []string{"in order", "reversed", "random", "interleaved"} {
		t.Run(order, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var cs children
			want := map[string]*cell{}
			var live []*cell
			id := uint64(0)
			spawn := func(named bool) {
				id += 1 + uint64(rng.IntN(3)) // ids of siblings grow, with gaps
				k := &cell{id: id}
				if named {
					n := "n" + anonymousName(id)[1:]
					k.name = &n
				}
				cs.add(k)
				want[k.nameOf()] = k
				live = append(live, k)
			}
			stop := func(i int) {
				k := live[i]
				live = append(live[:i], live[i+1:]...)
				if !cs.remove(k) {
					t.Fatalf("remove %s: not found", k.nameOf())
				}
				if cs.remove(k) || cs.has(k) {
					t.Fatalf("%s still indexed after remove", k.nameOf())
				}
				delete(want, k.nameOf())
			}
			for round := range 3 {
				for i := range 500 {
					spawn(i%50 == 0)
				}
				for len(live) > 100*round {
					switch order {
					case "in order":
						stop(0)
					case "reversed":
						stop(len(live) - 1)
					case "random":
						stop(rng.IntN(len(live)))
					case "interleaved":
						stop(rng.IntN(len(live)))
						if rng.IntN(3) == 0 {
							spawn(false)
						}
					}
					if rng.IntN(20) == 0 {
						check(t, &cs, want)
					}
				}
				check(t, &cs, want)
			}
		})
	}
}

func check(t *testing.T, cs *children, want map[string]*cell) {
	t.Helper()
	if cs.count() != len(want) {
		t.Fatalf("count %d, want %d", cs.count(), len(want))
	}
	all := cs.all()
	if len(all) != len(want) {
		t.Fatalf("all has %d, want %d", len(all), len(want))
	}
	for _, k := range all {
		if want[k.nameOf()] != k {
			t.Fatalf("all has %s, which is not live", k.nameOf())
		}
	}
	for name, k := range want {
		if cs.get(name) != k || !cs.has(k) {
			t.Fatalf("%s not found", name)
		}
	}
	for _, bad := range []string{"$", "$0", "$01", "$zzzzzzzzzzzzzz", "nobody", "$-1"} {
		if k := cs.get(bad); k != nil && want[bad] != k {
			t.Fatalf("get(%q) = %s", bad, k.nameOf())
		}
	}
	empty := 0
	for _, ch := range cs.chunks {
		if ch.live == 0 {
			empty++
		}
	}
	if empty != cs.empty || empty*2 > len(cs.chunks)+1 {
		t.Fatalf("%d of %d chunks are empty (counted %d): not compacted", empty, len(cs.chunks), cs.empty)
	}
}
