package singleton_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Every node restarts, one after the other (it leaves gracefully and comes back on
// the same address as a new incarnation): the singleton keeps answering through the
// proxies of the nodes that run.
func TestRollingRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.ping(0, 3*time.Second)
	for _, i := range h.byAge(0) {
		h.leave(i)
		for _, n := range h.c.Nodes() {
			if n.Index != i {
				h.ping(n.Index, 5*time.Second)
			}
		}
		h.c.Restart(i)
		h.c.AwaitAllUp(testkit.Dilated(10 * time.Second))
		h.start(i)
		h.ping(i, 5*time.Second)
	}
	t.Logf("instances: %v", h.tab.eventsSnapshot())
}

// A node that cannot reach its seed nodes stays Joining and alone; its manager waits
// in Start and never starts a second instance.
func TestLonelyNodeNeverStartsASecondInstance(t *testing.T) {
	lonely := 3
	h := newHarness(t, harnessOptions{opts: multinode.Options{
		Configure: func(i int, c *cluster.Config) {
			if i == lonely {
				c.SeedNodes = []string{fmt.Sprintf("127.0.0.1:%d", freePorts(t, 1)[0])}
				c.JoinTimeout = time.Second
			}
		},
		NoWait: false,
	}})
	h.ping(0, 3*time.Second)
	n := h.c.Add()
	if n.Index != lonely {
		t.Fatalf("added node %d", n.Index)
	}
	h.start(lonely)
	// The node gives up joining after its JoinTimeout; watch it for twice as long.
	h.tab.hold(t, 2*time.Second, func(tb *table) string {
		for _, on := range tb.alive {
			if on == lonely {
				return "the lonely node started an instance"
			}
		}
		return ""
	})
	if st := h.manager(lonely).Status(); st.State != singleton.StateStart || st.Running {
		t.Fatalf("the lonely node's manager: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(time.Second))
	defer cancel()
	if _, err := h.manager(0).AwaitStatus(ctx, func(s singleton.Status) bool { return s.Running }); err != nil {
		t.Fatal(err)
	}
}

// The oldest crashes and restarts at once on the same address, as a new incarnation
// that downs the old one when it joins: the next oldest starts the singleton (once the
// old incarnation's margin has passed), never while another instance runs, and every
// proxy reaches it, the restarted node's too.
func TestOldestRestartsAtOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.awaitRunning(0, 5*time.Second)
	next := h.byAge(0)[1]
	h.c.Crash(0)
	h.c.Restart(0)
	h.c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	h.start(0)
	h.awaitRunning(next, 10*time.Second)
	for _, n := range h.c.Nodes() {
		if got := h.ping(n.Index, 5*time.Second); got != next {
			t.Fatalf("node %d reached node %d, want %d", n.Index, got, next)
		}
	}
}

// The only member with the singleton's role crashes and restarts at once: its new
// incarnation starts the singleton again, and every proxy reaches it.
func TestOnlyHostRestartsAtOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{role: "host", opts: multinode.Options{
		Configure: func(i int, c *cluster.Config) {
			if i == 0 {
				c.Roles = []string{"host"}
			}
		},
	}})
	h.awaitRunning(0, 5*time.Second)
	h.c.Crash(0)
	h.c.Restart(0)
	h.c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	h.start(0)
	h.awaitRunning(0, 10*time.Second)
	for _, n := range h.c.Nodes() {
		if got := h.ping(n.Index, 5*time.Second); got != 0 {
			t.Fatalf("node %d reached node %d, want 0", n.Index, got)
		}
	}
}
