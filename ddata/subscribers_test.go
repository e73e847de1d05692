package ddata

import (
	"slices"
	"testing"
	"time"
)

func TestSubscribers(t *testing.T) {
	s := newSubscribers[string](500 * time.Millisecond)
	digests := map[string]Digest{"k": dg(1)}
	cur := func(k string) Digest { return digests[k] }
	if !s.subscribe("k", "alice", dg(1), true) {
		t.Fatal("a new subscriber of a present key gets the value at once")
	}
	if s.subscribe("absent", "alice", Digest{}, false) {
		t.Fatal("nothing to send for an absent key")
	}
	s.update("k", dg(1)) // no change
	if n := s.notify(t0.Add(time.Second), false, cur); len(n) != 0 {
		t.Fatalf("unchanged key notified: %v", n)
	}
	digests["k"] = dg(2)
	s.update("k", dg(2))
	if n := s.notify(t0.Add(time.Second+100*time.Millisecond), false, cur); len(n) != 0 {
		t.Fatal("notified before the interval passed")
	}
	n := s.notify(t0.Add(2*time.Second), false, cur)
	if len(n) != 1 || n[0].key != "k" || !slices.Equal(n[0].subscribers, []string{"alice"}) {
		t.Fatalf("notifications %+v", n)
	}
	// Changed and changed back within one interval: nothing to tell.
	s.update("k", dg(3))
	digests["k"] = dg(2)
	s.update("k", dg(2))
	if n := s.notify(t0.Add(3*time.Second), false, cur); len(n) != 0 {
		t.Fatalf("back to the told digest: %+v", n)
	}
	// FlushChanges forces.
	digests["k"] = dg(4)
	s.update("k", dg(4))
	if n := s.notify(t0.Add(3*time.Second), true, cur); len(n) != 1 {
		t.Fatal("flush")
	}
	// A key without subscribers is not tracked.
	s.update("other", dg(1))
	if s.has("other") || len(s.changed) != 0 {
		t.Fatal("tracked a key nobody subscribed to")
	}
	s.unsubscribe("", "alice")
	if s.has("k") || s.has("absent") {
		t.Fatal("unsubscribe all")
	}
}
