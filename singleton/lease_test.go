package singleton_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
)

// leaseStore is an in-memory lease store shared by the nodes of a test: one holder at
// a time; the test can take the lease away (revoke) or hold it itself.
type leaseStore struct {
	mu     sync.Mutex
	holder string
	onLost func(error)
}

var errRevoked = errors.New("lease revoked")

func (s *leaseStore) lease(owner string) singleton.Lease { return &testLease{s: s, owner: owner} }

// take makes owner the holder if the lease is free.
func (s *leaseStore) take(owner string, onLost func(error)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != "" && s.holder != owner {
		return false
	}
	s.holder, s.onLost = owner, onLost
	return true
}

// release frees the lease if owner holds it.
func (s *leaseStore) release(owner string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != owner {
		return false
	}
	s.holder, s.onLost = "", nil
	return true
}

// revoke takes the lease from its holder, which hears of it through its callback.
func (s *leaseStore) revoke() {
	s.mu.Lock()
	lost := s.onLost
	s.holder, s.onLost = "", nil
	s.mu.Unlock()
	if lost != nil {
		lost(errRevoked)
	}
}

func (s *leaseStore) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holder
}

type testLease struct {
	s     *leaseStore
	owner string
}

func (l *testLease) Acquire(_ context.Context, onLost func(error)) (bool, error) {
	return l.s.take(l.owner, onLost), nil
}

func (l *testLease) Release(context.Context) (bool, error) { return l.s.release(l.owner), nil }

// With a lease the oldest's manager starts the singleton only while it holds the
// lease: not while another owner holds it, and not after it was lost until it is
// acquired again.
func TestLeaseGatesTheSingleton(t *testing.T) {
	store := &leaseStore{}
	store.take("intruder", nil)
	h := newHarness(t, harnessOptions{mod: func(i int, cfg *singleton.Config) {
		cfg.Lease = store.lease(string(rune('a' + i)))
	}})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if _, err := h.manager(0).AwaitStatus(ctx, func(s singleton.Status) bool { return s.State == singleton.StateOldest }); err != nil {
		t.Fatal(err)
	}
	// A few lease retries (every 200 ms) pass without a start.
	h.tab.hold(t, 600*time.Millisecond, func(tb *table) string {
		if len(tb.alive) > 0 {
			return "the singleton started while another owner held the lease"
		}
		return ""
	})
	store.release("intruder")
	h.awaitRunning(0, 5*time.Second)
	if got := store.current(); got != "a" {
		t.Fatalf("lease held by %q, want a", got)
	}
	// The lease is lost: the singleton stops, and starts again once the lease is
	// acquired again.
	store.take("intruder", nil) // no-op: "a" holds it
	store.revoke()
	store.take("intruder", nil)
	h.tab.await(t, 5*time.Second, "the instance stopped after the lease was lost", func(tb *table) bool {
		return len(tb.alive) == 0
	})
	store.release("intruder")
	h.tab.await(t, 5*time.Second, "a second start on node 0", func(tb *table) bool {
		return countOf(tb.events, "start 0") == 2 && len(tb.alive) == 1
	})
	// A graceful hand-over releases the lease for the next oldest.
	next := h.byAge(0)[1]
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	if got, want := store.current(), string(rune('a'+next)); got != want {
		t.Fatalf("lease held by %q, want %q", got, want)
	}
}

// Two clusters formed by mistake, each with the singleton's oldest member, share a
// lease: only one of them runs the singleton at a time.
func TestLeaseKeepsTwoClustersFromRunningTwo(t *testing.T) {
	store := &leaseStore{}
	tab := newTable(t)
	var hs []*harness
	for k := range 2 {
		h := newHarness(t, harnessOptions{nodes: 1, noStart: true, mod: func(_ int, cfg *singleton.Config) {
			cfg.Lease = store.lease(string(rune('a' + k)))
		}})
		h.tab = tab
		h.start(0)
		hs = append(hs, h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	for _, h := range hs {
		if _, err := h.manager(0).AwaitStatus(ctx, func(s singleton.Status) bool { return s.State == singleton.StateOldest }); err != nil {
			t.Fatal(err)
		}
	}
	tab.await(t, 5*time.Second, "one instance", func(tb *table) bool { return len(tb.alive) == 1 })
	first := 0
	if store.current() == "b" {
		first = 1
	}
	hs[first].leave(0)
	other := hs[1-first]
	ctx, cancel = context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if _, err := other.manager(0).AwaitStatus(ctx, func(s singleton.Status) bool { return s.Running }); err != nil {
		t.Fatal(err)
	}
}
