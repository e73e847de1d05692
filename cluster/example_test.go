package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
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
