package cluster_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testNode is a system with remoting and a cluster node, whose log lines (info and
// above) are kept.
type testNode struct {
	*cluster.Cluster
	sys  *actor.System
	logs *observer.ObservedLogs
}

// node starts a testNode, with TestTiming unless cfg sets a Timing.
func node(t *testing.T, name string, cfg cluster.Config) *testNode {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	sys, err := actor.New(name, actor.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown %s: %v", name, err)
		}
	})
	if _, err := remote.Start(sys, remote.Config{Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	if cfg.Timing == (cluster.Timing{}) {
		cfg.Timing = cluster.TestTiming()
	}
	cfg.Downing = cluster.DowningConfig{StableAfter: 2 * time.Second}
	cfg.JoinRetryInterval = 20 * time.Millisecond
	c, err := cluster.Start(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testNode{Cluster: c, sys: sys, logs: logs}
}

// awaitUpMembers waits until c sees exactly the members of want, all Up.
func awaitUpMembers(t *testing.T, c *testNode, want ...*testNode) {
	t.Helper()
	await(t, c, func(st cluster.CurrentClusterState) bool {
		if len(st.Members) != len(want) {
			return false
		}
		for _, w := range want {
			up := false
			for _, m := range st.Members {
				up = up || m.Unique == w.SelfUniqueAddress() && m.Status == cluster.Up
			}
			if !up {
				return false
			}
		}
		return true
	})
}

// await waits until cond holds for c's state, at every cluster event.
func await(t *testing.T, c *testNode, cond func(cluster.CurrentClusterState) bool) {
	t.Helper()
	changed := make(chan struct{}, 1)
	sub, err := c.sys.Spawn(actor.PropsFunc(func(actor.Context) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(sub); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.sys.Stop(sub) }()
	deadline := time.After(testkit.Dilated(20 * time.Second))
	for !cond(c.State()) {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: condition not met; state %+v", c.SelfUniqueAddress(), c.State())
		}
	}
}

// gossipAddresses returns n different 127.0.0.1 addresses, free for TCP and UDP.
func gossipAddresses(t *testing.T, n int) []string {
	var out []string
	for _, p := range multinode.FreePorts(t, n) {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

func gossipPort(t *testing.T, addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Three nodes with the same seed list start at once: the first seed forms the
// cluster as soon as the other two have answered, not in a cluster, and the others
// join it. One cluster, one identity.
func TestSeedNodesStartingTogetherFormOneCluster(t *testing.T) {
	seeds := gossipAddresses(t, 3)
	var cs []*testNode
	for i, s := range seeds {
		c := node(t, "seed"+strconv.Itoa(i), cluster.Config{
			GossipPort: gossipPort(t, s), SeedNodes: seeds,
			SeedNodeTimeout: time.Hour, // every other seed answers: the first does not wait for it
		})
		cs = append(cs, c)
	}
	for _, c := range cs {
		awaitUpMembers(t, c, cs...)
		if c.ClusterID() == "" || c.ClusterID() != cs[0].ClusterID() {
			t.Fatalf("cluster identities %q and %q", c.ClusterID(), cs[0].ClusterID())
		}
	}
	if o := cs[0].State().Oldest; o == nil || o.Unique != cs[0].SelfUniqueAddress() {
		t.Fatalf("the oldest is %+v, want the first seed", o)
	}
}

// A first seed node whose other seeds do not answer forms a cluster after
// SeedNodeTimeout; a node that is not the first seed never does.
func TestFirstSeedFormsAClusterAfterTheSeedNodeTimeout(t *testing.T) {
	self := gossipAddresses(t, 1)[0]
	first := node(t, "first", cluster.Config{
		GossipPort: gossipPort(t, self), SeedNodes: []string{self, "127.0.0.1:1"},
		SeedNodeTimeout: 300 * time.Millisecond,
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := first.WaitUp(ctx); err != nil {
		t.Fatal(err)
	}
	if jp := first.JoinProgress(); !jp.Joined || first.ClusterID() == "" {
		t.Fatalf("JoinProgress %+v, cluster %q", jp, first.ClusterID())
	}

	second := node(t, "second", cluster.Config{
		SeedNodes:       []string{"127.0.0.1:1", self},
		SeedNodeTimeout: time.Millisecond,
		JoinTimeout:     time.Hour,
	})
	awaitUpMembers(t, second, first, second)
	if second.ClusterID() != first.ClusterID() {
		t.Fatalf("cluster identities %q and %q", second.ClusterID(), first.ClusterID())
	}
}

// Two clusters never merge. A node whose seed nodes span two clusters joins one of
// them (the larger); the other refuses its gossip and logs an error, and neither
// cluster ever lists a member of the other.
func TestTwoClustersNeverMerge(t *testing.T) {
	a := node(t, "a", cluster.Config{})
	b := node(t, "b", cluster.Config{SeedNodes: []string{a.GossipAddress()}})
	c := node(t, "c", cluster.Config{})
	awaitUpMembers(t, a, a, b)
	awaitUpMembers(t, c, c)
	if a.ClusterID() == c.ClusterID() {
		t.Fatal("two clusters with one identity")
	}

	d := node(t, "d", cluster.Config{SeedNodes: []string{c.GossipAddress(), a.GossipAddress()}})
	awaitUpMembers(t, d, a, b, d)
	awaitUpMembers(t, a, a, b, d)
	awaitUpMembers(t, b, a, b, d)
	if d.ClusterID() != a.ClusterID() {
		t.Fatalf("d joined %q, want the larger cluster %q", d.ClusterID(), a.ClusterID())
	}
	awaitUpMembers(t, c, c) // d, seen while it looked for a cluster, is gone again
	for _, x := range []*testNode{a, c, d} {
		if x.logs.FilterMessageSnippet("another cluster").Len() == 0 {
			t.Errorf("%s logged no error about the other cluster; logged: %v", x.SelfUniqueAddress(), x.logs.All())
		}
	}
	for _, x := range []*testNode{a, b, d} {
		for _, m := range x.State().Members {
			if m.Unique == c.SelfUniqueAddress() {
				t.Fatalf("%s lists %s of the other cluster", x.SelfUniqueAddress(), m.Unique)
			}
		}
	}
}
