package multinode_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Three node processes form a cluster; one is killed with SIGKILL, and the split-brain
// resolver on the other two downs and removes it, and publishes that its margin has
// passed. Then one survivor leaves gracefully.
func TestProcessKilledWithSIGKILLIsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the node program and runs it as OS processes")
	}
	bin := multinode.BuildNode(t)
	args := []string{"-timing", "test", "-stable-after", "2s", "-margin", "1s"}
	a := multinode.StartNode(t, bin, args...)
	b := multinode.StartNode(t, bin, append(args, "-seed", a.Gossip)...)
	c := multinode.StartNode(t, bin, append(args, "-seed", a.Gossip)...)
	nodes := []*multinode.NodeProcess{a, b, c}

	timeout := testkit.Dilated(10 * time.Second)
	up := make(map[string]bool)
	a.WaitLine(timeout, "all three members up", func(l multinode.Line) bool {
		for _, m := range l.Members { // the state when the node subscribed
			if m.Status == "Up" {
				up[m.HostPort] = true
			}
		}
		for _, n := range nodes {
			if multinode.IsEvent(l, multinode.EventUp, n.HostPort) {
				up[n.HostPort] = true
			}
		}
		return len(up) == len(nodes)
	})

	c.Kill()
	for _, n := range []*multinode.NodeProcess{a, b} {
		n.WaitEvent(timeout, multinode.EventUnreachable, c.HostPort)
		n.WaitEvent(timeout, multinode.EventDowned, c.HostPort)
		removed := n.WaitEvent(timeout, multinode.EventRemoved, c.HostPort)
		if removed.Previous != "Down" {
			t.Errorf("%s: removed %+v, want removed after Down", n.HostPort, removed)
		}
		margin := n.WaitEvent(timeout, multinode.EventMarginPassed, c.HostPort)
		if d := time.Duration(margin.Time - removed.Time); d < 900*time.Millisecond { // lines are written a little after the events
			t.Errorf("%s: margin passed %v after the removal, want at least 1s", n.HostPort, d)
		}
	}

	if err := b.Stop(timeout); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if l := b.WaitKind(timeout, multinode.KindStopped); l.Reason != multinode.ReasonLeft {
		t.Errorf("stopped %+v, want left", l)
	}
	b.WaitKind(timeout, multinode.KindTerminated)
	// a sees b leave: Leaving, then (once serf's leave reaches it) Exiting and Removed.
	// serf spreads a leave best-effort: under load a can miss it and see b fail
	// instead; then a, the only member left, must down b and stay (it once downed
	// itself), and b is removed after Down. (Known gap: the leaver does not wait until
	// the others have seen it Exiting.)
	a.WaitEvent(timeout, multinode.EventLeaving, b.HostPort)
	removed := a.WaitEvent(timeout, multinode.EventRemoved, b.HostPort)
	if removed.Previous != "Exiting" {
		t.Logf("%s missed %s's leave and removed it after %s", a.HostPort, b.HostPort, removed.Previous)
	}
	a.WaitEvent(timeout, multinode.EventMarginPassed, b.HostPort)
}
