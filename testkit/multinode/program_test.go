package multinode_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.uber.org/zap"
)

// New returns OnStart's error, and shuts down every node it started, the failing one
// included (goleak in TestMain checks that nothing is left running).
func TestNewReturnsOnStartErrorAndShutsDown(t *testing.T) {
	boom := errors.New("boom")
	var systems []*actor.System
	_, err := multinode.New(t.Context(), multinode.Options{
		Nodes:  2,
		Logger: zap.NewNop(),
		OnStart: func(n *multinode.Node) error {
			systems = append(systems, n.System)
			if n.Index == 1 {
				return boom
			}
			return nil
		},
	})
	if !errors.Is(err, boom) {
		t.Fatalf("New: %v, want OnStart's error", err)
	}
	if len(systems) != 2 {
		t.Fatalf("OnStart ran on %d nodes, want 2", len(systems))
	}
	for _, sys := range systems {
		select {
		case <-sys.Terminated():
		default:
			t.Errorf("%s still runs after New failed", sys.Name())
		}
	}
}

// Nodes are named after Options.Name; OnStart runs again on a restarted node; WaitFor
// returns an error when its context ends first.
func TestNamesOnStartOnRestartAndWaitForContext(t *testing.T) {
	var mu sync.Mutex
	starts := map[int]int{}
	c := multinode.Start(t, multinode.Options{
		Nodes: 2,
		Name:  "x-",
		OnStart: func(n *multinode.Node) error {
			mu.Lock()
			defer mu.Unlock()
			starts[n.Index]++
			return nil
		},
	})
	if got := c.Node(1).Name(); got != "x-1" || c.Node(1).System.Name() != "x-1" {
		t.Fatalf("node 1 is named %q, its system %q; want x-1", got, c.Node(1).System.Name())
	}
	c.Crash(1)
	c.Restart(1)
	c.AwaitAllUp(testkit.Dilated(20 * time.Second))
	mu.Lock()
	if starts[0] != 1 || starts[1] != 2 {
		t.Errorf("OnStart ran %v times per node, want node 0 once and node 1 twice", starts)
	}
	mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.WaitFor(ctx, 0, "never", func(cluster.CurrentClusterState) bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor after its context ended: %v", err)
	}
}
