package singleton_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/singleton"
)

// The oldest crashes: once it is downed and removed and its margin has passed, the
// next oldest starts the singleton, and the messages sent through a proxy from the
// moment the crashed member is removed (buffered while the singleton's location is
// unknown, fewer than the proxy's buffer holds) reach the new instance, in order.
func TestOldestCrashes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.awaitRunning(0, 5*time.Second)
	next, other := h.byAge(0)[1], h.byAge(0)[2]
	start := time.Now()
	h.c.Crash(0)
	h.c.Await(other, 15*time.Second, "node 0 removed", func(st cluster.CurrentClusterState) bool {
		return len(st.Members) == 2
	})
	s := startStream(t, "after-crash", h.proxy(other), nil, singleton.DefaultProxyBufferSize*9/10)
	h.awaitRunning(next, 10*time.Second)
	t.Logf("fail-over took %v", time.Since(start))
	checkStreams(t, h, []*stream{s})
	if n := singleton.Dropped(h.c.Node(other).System); n != 0 {
		t.Fatalf("node %d's proxy dropped %d messages", other, n)
	}
	if got := h.ping(other, 3*time.Second); got != next {
		t.Fatalf("reached node %d, want %d", got, next)
	}
}

// The two oldest of five crash at once: the third oldest starts the singleton.
func TestTwoOldestCrash(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 5})
	h.awaitRunning(0, 5*time.Second)
	age := h.byAge(0)
	h.c.Crash(age[0])
	h.c.Crash(age[1])
	h.awaitRunning(age[2], 15*time.Second)
	for _, i := range age[2:] {
		if got := h.ping(i, 3*time.Second); got != age[2] {
			t.Fatalf("node %d reached node %d, want %d", i, got, age[2])
		}
	}
}

// The oldest is downed by hand: its instance stops within 3 s, and the next oldest
// starts one.
func TestDownedOldestStops(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.awaitRunning(0, 5*time.Second)
	next := h.byAge(0)[1]
	start := time.Now()
	h.c.Node(next).Cluster.Down(h.addr(0))
	h.tab.await(t, 3*time.Second, "the downed oldest's instance stopped", func(tb *table) bool {
		return indexOf(tb.events, "stop 0", 0) >= 0
	})
	t.Logf("the downed oldest stopped its instance %v after the down", time.Since(start))
	h.awaitRunning(next, 5*time.Second)
}

// A 3|2 partition with the oldest on the minority side: the minority downs itself
// and stops its instance; the majority starts one only after that.
func TestPartitionWithTheOldestInTheMinority(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 5})
	h.awaitRunning(0, 5*time.Second)
	age := h.byAge(0)
	minority, majority := []int{age[0], age[3]}, []int{age[1], age[2], age[4]}
	h.c.Partition(minority, majority)
	h.awaitRunning(age[1], 20*time.Second)
	ev := h.tab.eventsSnapshot()
	if stop, start := indexOf(ev, fmt.Sprintf("stop %d", age[0]), 0), indexOf(ev, fmt.Sprintf("start %d", age[1]), 0); stop < 0 || stop > start {
		t.Fatalf("the majority started an instance before the minority's stopped: %v", ev)
	}
	for _, i := range majority {
		if got := h.ping(i, 3*time.Second); got != age[1] {
			t.Fatalf("node %d reached node %d, want %d", i, got, age[1])
		}
	}
}
