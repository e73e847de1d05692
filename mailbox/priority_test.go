package mailbox

import (
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

// job is an element with a priority and an identity, to check FIFO among equals.
type job struct {
	prio, id int
}

func jobPriority(j job) int { return j.prio }

func TestNewPriorityRejectsNilFunc(t *testing.T) {
	p, err := NewPriority[int](nil)
	if !errors.Is(err, ErrInvalidConfig) || p != nil {
		t.Fatalf("NewPriority(nil) = %v, %v; want nil and an error wrapping ErrInvalidConfig", p, err)
	}
}

func TestPriorityOrder(t *testing.T) {
	p, err := NewPriority(jobPriority)
	if err != nil {
		t.Fatal(err)
	}
	in := []job{{1, 0}, {5, 1}, {1, 2}, {-3, 3}, {5, 4}, {0, 5}, {1, 6}, {5, 7}, {-3, 8}}
	for _, j := range in {
		if dropped, r := p.Offer(j); r != Accepted || dropped != (job{}) {
			t.Fatalf("Offer = %v, %v", dropped, r)
		}
	}
	want := []job{{5, 1}, {5, 4}, {5, 7}, {1, 0}, {1, 2}, {1, 6}, {0, 5}, {-3, 3}, {-3, 8}}
	if p.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", p.Len(), len(want))
	}
	for i, w := range want {
		if got, ok := p.Pop(); !ok || got != w {
			t.Fatalf("Pop #%d = %v, %v; want %v", i, got, ok, w)
		}
	}
	if !p.Empty() {
		t.Fatal("not Empty after draining")
	}
	if _, ok := p.Pop(); ok {
		t.Fatal("Pop on an empty mailbox succeeded")
	}
}

func TestPriorityMatchesStableSort(t *testing.T) {
	p, err := NewPriority(jobPriority)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var model []job
	id := 0
	for round := range 500 {
		for range rng.IntN(8) {
			j := job{prio: rng.IntN(5), id: id}
			id++
			p.Offer(j)
			model = append(model, j)
		}
		// The model: highest priority first, arrival order among equals.
		sort.SliceStable(model, func(a, b int) bool { return model[a].prio > model[b].prio })
		for range rng.IntN(8) {
			got, ok := p.Pop()
			if len(model) == 0 {
				if ok {
					t.Fatalf("round %d: popped %v from an empty mailbox", round, got)
				}
				break
			}
			if !ok || got != model[0] {
				t.Fatalf("round %d: Pop = %v, %v; want %v", round, got, ok, model[0])
			}
			model = model[1:]
		}
	}
}

func TestPriorityReleasesLargeHeap(t *testing.T) {
	p, err := NewPriority(func(int) int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		p.Offer(i)
	}
	for i := range 1000 {
		if v, ok := p.Pop(); !ok || v != i {
			t.Fatalf("Pop = %d, %v; want %d", v, ok, i)
		}
	}
	if p.heap != nil {
		t.Fatalf("emptied heap kept capacity %d", cap(p.heap))
	}
}

func TestPriorityConcurrentOffers(t *testing.T) {
	const producers, each = 4, 5000
	p, err := NewPriority(jobPriority)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for i := range each {
				// id encodes producer and sequence; priority alternates by sequence.
				p.Offer(job{prio: i % 3, id: w*each + i})
			}
		})
	}
	wg.Wait()
	// Each producer's elements of one priority must come out in that producer's order,
	// and priorities must never rise.
	last := map[[2]int]int{}
	prev := 1 << 30
	for n := 0; n < producers*each; n++ {
		j, ok := p.Pop()
		if !ok {
			t.Fatalf("only %d of %d elements", n, producers*each)
		}
		if j.prio > prev {
			t.Fatalf("priority rose from %d to %d", prev, j.prio)
		}
		prev = j.prio
		key := [2]int{j.id / each, j.prio}
		if seen, ok := last[key]; ok && j.id <= seen {
			t.Fatalf("producer %d, priority %d: id %d after %d", key[0], key[1], j.id, seen)
		}
		last[key] = j.id
	}
	if !p.Empty() {
		t.Fatal("elements left over")
	}
}

func TestResultAndOverflowStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Accepted.String(), "Accepted"},
		{DroppedNewest.String(), "DroppedNewest"},
		{DroppedOldest.String(), "DroppedOldest"},
		{Rejected.String(), "Rejected"},
		{Result(9).String(), "Result(9)"},
		{DropNewest.String(), "DropNewest"},
		{DropOldest.String(), "DropOldest"},
		{Reject.String(), "Reject"},
		{Overflow(-1).String(), "Overflow(-1)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
