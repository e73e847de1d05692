package mailbox

import (
	"errors"
	"runtime"
	"sync"
	"testing"
)

func TestNewBoundedRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		overflow Overflow
	}{
		{"zero capacity", 0, DropNewest},
		{"negative capacity", -3, DropOldest},
		{"policy below range", 4, Overflow(-1)},
		{"policy above range", 4, Reject + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBounded[int](tc.capacity, tc.overflow)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want one wrapping ErrInvalidConfig", err)
			}
			if b != nil {
				t.Fatal("returned a mailbox along with the error")
			}
		})
	}
}

// offerResult is one step of a policy table: offer v, expect r and dropped.
type offerResult struct {
	v, dropped int
	r          Result
}

func TestBoundedOverflowPolicies(t *testing.T) {
	for _, tc := range []struct {
		overflow Overflow
		steps    []offerResult
		remain   []int
	}{
		{DropNewest, []offerResult{{1, 0, Accepted}, {2, 0, Accepted}, {3, 0, Accepted}, {4, 4, DroppedNewest}, {5, 5, DroppedNewest}}, []int{1, 2, 3}},
		{DropOldest, []offerResult{{1, 0, Accepted}, {2, 0, Accepted}, {3, 0, Accepted}, {4, 1, DroppedOldest}, {5, 2, DroppedOldest}}, []int{3, 4, 5}},
		{Reject, []offerResult{{1, 0, Accepted}, {2, 0, Accepted}, {3, 0, Accepted}, {4, 0, Rejected}, {5, 0, Rejected}}, []int{1, 2, 3}},
	} {
		t.Run(tc.overflow.String(), func(t *testing.T) {
			b, err := NewBounded[int](3, tc.overflow)
			if err != nil {
				t.Fatal(err)
			}
			if b.Cap() != 3 || b.Overflow() != tc.overflow {
				t.Fatalf("Cap, Overflow = %d, %v", b.Cap(), b.Overflow())
			}
			for _, s := range tc.steps {
				dropped, r := b.Offer(s.v)
				if r != s.r || dropped != s.dropped {
					t.Fatalf("Offer(%d) = %d, %v; want %d, %v", s.v, dropped, r, s.dropped, s.r)
				}
			}
			if b.Len() != len(tc.remain) {
				t.Fatalf("Len = %d, want %d", b.Len(), len(tc.remain))
			}
			for _, want := range tc.remain {
				if v, ok := b.Pop(); !ok || v != want {
					t.Fatalf("Pop = %d, %v; want %d", v, ok, want)
				}
			}
			if !b.Empty() {
				t.Fatal("not Empty after draining")
			}
			if _, ok := b.Pop(); ok {
				t.Fatal("Pop on an empty mailbox succeeded")
			}
		})
	}
}

func TestBoundedRingWrapsAndGrows(t *testing.T) {
	b, err := NewBounded[int](100, DropOldest)
	if err != nil {
		t.Fatal(err)
	}
	if b.ring != nil {
		t.Fatal("a new Bounded allocated its ring before the first Offer")
	}
	next, want := 0, 0
	for round := range 300 {
		for range round%13 + 1 {
			if _, r := b.Offer(next); r != Accepted && r != DroppedOldest {
				t.Fatalf("Offer = %v", r)
			}
			next++
		}
		if n := next - want; n > 100 {
			want += n - 100 // DropOldest kept the newest 100
		}
		for range round % 11 {
			v, ok := b.Pop()
			if want == next {
				if ok {
					t.Fatalf("round %d: popped %d from an empty mailbox", round, v)
				}
				break
			}
			if !ok || v != want {
				t.Fatalf("round %d: Pop = %d, %v; want %d", round, v, ok, want)
			}
			want++
		}
	}
	if len(b.ring) > b.Cap() {
		t.Fatalf("ring grew to %d past capacity %d", len(b.ring), b.Cap())
	}
}

func TestBoundedPopClearsSlot(t *testing.T) {
	b, err := NewBounded[*int](2, DropNewest)
	if err != nil {
		t.Fatal(err)
	}
	b.Offer(new(int))
	b.Pop()
	for i, p := range b.ring {
		if p != nil {
			t.Fatalf("slot %d still holds a popped element", i)
		}
	}
}

func TestBoundedConcurrentOffers(t *testing.T) {
	const producers, each, capacity = 4, 5000, 64
	b, err := NewBounded[int](capacity, Reject)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	rejected := 0
	for p := range producers {
		wg.Go(func() {
			n := 0
			for i := range each {
				if _, r := b.Offer(p*each + i); r == Rejected {
					n++
				}
			}
			mu.Lock()
			rejected += n
			mu.Unlock()
		})
	}
	got := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; ; {
		if _, ok := b.Pop(); ok {
			got++
			continue
		}
		if finished {
			break
		}
		select {
		case <-done:
			finished = true
		default:
			runtime.Gosched()
		}
	}
	if got+rejected != producers*each {
		t.Fatalf("popped %d + rejected %d != offered %d", got, rejected, producers*each)
	}
}
