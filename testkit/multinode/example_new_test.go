package multinode_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.uber.org/zap"
)

// A program (not a test) that runs three nodes in its own process, crashes one, waits
// until the others have removed it, and starts it again.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := multinode.New(ctx, multinode.Options{
		Nodes:       3,
		Name:        "demo-",
		StableAfter: 1400 * time.Millisecond, // the shortest cluster.TestTiming allows
		Logger:      zap.NewNop(),
		OnStart: func(n *multinode.Node) error {
			// Start what else the node runs here: persistence, sharding, singletons.
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Shutdown(context.Background()) }()
	fmt.Println(c.Node(2).Name(), "sees", len(c.Node(2).Cluster.State().Members), "members Up")

	gone := c.Node(2).Cluster.SelfUniqueAddress()
	c.Crash(2)
	err = c.WaitFor(ctx, 0, "the crashed node removed", func(st cluster.CurrentClusterState) bool {
		for _, m := range st.Members {
			if m.Unique == gone {
				return false
			}
		}
		return true
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after the crash, demo-0 sees", len(c.Node(0).Cluster.State().Members), "members")

	if _, err := c.RestartNode(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}
	if err := c.WaitAllUp(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after the restart, demo-0 sees", len(c.Node(0).Cluster.State().Members), "members Up")
	// Output:
	// demo-2 sees 3 members Up
	// after the crash, demo-0 sees 2 members
	// after the restart, demo-0 sees 3 members Up
}
