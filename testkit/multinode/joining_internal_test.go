package multinode

import (
	"net"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
)

// TestJoiningMemberOnTheMinorityKnownToSomeOfTheMajority partitions six nodes 3|3:
// nodes 0-2 against nodes 3-5, where node 5 is still Joining and only node 0 of the
// majority knows it (nodes 1 and 2 never heard of it in serf's gossip, as happens when a
// member joins just before a partition: serf ignores news of a failed member it never
// knew). Node 0 loses node 5 a moment after the others, so nodes 1 and 2 decide first
// and down nodes 3 and 4; node 0, left with node 5 unreachable, decides on it after
// its stable-after wait. The majority stays, the minority downs itself.
//
// Before the resolver took the decision of nodes 1 and 2 as its side's, node 0 took
// the wait their decision restarted for instability and downed everyone: the whole
// cluster went down.
func TestJoiningMemberOnTheMinorityKnownToSomeOfTheMajority(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	joinerGossip := l.Addr().String()
	joinerPort := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	c := Start(t, Options{Nodes: 5, Configure: func(i int, cfg *cluster.Config) {
		if i == 5 {
			cfg.GossipPort = joinerPort
			// Never Up: no member has the role.
			cfg.MinNrOfMembersOfRole = map[string]int{"nobody": 1}
		}
	}})
	// Nodes 1 and 2 hear nothing of node 5: their gossip with the others is cut (the
	// remote transport, and so the heartbeats, go on).
	for _, i := range []int{1, 2} {
		for _, j := range []string{"node0", "node3", "node4", "node5"} { // node5: the joiner
			c.net.CutGossip(c.Node(i).name, j)
			c.net.CutGossip(j, c.Node(i).name)
		}
	}
	joiner := c.Add()
	if joiner.gossip != joinerGossip {
		t.Fatalf("node 5 gossips on %s, want %s", joiner.gossip, joinerGossip)
	}
	for _, i := range []int{0, 3, 4} {
		c.Await(i, testkit.Dilated(10*time.Second), "node 5 Joining", func(st cluster.CurrentClusterState) bool {
			for _, m := range st.Members {
				if m.Unique == joiner.Cluster.SelfUniqueAddress() {
					return m.Status == cluster.Joining
				}
			}
			return false
		})
	}
	for _, i := range []int{1, 2} {
		if n := len(c.Node(i).Cluster.State().Members); n != 5 {
			t.Fatalf("node %d sees %d members, want 5: it must not know node 5", i, n)
		}
	}

	c.Partition([]int{0, 1, 2}, []int{3, 4})
	c.Partition([]int{1, 2}, []int{5})
	<-time.After(2 * time.Second) // schedules the last cut only
	c.Partition([]int{0}, []int{5})

	timeout := testkit.Dilated(20 * time.Second)
	for _, i := range []int{3, 4, 5} {
		select {
		case <-c.Node(i).Cluster.Stopped():
		case <-time.After(timeout):
			t.Fatalf("node %d of the minority did not down itself", i)
		}
	}
	for _, i := range []int{0, 1, 2} {
		c.Await(i, timeout, "three members, none unreachable", func(st cluster.CurrentClusterState) bool {
			return len(st.Members) == 3 && len(st.Unreachable) == 0
		})
	}
	for _, i := range []int{0, 1, 2} {
		select {
		case <-c.Node(i).Cluster.Stopped():
			t.Fatalf("node %d of the majority stopped", i)
		default:
		}
	}
}
