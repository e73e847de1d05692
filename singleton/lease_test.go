package singleton_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
)

const leaseName = "singleton-counter"

// memLease returns owner's lease on store, the lease every node of a test competes for.
func memLease(t *testing.T, store *lease.MemoryStore, owner string) lease.Lease {
	t.Helper()
	l, err := store.Lease(lease.Settings{LeaseName: leaseName, OwnerName: owner})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// holder returns the lease's holder, "" when it is free.
func holder(store *lease.MemoryStore) string {
	h, _ := store.Holder(leaseName)
	return h
}

// acquire makes l hold the lease, or fails the test.
func acquire(t *testing.T, l lease.Lease) {
	t.Helper()
	if ok, err := l.Acquire(context.Background(), nil); !ok || err != nil {
		t.Fatalf("acquire: %v %v", ok, err)
	}
}

func release(t *testing.T, l lease.Lease) {
	t.Helper()
	if ok, err := l.Release(context.Background()); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
}

// With a lease the oldest's manager starts the singleton only while it holds the
// lease: not while another owner holds it, and not after it was lost until it is
// acquired again.
func TestLeaseGatesTheSingleton(t *testing.T) {
	store := lease.NewMemoryStore()
	intruder := memLease(t, store, "intruder")
	acquire(t, intruder)
	h := newHarness(t, harnessOptions{mod: func(i int, cfg *singleton.Config) {
		cfg.Lease = memLease(t, store, string(rune('a'+i)))
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
	release(t, intruder)
	h.awaitRunning(0, 5*time.Second)
	if got := holder(store); got != "a" {
		t.Fatalf("lease held by %q, want a", got)
	}
	// The lease is lost: the singleton stops, and starts again once the lease is
	// acquired again.
	// (Taken over in one step: node 0, retrying, would otherwise win it back first.)
	if err := store.RevokeFor(leaseName, intruder); err != nil {
		t.Fatal(err)
	}
	h.tab.await(t, 5*time.Second, "the instance stopped after the lease was lost", func(tb *table) bool {
		return len(tb.alive) == 0
	})
	release(t, intruder)
	h.tab.await(t, 5*time.Second, "a second start on node 0", func(tb *table) bool {
		return countOf(tb.events, "start 0") == 2 && len(tb.alive) == 1
	})
	// A graceful hand-over releases the lease for the next oldest.
	next := h.byAge(0)[1]
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	if got, want := holder(store), string(rune('a'+next)); got != want {
		t.Fatalf("lease held by %q, want %q", got, want)
	}
}

// Two clusters formed by mistake, each with the singleton's oldest member, share a
// lease: only one of them runs the singleton at a time.
func TestLeaseKeepsTwoClustersFromRunningTwo(t *testing.T) {
	store := lease.NewMemoryStore()
	tab := newTable(t)
	var hs []*harness
	for k := range 2 {
		h := newHarness(t, harnessOptions{nodes: 1, noStart: true, mod: func(_ int, cfg *singleton.Config) {
			cfg.Lease = memLease(t, store, string(rune('a'+k)))
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
	if holder(store) == "b" {
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

// loggingLease is a lease that records the logger it is handed (lease.SystemLogger).
type loggingLease struct {
	lease.Lease
	got *zap.Logger
}

func (l *loggingLease) UseSystemLogger(log *zap.Logger) { l.got = log }

// The singleton's lease takes the system's logger when the manager starts with it,
// as pglease.Lease does when it was given no logger of its own.
func TestLeaseGetsTheSystemLogger(t *testing.T) {
	store := lease.NewMemoryStore()
	l := &loggingLease{Lease: memLease(t, store, "a")}
	h := newHarness(t, harnessOptions{nodes: 1, mod: func(i int, cfg *singleton.Config) { cfg.Lease = l }})
	if sys := h.c.Node(0).System; l.got != sys.Logger() {
		t.Fatalf("the lease got logger %v, want the system's", l.got)
	}
}
