package multinode_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// stopRecord is when a downed node noticed it was downed, stopped its cluster
// services, and its actor system terminated, by its own lines.
type stopRecord struct{ downed, stopped, terminated multinode.Line }

// awaitDownedAndStopped waits until node n reports that it was downed, stopped and
// terminated, and returns the lines.
func awaitDownedAndStopped(t *testing.T, n *multinode.NetNode, timeout time.Duration) stopRecord {
	t.Helper()
	var r stopRecord
	r.downed = n.WaitKind(timeout, multinode.KindDowned)
	r.stopped = n.WaitKind(timeout, multinode.KindStopped)
	if r.stopped.Reason != multinode.ReasonDowned {
		t.Fatalf("node %d stopped: %+v, want downed", n.Index, r.stopped)
	}
	r.terminated = n.WaitKind(timeout, multinode.KindTerminated)
	return r
}

// checkMarginAfterStop waits until observer publishes that gone's margin passed, and
// checks that gone had stopped before, by the two processes' clocks (one machine).
func checkMarginAfterStop(t *testing.T, observer, gone *multinode.NetNode, stop stopRecord, margin time.Duration, timeout time.Duration) {
	t.Helper()
	removed := observer.WaitEvent(timeout, multinode.EventRemoved, gone.HostPort)
	passed := observer.WaitEvent(timeout, multinode.EventMarginPassed, gone.HostPort)
	if removed.Previous != "Down" || passed.Previous != "Down" {
		t.Errorf("node %d: %s removed from %s, margin passed from %s; want Down", observer.Index, gone.HostPort, removed.Previous, passed.Previous)
	}
	// The lines are written by the node's printer actor a little after the events.
	if d := time.Duration(passed.Time - removed.Time); d < margin-100*time.Millisecond {
		t.Errorf("node %d: margin for %s passed %v after its removal, want at least %v", observer.Index, gone.HostPort, d, margin)
	}
	lead := time.Duration(passed.Time - stop.terminated.Time)
	if lead <= 0 {
		t.Fatalf("node %d published margin passed for %s %v BEFORE it stopped", observer.Index, gone.HostPort, -lead)
	}
	t.Logf("node %d: %s downed itself %v before, stopped %v before and terminated %v before the margin passed here",
		observer.Index, gone.HostPort, time.Duration(passed.Time-stop.downed.Time), time.Duration(passed.Time-stop.stopped.Time), lead)
}

// checkNotDowned fails the test if node n has reported being downed or stopped.
func checkNotDowned(t *testing.T, n *multinode.NetNode) {
	t.Helper()
	for _, l := range n.NodeLines() {
		if l.Kind == multinode.KindDowned || l.Kind == multinode.KindStopped {
			t.Fatalf("node %d, which should survive, reported %+v", n.Index, l)
		}
	}
}

// TestNetPartitionMinorityStopsBeforeTheMargin runs five node processes on two
// segments, 3|2, and takes the link between the segments down. The minority downs
// itself and stops; the majority downs and removes it, and publishes that its margin
// passed only after the margin, by which time every minority process had stopped.
func TestNetPartitionMinorityStopsBeforeTheMargin(t *testing.T) {
	c := multinode.StartNet(t, multinode.NetOptions{Nodes: 5, Segments: [][]int{{0, 1, 2}, {3, 4}}})
	c.SetLink(1, false)
	timeout := testkit.Dilated(20 * time.Second)
	stops := make(map[int]stopRecord)
	for _, i := range []int{3, 4} {
		stops[i] = awaitDownedAndStopped(t, c.Node(i), timeout)
	}
	for _, i := range []int{0, 1, 2} {
		for _, j := range []int{3, 4} {
			checkMarginAfterStop(t, c.Node(i), c.Node(j), stops[j], 2*time.Second, timeout)
		}
		checkNotDowned(t, c.Node(i))
	}
}

// TestNetOneWayBlackhole drops, in node 4's namespace, every packet from node 3. serf
// sees nothing (its indirect probes answer for the pair), but the heartbeats between
// the two fail, each reports the other unreachable, the others learn it by gossip, and
// the resolver downs the indirectly connected pair; the other three go on.
func TestNetOneWayBlackhole(t *testing.T) {
	c := multinode.StartNet(t, multinode.NetOptions{Nodes: 5})
	c.Blackhole(3, 4, true)
	timeout := testkit.Dilated(20 * time.Second)
	first := c.Node(0).WaitLine(timeout, "node 3 or 4 removed", func(l multinode.Line) bool {
		return multinode.IsEvent(l, multinode.EventRemoved, c.Node(3).HostPort) ||
			multinode.IsEvent(l, multinode.EventRemoved, c.Node(4).HostPort)
	})
	t.Logf("first removed: %s", first.Member.HostPort)
	downed := 0
	for _, j := range []int{3, 4} {
		gone := c.Node(j)
		removed := false
		for _, l := range c.Node(0).NodeLines() {
			removed = removed || multinode.IsEvent(l, multinode.EventRemoved, gone.HostPort)
		}
		if !removed && gone.HostPort != first.Member.HostPort {
			t.Logf("node %d was not downed", j)
			continue
		}
		downed++
		stop := awaitDownedAndStopped(t, gone, timeout)
		for _, i := range []int{0, 1, 2} {
			checkMarginAfterStop(t, c.Node(i), gone, stop, 2*time.Second, timeout)
		}
	}
	for _, i := range []int{0, 1, 2} {
		checkNotDowned(t, c.Node(i))
	}
	t.Logf("downed %d of the two ends of the cut link", downed)
}

// view is a node's picture of the cluster, rebuilt from its lines.
type view struct {
	members     map[string]bool // host:port of every member not removed
	unreachable map[string]bool
	terminated  bool
}

func newView() *view { return &view{members: map[string]bool{}, unreachable: map[string]bool{}} }

func (v *view) add(l multinode.Line) {
	switch l.Kind {
	case multinode.KindState:
		for _, m := range l.Members {
			v.members[m.HostPort] = true
		}
		for _, m := range l.Unreachable {
			v.unreachable[m.HostPort] = true
		}
	case multinode.KindTerminated:
		v.terminated = true
	case multinode.KindEvent:
		if l.Member == nil {
			return
		}
		switch l.Event {
		case multinode.EventJoined, multinode.EventUp:
			v.members[l.Member.HostPort] = true
		case multinode.EventRemoved:
			delete(v.members, l.Member.HostPort)
			delete(v.unreachable, l.Member.HostPort)
		case multinode.EventUnreachable:
			v.unreachable[l.Member.HostPort] = true
		case multinode.EventReachable:
			delete(v.unreachable, l.Member.HostPort)
		}
	}
}

// TestNetFlappingLinkEndsInOneCluster takes the link between a 3|2 split down and up
// twice, then leaves it up. Whether the heals are seen in time (the resolver then waits
// and nothing is decided) or not (TCP's retransmission backoff can hide a short heal,
// and the resolver then sees a partition that stayed stable and resolves it), the
// nodes end as one cluster: every node still running sees exactly the running nodes,
// all reachable, and the majority is among them.
func TestNetFlappingLinkEndsInOneCluster(t *testing.T) {
	c := multinode.StartNet(t, multinode.NetOptions{Nodes: 5, Segments: [][]int{{0, 1, 2}, {3, 4}}, Args: []string{"-stable-after", "5s"}})
	for range 2 { // each cut is detected (2s to 2.6s), and each change follows the last within 5s
		c.SetLink(1, false)
		<-time.After(3500 * time.Millisecond) // the flapping's schedule
		c.SetLink(1, true)
		<-time.After(1200 * time.Millisecond)
	}
	timeout := testkit.Dilated(30 * time.Second)
	settled := func(v *view) bool { return v.terminated || len(v.unreachable) == 0 }
	for _, n := range c.Nodes() {
		v := newView()
		n.WaitLine(timeout, "a settled view: all reachable, or stopped", func(l multinode.Line) bool {
			v.add(l)
			return settled(v) && len(v.members) > 0 && (l.Kind != multinode.KindState && l.Kind != multinode.KindEvent || l.Event != multinode.EventJoined)
		})
	}
	// Stable: no decision follows. A member may still show as unreachable for a while
	// after the heal: the other side's rows of the reachability table, written during
	// the cut, reach this side with the gossip, and stand until their observers hear
	// the member again (once the transport has reconnected: at most its reconnect
	// backoff, 1 s, and sooner when the member connects first). That is an
	// observation, as in Akka, not a decision; it must clear.
	c.Node(0).ExpectNoLine(testkit.Dilated(7*time.Second), func(l multinode.Line) bool {
		return l.Kind == multinode.KindEvent && l.Event == multinode.EventDowned
	})
	views := make([]*view, 5)
	running := map[string]bool{}
	for i, n := range c.Nodes() {
		views[i] = newView()
		seen := len(n.NodeLines())
		n.WaitLine(timeout, "a settled view again", func(l multinode.Line) bool {
			views[i].add(l)
			seen--
			return seen <= 0 && settled(views[i])
		})
		if !views[i].terminated {
			running[n.HostPort] = true
		}
	}
	for _, i := range []int{0, 1, 2} {
		if views[i].terminated {
			t.Fatalf("majority node %d stopped", i)
		}
	}
	// The running nodes see exactly the running nodes, all reachable.
	for i, v := range views {
		if v.terminated {
			continue
		}
		if len(v.members) != len(running) || len(v.unreachable) != 0 {
			t.Fatalf("node %d sees members %v, unreachable %v; running: %v", i, v.members, v.unreachable, running)
		}
		for hp := range running {
			if !v.members[hp] {
				t.Fatalf("node %d sees members %v; running: %v", i, v.members, running)
			}
		}
	}
	t.Logf("running after the flapping: %d of 5", len(running))
}
