package multinode_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Every node has the same seed list, the first seed first, as docs/cluster.md advises.
// The first seed, restarted with that configuration after a crash or a graceful leave,
// joins the cluster the other two still run: it is never Up in a cluster of its own
// (which would run a second oldest, a second singleton and coordinator, on the same
// journal), and it ends up one of three members with the others' identity.
func TestRestartedFirstSeedJoinsTheRunningCluster(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		name := "after a crash"
		if graceful {
			name = "after a graceful leave"
		}
		t.Run(name, func(t *testing.T) {
			c := multinode.Start(t, multinode.Options{Nodes: 3, Seeds: 3})
			id := c.Node(1).Cluster.ClusterID()
			if id == "" || c.Node(0).Cluster.ClusterID() != id {
				t.Fatalf("cluster identities %q and %q", c.Node(0).Cluster.ClusterID(), id)
			}
			if graceful {
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
				err := c.Node(0).System.Shutdown(ctx)
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			} else {
				c.Crash(0)
			}
			n := c.Restart(0)
			self := n.Cluster.SelfUniqueAddress()
			var alone []cluster.Member
			c.Await(0, testkit.Dilated(20*time.Second), "three members Up", func(st cluster.CurrentClusterState) bool {
				up, selfUp := 0, false
				for _, m := range st.Members {
					if m.Status == cluster.Up {
						up++
						selfUp = selfUp || m.Unique == self
					}
				}
				if selfUp && up == 1 && alone == nil {
					alone = st.Members
				}
				return up == 3 && len(st.Members) == 3
			})
			if alone != nil {
				t.Fatalf("the restarted first seed was Up in a cluster of its own: %+v", alone)
			}
			c.AwaitAllUp(testkit.Dilated(20 * time.Second))
			if got := n.Cluster.ClusterID(); got != id {
				t.Fatalf("the restarted first seed is in cluster %q, want %q", got, id)
			}
			if o := n.Cluster.State().Oldest; o == nil || o.Unique == self {
				t.Fatalf("the restarted first seed sees the oldest %+v", o)
			}
		})
	}
}
