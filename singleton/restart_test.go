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
