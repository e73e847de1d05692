package multinode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
)

// AwaitAllUp waits until every live node sees every live node Up; it fails the test
// after timeout.
func (c *Cluster) AwaitAllUp(timeout time.Duration) {
	if c.t != nil {
		c.t.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.WaitAllUp(ctx); err != nil {
		c.fail(err)
	}
}

// WaitAllUp is AwaitAllUp for programs: it waits until every live node sees every
// live node Up, or returns an error when ctx ends first.
func (c *Cluster) WaitAllUp(ctx context.Context) error {
	var live []*Node
	for _, n := range c.Nodes() {
		if !c.isCrashed(n) {
			live = append(live, n)
		}
	}
	for _, n := range live {
		err := c.WaitFor(ctx, n.Index, fmt.Sprintf("%d members Up", len(live)), func(st cluster.CurrentClusterState) bool {
			up := 0
			for _, m := range st.Members {
				if m.Status == cluster.Up {
					up++
				}
			}
			return up == len(live) && len(st.Members) == len(live)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Await waits until cond holds for node i's view of the cluster, re-checking at every
// cluster event; it fails the test after timeout.
func (c *Cluster) Await(i int, timeout time.Duration, what string, cond func(cluster.CurrentClusterState) bool) {
	if c.t != nil {
		c.t.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.WaitFor(ctx, i, what, cond); err != nil {
		c.fail(err)
	}
}

// WaitFor is Await for programs: it waits until cond holds for node i's view of the
// cluster, re-checking at every cluster event, and returns an error (naming what it
// waited for) when ctx ends first or the node's cluster services stop before cond
// holds.
func (c *Cluster) WaitFor(ctx context.Context, i int, what string, cond func(cluster.CurrentClusterState) bool) error {
	n := c.Node(i)
	changed := make(chan struct{}, 1)
	sub, err := n.System.SpawnSystem(actor.PropsFunc(func(ctx actor.Context) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}), "")
	if err != nil {
		return fmt.Errorf("multinode: %w", err)
	}
	defer func() { _ = n.System.Stop(sub) }()
	if err := n.Cluster.Subscribe(sub); err != nil && !c.isCrashed(n) {
		select {
		case <-n.Cluster.Stopped():
		default:
			return fmt.Errorf("multinode: subscribe on node %d: %w", i, err)
		}
	}
	for !cond(n.Cluster.State()) {
		select {
		case <-changed:
		case <-n.Cluster.Stopped():
			if !cond(n.Cluster.State()) {
				return fmt.Errorf("multinode: node %d stopped before %s; state %+v", i, what, n.Cluster.State())
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("multinode: node %d: no %s (%w); state %+v", i, what, ctx.Err(), n.Cluster.State())
		}
	}
	return nil
}

// awaitPortFree waits until nothing listens on addr any more, or ctx ends.
func awaitPortFree(ctx context.Context, addr string) error {
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			_ = l.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("multinode: port %s still in use: %w", addr, errors.Join(err, ctx.Err()))
		case <-time.After(20 * time.Millisecond): // polling the kernel, not the actors
		}
	}
}

// FreePorts returns n different ports on 127.0.0.1, lowest first, each free for both
// TCP and UDP (serf gossips on both): for nodes whose addresses must be known before
// they start (seed nodes, a node that must have the lowest address). Another process
// may take one before the node binds it; on a test machine that is rare.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func freePorts(n int) ([]int, error) {
	var held []io.Closer
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			return nil, fmt.Errorf("multinode: no %d ports free for both TCP and UDP", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("multinode: %w", err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		held = append(held, u)
		ports = append(ports, port)
	}
	slices.Sort(ports)
	return ports, nil
}
