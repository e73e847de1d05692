package multinode_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

func TestThreeNodesFormAndAgreeOnTheOldest(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	var oldest *cluster.Member
	for _, n := range c.Nodes() {
		st := n.Cluster.State()
		if st.Oldest == nil {
			t.Fatalf("node %d sees no oldest", n.Index)
		}
		if oldest == nil {
			oldest = st.Oldest
		} else if st.Oldest.Unique != oldest.Unique {
			t.Fatalf("node %d sees oldest %v, node 0 sees %v", n.Index, st.Oldest.Unique, oldest.Unique)
		}
	}
	if oldest.Unique != c.Node(0).Cluster.SelfUniqueAddress() {
		t.Errorf("oldest is %v, want the first node", oldest.Unique)
	}
}

// subscribe returns a probe on node i that has received the current state.
func subscribe(t *testing.T, c *multinode.Cluster, i int) *testkit.Probe {
	t.Helper()
	n := c.Node(i)
	p := testkit.NewProbe(t, n.System)
	n.Cluster.Subscribe(p.Ref())
	testkit.ExpectMsgType[cluster.CurrentClusterState](p)
	return p
}

// expectEvent waits for an event of type T about member u, skipping other events.
func expectEvent[T cluster.Event](t *testing.T, p *testkit.Probe, u cluster.UniqueAddress, timeout time.Duration) T {
	t.Helper()
	got := p.FishForMessage(func(msg any) bool {
		ev, ok := msg.(T)
		return ok && memberOf(ev) == u
	}, timeout)
	return got.(T)
}

func memberOf(ev cluster.Event) cluster.UniqueAddress {
	switch e := ev.(type) {
	case cluster.MemberJoined:
		return e.Member.Unique
	case cluster.MemberUp:
		return e.Member.Unique
	case cluster.MemberLeft:
		return e.Member.Unique
	case cluster.MemberExited:
		return e.Member.Unique
	case cluster.MemberDowned:
		return e.Member.Unique
	case cluster.MemberRemoved:
		return e.Member.Unique
	case cluster.UnreachableMember:
		return e.Member.Unique
	case cluster.ReachableMember:
		return e.Member.Unique
	}
	return cluster.UniqueAddress{}
}

func TestGracefulLeaveIsSeenInOrder(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	leaver := c.Node(2).Cluster.SelfUniqueAddress()
	probes := []*testkit.Probe{subscribe(t, c, 0), subscribe(t, c, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := c.Node(2).Cluster.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		// Every lifecycle event of the leaver, in order; other events may interleave.
		var seen []string
		for len(seen) < 3 {
			switch ev := p.ReceiveN(1, testkit.Dilated(10*time.Second))[0].(type) {
			case cluster.MemberLeft:
				if ev.Member.Unique == leaver {
					seen = append(seen, "left")
				}
			case cluster.MemberExited:
				if ev.Member.Unique == leaver {
					seen = append(seen, "exited")
				}
			case cluster.MemberRemoved:
				if ev.Member.Unique == leaver {
					seen = append(seen, "removed")
				}
			case cluster.MemberDowned, cluster.UnreachableMember:
				t.Fatalf("graceful leave produced %T", ev)
			}
		}
		if seen[0] != "left" || seen[1] != "exited" || seen[2] != "removed" {
			t.Fatalf("events %v, want left, exited, removed", seen)
		}
	}
}

func TestCrashedNodeIsDownedByTheMajority(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	crashed := c.Node(2).Cluster.SelfUniqueAddress()
	p := subscribe(t, c, 0)
	start := time.Now()
	c.Crash(2)
	t.Logf("Crash returned after %v", time.Since(start))
	expectEvent[cluster.UnreachableMember](t, p, crashed, testkit.Dilated(10*time.Second))
	expectEvent[cluster.MemberDowned](t, p, crashed, testkit.Dilated(10*time.Second))
	expectEvent[cluster.MemberRemoved](t, p, crashed, testkit.Dilated(10*time.Second))
	t.Logf("crash to removal: %v (stable-after 1s)", time.Since(start))
	c.Await(1, testkit.Dilated(10*time.Second), "two members", func(st cluster.CurrentClusterState) bool {
		return len(st.Members) == 2
	})
}

func TestThreeTwoPartitionTheMinorityDownsItself(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 5})
	c.Partition([]int{0, 1, 2}, []int{3, 4})
	for _, i := range []int{3, 4} {
		select {
		case <-c.Node(i).Cluster.Stopped():
		case <-time.After(testkit.Dilated(10 * time.Second)):
			t.Fatalf("minority node %d did not down itself", i)
		}
	}
	for _, i := range []int{0, 1, 2} {
		c.Await(i, testkit.Dilated(10*time.Second), "three members", func(st cluster.CurrentClusterState) bool {
			return len(st.Members) == 3 && len(st.Unreachable) == 0
		})
		select {
		case <-c.Node(i).Cluster.Stopped():
			t.Fatalf("majority node %d stopped", i)
		default:
		}
	}
	c.Heal()
}

// TestEqualPartitionKeepsExactlyOneSide splits four nodes 2|2, with node3 on the lowest
// remote port: the side holding it survives, whatever the nodes are called (ordered by
// system name first, node0's side survived).
func TestEqualPartitionKeepsExactlyOneSide(t *testing.T) {
	ports := multinode.FreePorts(t, 4)
	c := multinode.Start(t, multinode.Options{
		Nodes:           4,
		ConfigureRemote: func(i int, rc *remote.Config) { rc.ListenPort = ports[3-i] },
	})
	for _, n := range c.Nodes()[:3] {
		if member.CompareAddress(c.Node(3).Cluster.SelfUniqueAddress(), n.Cluster.SelfUniqueAddress()) >= 0 {
			t.Fatalf("node 3 (%v) does not have the lowest address", c.Node(3).Cluster.SelfUniqueAddress())
		}
	}
	kept, downed := []int{2, 3}, []int{0, 1}
	c.Partition(kept, downed)
	for _, i := range downed {
		select {
		case <-c.Node(i).Cluster.Stopped():
		case <-time.After(testkit.Dilated(10 * time.Second)):
			t.Fatalf("node %d on the side without the lowest address did not down itself", i)
		}
	}
	for _, i := range kept {
		c.Await(i, testkit.Dilated(10*time.Second), "two members", func(st cluster.CurrentClusterState) bool {
			return len(st.Members) == 2
		})
		select {
		case <-c.Node(i).Cluster.Stopped():
			t.Fatalf("node %d on the surviving side stopped", i)
		default:
		}
	}
}

func TestRestartedNodeJoinsAsANewIncarnation(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	old := c.Node(2).Cluster.SelfUniqueAddress()
	p := subscribe(t, c, 0)
	c.Crash(2)
	expectEvent[cluster.MemberRemoved](t, p, old, testkit.Dilated(10*time.Second))
	n := c.Restart(2)
	fresh := n.Cluster.SelfUniqueAddress()
	if fresh.Addr != old.Addr || fresh.UID == old.UID {
		t.Fatalf("restarted as %v, was %v", fresh, old)
	}
	expectEvent[cluster.MemberUp](t, p, fresh, testkit.Dilated(10*time.Second))
	c.AwaitAllUp(testkit.Dilated(10 * time.Second))
}

func TestNothingIsUpBeforeMinNrOfMembers(t *testing.T) {
	c := multinode.Start(t, multinode.Options{
		Nodes:     2,
		NoWait:    true,
		Configure: func(_ int, cfg *cluster.Config) { cfg.MinNrOfMembers = 3 },
	})
	upCalled := make(chan struct{})
	c.Node(0).Cluster.RegisterOnMemberUp(func() { close(upCalled) })
	c.Await(0, testkit.Dilated(10*time.Second), "two members", func(st cluster.CurrentClusterState) bool {
		return len(st.Members) == 2
	})
	c.Await(1, testkit.Dilated(10*time.Second), "two members", func(st cluster.CurrentClusterState) bool {
		return len(st.Members) == 2
	})
	for _, n := range c.Nodes() {
		for _, m := range n.Cluster.State().Members {
			if m.Status != cluster.Joining {
				t.Fatalf("node %d sees %v %v with two of three members", n.Index, m.Unique, m.Status)
			}
		}
	}
	select {
	case <-upCalled:
		t.Fatal("RegisterOnMemberUp ran before min-nr-of-members")
	default:
	}
	c.Add()
	c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	select {
	case <-upCalled:
	case <-time.After(testkit.DefaultTimeout):
		t.Fatal("RegisterOnMemberUp did not run")
	}
}

func TestSystemShutdownLeavesTheClusterGracefully(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	leaver := c.Node(2).Cluster.SelfUniqueAddress()
	p := subscribe(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
	defer cancel()
	if err := c.Node(2).System.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent[cluster.MemberLeft](t, p, leaver, testkit.Dilated(5*time.Second))
	expectEvent[cluster.MemberExited](t, p, leaver, testkit.Dilated(5*time.Second))
	expectEvent[cluster.MemberRemoved](t, p, leaver, testkit.Dilated(5*time.Second))
}

func TestManualDown(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	victim := c.Node(2).Cluster.SelfUniqueAddress()
	p := subscribe(t, c, 1)
	c.Node(0).Cluster.DownAddress(c.Node(2).Remote.Address())
	expectEvent[cluster.MemberDowned](t, p, victim, testkit.Dilated(5*time.Second))
	expectEvent[cluster.MemberRemoved](t, p, victim, testkit.Dilated(5*time.Second))
	select {
	case <-c.Node(2).Cluster.Stopped():
	case <-time.After(testkit.Dilated(5 * time.Second)):
		t.Fatal("the downed node did not stop its cluster services")
	}
	select {
	case <-c.Node(2).System.Terminated():
	case <-time.After(testkit.Dilated(15 * time.Second)):
		t.Fatal("the downed node's system did not shut down")
	}
}

func TestQuickRestartReplacesTheOldIncarnation(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3})
	old := c.Node(2).Cluster.SelfUniqueAddress()
	p := subscribe(t, c, 0)
	c.Crash(2)
	n := c.Restart(2) // before the crash is detected and resolved
	fresh := n.Cluster.SelfUniqueAddress()
	// Node 0 may see the new incarnation Up before or after the old one's removal.
	removed, up := false, false
	for !removed || !up {
		switch p.FishForMessage(func(msg any) bool {
			switch e := msg.(type) {
			case cluster.MemberRemoved:
				return e.Member.Unique == old
			case cluster.MemberUp:
				return e.Member.Unique == fresh
			}
			return false
		}, testkit.Dilated(10*time.Second)).(type) {
		case cluster.MemberRemoved:
			removed = true
		case cluster.MemberUp:
			up = true
		}
	}
	c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	if q := c.Node(0).Remote.Stats().Quarantines; q != 1 {
		t.Errorf("quarantines = %d, want 1 (the old incarnation)", q)
	}
}
