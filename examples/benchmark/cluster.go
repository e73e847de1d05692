package main

import (
	"context"
	"fmt"
	"runtime/metrics"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// clusterNode is one in-process node of the cluster scenarios, started by
// testkit/multinode: the nodes are connected through a network that can cut a node's
// links, so that a scenario can crash one (crash).
type clusterNode struct {
	sys *actor.System
	r   *remote.Remote
	c   *cluster.Cluster
	reg *serialization.Registry // the registry of its transport, shared by ddata and sharding

	nodes   *multinode.Cluster // the cluster it belongs to
	index   int                // its index there
	crashed chan struct{}      // closed when a crash has shut the node down
}

// stableAfter is the split-brain resolver's stable-after in the cluster scenarios: the
// shortest that cluster.TestTiming allows (twice its detection spread of about 0.66s).
const stableAfter = 1400 * time.Millisecond

// clusterOptions are the multinode options of the cluster scenarios' nodes: the
// benchmark's actor system config, the wire messages registered, and the transport's
// default reconnect backoff (as in the scenarios' figures before multinode).
func clusterOptions(n int) multinode.Options {
	return multinode.Options{
		Nodes:           n,
		Registry:        wireRegistry(),
		StableAfter:     stableAfter,
		ConfigureSystem: func(_ int, c *actor.Config) { *c = baseConfig() },
		ConfigureRemote: func(_ int, c *remote.Config) {
			c.BackpressureTimeout = 10 * time.Second
			c.ReconnectBackoffMin, c.ReconnectBackoffMax = 0, 0
		},
	}
}

// nodesOf returns the benchmark's view of mc's nodes.
func nodesOf(mc *multinode.Cluster, reg *serialization.Registry) []*clusterNode {
	var nodes []*clusterNode
	for _, n := range mc.Nodes() {
		nodes = append(nodes, nodeOf(mc, n, reg))
	}
	return nodes
}

func nodeOf(mc *multinode.Cluster, n *multinode.Node, reg *serialization.Registry) *clusterNode {
	return &clusterNode{sys: n.System, r: n.Remote, c: n.Cluster, reg: reg, nodes: mc, index: n.Index}
}

// addNode starts one more node in nodes' cluster, joining through its first node.
func addNode(nodes []*clusterNode) (*clusterNode, error) {
	n, err := nodes[0].nodes.AddNode()
	if err != nil {
		return nil, err
	}
	return nodeOf(nodes[0].nodes, n, nodes[0].reg), nil
}

// crash kills the node as a crashed process would (multinode's Crash): every link of
// it is cut at once, so the others hear nothing more from it (no leave, no
// hand-over); behind the cut it downs itself, which stops its cluster services, and
// its system shuts down. The crash runs in the background, so that a scenario's clock
// runs from the cut; crashed is closed when the system has shut down.
func (n *clusterNode) crash() {
	n.crashed = make(chan struct{})
	go func() {
		defer close(n.crashed)
		n.nodes.Crash(n.index)
	}()
}

// formCluster starts n nodes, all joining the first, and returns when every node sees
// n members Up.
func formCluster(n int) ([]*clusterNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := clusterOptions(n)
	mc, err := multinode.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	return nodesOf(mc, opts.Registry), nil
}

// waitFor polls every node's view (every millisecond) until cond holds for all.
func waitFor(nodes []*clusterNode, timeout time.Duration, cond func(cluster.CurrentClusterState) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		all := true
		for _, n := range nodes {
			if !cond(n.c.State()) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster did not converge within %v", timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopCluster shuts the nodes of a scenario down, once a crashed one has shut down.
func stopCluster(nodes []*clusterNode) {
	for _, n := range nodes {
		if n.crashed != nil {
			<-n.crashed
		}
	}
	if len(nodes) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(nodes))*30*time.Second)
		defer cancel()
		_ = nodes[0].nodes.Shutdown(ctx)
	}
}

func cpuSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}

// runClusterForm times n nodes from the first start until every node sees all Up.
func runClusterForm(n int) (result, error) {
	cpu0 := cpuSeconds()
	start := time.Now()
	nodes, err := formCluster(n)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	cpu := cpuSeconds() - cpu0
	stopCluster(nodes)
	return result{"n": n, "seconds": round(took.Seconds(), 3), "cpu_seconds": round(cpu, 3)}, nil
}

// runClusterFailover forms n nodes, crashes one, and times until every survivor has
// downed and removed it.
func runClusterFailover(n int) (result, error) {
	nodes, err := formCluster(n)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	victim := nodes[n-1]
	gone := victim.c.SelfUniqueAddress()
	survivors := nodes[:n-1]
	start := time.Now()
	victim.crash()
	err = waitFor(survivors, 60*time.Second, func(st cluster.CurrentClusterState) bool {
		for _, m := range st.Members {
			if m.Unique == gone {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	return result{"n": n, "seconds": round(took.Seconds(), 3), "stable_after_seconds": stableAfter.Seconds()}, nil
}
