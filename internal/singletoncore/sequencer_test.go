package singletoncore

import (
	"slices"
	"testing"

	"github.com/troupe-go/troupe/member"
)

func seqs(es []Envelope) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func TestSequencer(t *testing.T) {
	never := func(member.UniqueAddress) bool { return false }
	gone := func(n member.UniqueAddress) bool { return n == node(1) }
	type step struct {
		add  Envelope
		want []uint64
	}
	cases := []struct {
		name     string
		table    []ProxyNext
		released func(member.UniqueAddress) bool
		steps    []step
		held     int
	}{
		{
			name:  "a new proxy's first epoch passes",
			steps: []step{{env(5, 1, 0, 0), []uint64{1}}, {env(5, 2, 0, 0), []uint64{2}}},
		},
		{
			name:  "in order after the table",
			table: []ProxyNext{{Proxy: proxyOn(5), Next: 7}},
			steps: []step{{env(5, 7, 3, 1), []uint64{7}}, {env(5, 8, 3, 1), []uint64{8}}},
		},
		{
			name:  "a later epoch waits for the earlier one",
			table: []ProxyNext{{Proxy: proxyOn(5), Next: 4}},
			steps: []step{
				{env(5, 7, 6, 1), nil},
				{env(5, 8, 6, 1), nil},
				{env(5, 4, 0, 0), []uint64{4}},
				{env(5, 6, 0, 0), []uint64{6, 7, 8}}, // 5 was lost on the way to node 1
			},
		},
		{
			name:  "an unknown proxy's later epoch waits",
			steps: []step{{env(5, 7, 6, 1), nil}, {env(5, 6, 3, 2), nil}},
			held:  2,
		},
		{
			name:     "nothing more can come from the previous manager: released",
			released: gone,
			steps:    []step{{env(5, 7, 6, 1), []uint64{7}}, {env(5, 8, 6, 1), []uint64{8}}},
		},
		{
			name:  "a straggler after a release is delivered at once",
			table: []ProxyNext{{Proxy: proxyOn(5), Next: 9}},
			steps: []step{{env(5, 3, 0, 0), []uint64{3}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSequencer()
			s.merge(c.table, never)
			rel := c.released
			if rel == nil {
				rel = never
			}
			for i, st := range c.steps {
				if got := seqs(s.add(st.add, rel)); !slices.Equal(got, st.want) {
					t.Fatalf("step %d: released %v, want %v", i, got, st.want)
				}
			}
			if s.count != c.held || len(s.heldList()) != c.held {
				t.Fatalf("holds %d (%d listed), want %d", s.count, len(s.heldList()), c.held)
			}
		})
	}
}

func TestSequencerGivesUp(t *testing.T) {
	never := func(member.UniqueAddress) bool { return false }
	s := newSequencer()
	s.add(env(5, 7, 6, 1), never)
	s.add(env(6, 1, 0, 0), never)
	for i := 1; i < 3; i++ {
		if out, gaveUp := s.tick(3, never); out != nil || gaveUp != nil {
			t.Fatalf("tick %d gave up early: %v %v", i, out, gaveUp)
		}
	}
	out, gaveUp := s.tick(3, never)
	if !slices.Equal(seqs(out), []uint64{7}) || len(gaveUp) != 1 || gaveUp[0] != proxyOn(5) {
		t.Fatalf("gave up %v, released %v", gaveUp, seqs(out))
	}
	if s.blocked() || s.needsTicks() {
		t.Fatal("still blocked")
	}
}

// The row of a proxy whose member was removed is kept for the order-wait limit, for
// its messages still on their way, then forgotten.
func TestSequencerRetires(t *testing.T) {
	never := func(member.UniqueAddress) bool { return false }
	s := newSequencer()
	s.add(env(5, 1, 0, 0), never)
	s.retire(node(5))
	if !s.needsTicks() {
		t.Fatal("a retiring row needs ticks")
	}
	s.tick(2, never)
	if got := seqs(s.add(env(5, 2, 0, 0), never)); !slices.Equal(got, []uint64{2}) {
		t.Fatalf("late message: %v", got)
	}
	s.tick(2, never)
	if len(s.table()) != 0 || s.needsTicks() {
		t.Fatalf("row kept: %v", s.table())
	}
	// A row handed over for a proxy already gone retires too.
	s.merge([]ProxyNext{{Proxy: proxyOn(6), Next: 3}}, func(n member.UniqueAddress) bool { return n == node(6) })
	if !s.needsTicks() {
		t.Fatal("merged row of a gone proxy is not retiring")
	}
}

func TestSequencerForce(t *testing.T) {
	never := func(member.UniqueAddress) bool { return false }
	s := newSequencer()
	s.add(env(5, 9, 8, 1), never)
	s.add(env(5, 10, 8, 1), never)
	if p, ok := s.largest(); !ok || p != proxyOn(5) {
		t.Fatalf("largest %v %v", p, ok)
	}
	if got := seqs(s.force(proxyOn(5), never)); !slices.Equal(got, []uint64{9, 10}) {
		t.Fatalf("forced %v", got)
	}
}
