package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/discovery"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
)

// A node with no seed nodes forms a cluster of its own and moves itself Up.
func Example() {
	sys, _ := actor.New("shop", actor.Config{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx) // leaves the cluster gracefully first
	}()
	if _, err := remote.Start(sys, remote.Config{Registry: serialization.NewRegistry()}); err != nil {
		fmt.Println(err)
		return
	}
	c, err := cluster.Start(sys, cluster.Config{
		Timing:  cluster.TestTiming(),
		Downing: cluster.DowningConfig{StableAfter: 2 * time.Second},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitUp(ctx); err != nil {
		fmt.Println(err)
		return
	}
	st := c.State()
	fmt.Printf("%d member, %s, the oldest: %v\n", len(st.Members), st.Members[0].Status, st.Oldest.Unique == c.SelfUniqueAddress())
	fmt.Println("the running node:", cluster.Get(sys) == c)
	// Output:
	// 1 member, Up, the oldest: true
	// the running node: true
}

// A node bootstraps by discovery: a deployment of one replica, so one contact point is
// required. It finds itself, the lowest address, waits until the set has been stable,
// and forms the cluster.
func Example_bootstrap() {
	sys, _ := actor.New("shop", actor.Config{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
	}()
	if _, err := remote.Start(sys, remote.Config{Registry: serialization.NewRegistry()}); err != nil {
		fmt.Println(err)
		return
	}
	c, err := cluster.Start(sys, cluster.Config{
		Bootstrap: cluster.BootstrapConfig{
			// The deployment's hosts, without ports: each node's own gossip
			// port is meant.
			Discovery:             discovery.Static{Services: map[string][]string{"shop": {"127.0.0.1"}}},
			Lookup:                discovery.Lookup{Service: "shop"},
			RequiredContactPoints: 1,
			StableMargin:          200 * time.Millisecond,
			LookupInterval:        50 * time.Millisecond,
		},
		Timing:  cluster.TestTiming(),
		Downing: cluster.DowningConfig{StableAfter: 2 * time.Second},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitUp(ctx); err != nil {
		fmt.Println(err)
		return
	}
	jp := c.JoinProgress()
	fmt.Println("joined:", jp.Joined, "contact points:", len(jp.ContactPoints), "the one:", jp.ContactPoints[0] == c.GossipAddress())
	// Output:
	// joined: true contact points: 1 the one: true
}
