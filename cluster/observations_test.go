package cluster_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// TestObservationsNameWhoCannotReachWhom cuts one node off and checks that the others
// report which of them observe it unreachable, and that the table empties once the cut
// heals. The stable-after is long, so that nobody is downed meanwhile.
func TestObservationsNameWhoCannotReachWhom(t *testing.T) {
	c := multinode.Start(t, multinode.Options{Nodes: 3, StableAfter: testkit.Dilated(60 * time.Second)})
	self := c.Node(0).Cluster
	if obs := self.Observations(); len(obs) != 0 {
		t.Fatalf("observations before any fault: %v", obs)
	}
	cut := c.Node(2).Cluster.SelfUniqueAddress()
	probe := testkit.NewProbe(t, c.Node(0).System)
	if err := self.Subscribe(probe.Ref()); err != nil {
		t.Fatal(err)
	}
	c.Partition([]int{0, 1}, []int{2})
	c.Await(0, testkit.Dilated(20*time.Second), "node 2 unreachable", func(st cluster.CurrentClusterState) bool {
		return len(st.Unreachable) == 1
	})
	// The table behind Unreachable is published before the event: it names node 2, and
	// only members of the other side as its observers.
	obs := self.Observations()
	if len(obs) == 0 {
		t.Fatal("node 2 is unreachable but no observation says so")
	}
	for _, o := range obs {
		if o.Subject != cut || o.Observer != c.Node(0).Cluster.SelfUniqueAddress() && o.Observer != c.Node(1).Cluster.SelfUniqueAddress() {
			t.Errorf("unexpected observation: %v cannot reach %v", o.Observer, o.Subject)
		}
	}
	if st := self.State(); len(st.Unreachable) != 1 || st.Unreachable[0].Unique != cut {
		t.Fatalf("Unreachable = %v, want only %v", st.Unreachable, cut)
	}
	// Subscribers hear each change of the table: first that node 2 is unreachable.
	probe.FishForMessage(func(msg any) bool {
		rc, ok := msg.(cluster.ReachabilityChanged)
		return ok && len(rc.Observations) > 0 && rc.Observations[0].Subject == cut
	}, testkit.Dilated(20*time.Second))
	c.Heal()
	// The table empties with a ReachabilityChanged even when its last rows name no
	// member that becomes reachable here (node 2's own view of node 0, say), so the
	// wait wakes on it.
	c.Await(0, testkit.Dilated(20*time.Second), "everyone reachable again", func(st cluster.CurrentClusterState) bool {
		return len(st.Unreachable) == 0 && len(self.Observations()) == 0
	})
	probe.FishForMessage(func(msg any) bool {
		rc, ok := msg.(cluster.ReachabilityChanged)
		return ok && len(rc.Observations) == 0
	}, testkit.Dilated(20*time.Second))
}
