package routing_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Work and Done cross the wire between the nodes of the cluster test.
type (
	Work struct{ N int }
	Done struct{ Node string }
)

// TestClusterGroupFollowsMembership runs a cluster-aware group on node 0 of three
// nodes, for the role "w" that nodes 0 and 2 have: its routees follow members that
// leave, join and crash.
func TestClusterGroupFollowsMembership(t *testing.T) {
	reg := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[Work](reg, "routing.test.Work"),
		serialization.Register[Done](reg, "routing.test.Done"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	c := multinode.Start(t, multinode.Options{
		Nodes:    3,
		Registry: reg,
		Configure: func(i int, cfg *cluster.Config) {
			if i != 1 {
				cfg.Roles = []string{"w"}
			}
		},
		OnStart: func(n *multinode.Node) error {
			name := n.System.Name()
			_, err := n.System.Spawn(actor.PropsFunc(func(ctx actor.Context) {
				if _, ok := ctx.Message().(Work); ok {
					_ = ctx.Respond(Done{Node: name})
				}
			}), "worker")
			return err
		},
	})
	n0 := c.Node(0)
	r, err := routing.NewClusterGroup(context.Background(), n0.System, routing.ClusterGroupConfig{
		Path: "/user/worker", Role: "w",
	})
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return c.Node(i).System.Name() }

	awaitRoutees(t, r, name(0), name(2))
	seen := map[string]int{}
	for i := range 4 {
		d, err := actor.Ask[Done](context.Background(), r.Ref(), Work{N: i})
		if err != nil {
			t.Fatal(err)
		}
		seen[d.Node]++
	}
	if seen[name(0)] != 2 || seen[name(2)] != 2 {
		t.Fatalf("replies %v, want two from each of %s and %s", seen, name(0), name(2))
	}

	// Node 2 leaves: its routee goes.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
	defer cancel()
	left := c.Node(2).Cluster.SelfUniqueAddress()
	if err := c.Node(2).Cluster.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	c.Await(0, testkit.Dilated(20*time.Second), "node 2 not up", notUp(left))
	awaitRoutees(t, r, name(0))

	// A new node with the role joins: it gets one.
	n3 := c.Add()
	c.Await(0, testkit.Dilated(20*time.Second), "node 3 up", func(s cluster.CurrentClusterState) bool {
		for _, m := range s.Members {
			if m.Unique == n3.Cluster.SelfUniqueAddress() && m.Status == cluster.Up {
				return true
			}
		}
		return false
	})
	awaitRoutees(t, r, name(0), n3.System.Name())
	if d, err := r.Ask(context.Background(), Work{}).Result(context.Background()); err != nil {
		t.Fatal(err)
	} else if _, ok := d.(Done); !ok {
		t.Fatalf("reply %T, want Done", d)
	}

	// It crashes and is downed: its routee goes.
	crashed := n3.Cluster.SelfUniqueAddress()
	c.Crash(3)
	c.Await(0, testkit.Dilated(30*time.Second), "node 3 unreachable or gone", func(s cluster.CurrentClusterState) bool {
		for _, m := range s.Unreachable {
			if m.Unique == crashed {
				return true
			}
		}
		return notUp(crashed)(s)
	})
	awaitRoutees(t, r, name(0))
}

// notUp holds when u is no longer an Up member.
func notUp(u cluster.UniqueAddress) func(cluster.CurrentClusterState) bool {
	return func(s cluster.CurrentClusterState) bool {
		for _, m := range s.Members {
			if m.Unique == u && m.Status == cluster.Up {
				return false
			}
		}
		return true
	}
}

// awaitRoutees waits until the router's routees live on exactly the named systems. The
// router's routees change a moment after the cluster event that changes them, with no
// event of their own, so this asks again until they match (each ask is a round trip to
// the router, not a sleep).
func awaitRoutees(t *testing.T, r *routing.Router, systems ...string) {
	t.Helper()
	slices.Sort(systems)
	deadline := time.Now().Add(testkit.Dilated(30 * time.Second))
	var got []string
	for {
		rs, err := actor.Ask[routing.Routees](context.Background(), r.Ref(), routing.GetRoutees{})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, ref := range rs.Refs {
			got = append(got, ref.Address().System)
		}
		slices.Sort(got)
		if slices.Equal(got, systems) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("routees on %v, want %v", got, systems)
		}
		runtime.Gosched()
	}
}
