package main

import (
	"fmt"
	"runtime/metrics"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/faultnet"
)

// clusterNode is one in-process node of the cluster scenarios.
type clusterNode struct {
	sys *actor.System
	r   *remote.Remote
	c   *cluster.Cluster
	reg *serialization.Registry // the registry of its transport, shared by ddata and sharding
}

// stableAfter is the split-brain resolver's stable-after in the cluster scenarios: the
// shortest that cluster.TestTiming allows (twice its detection spread of about 0.66s).
const stableAfter = 1400 * time.Millisecond

// network connects the in-process nodes of the cluster scenarios, through the
// transports' seams, so that a scenario can crash one (crash).
var network = faultnet.New()

func startClusterNode(i int, seed string) (*clusterNode, error) {
	name := fmt.Sprintf("node%d", i)
	sys, err := actor.New(name, baseConfig())
	if err != nil {
		return nil, err
	}
	seams := network.Node(name)
	network.Reconnect(name) // an earlier scenario's node of that name may have crashed
	reg := wireRegistry()
	rc := remote.Config{Registry: reg, BackpressureTimeout: 10 * time.Second}
	seams.Install(&rc, nil)
	r, err := remote.Start(sys, rc)
	if err != nil {
		shutdown(sys)
		return nil, err
	}
	cfg := cluster.Config{
		JoinRetryInterval: 50 * time.Millisecond,
		Timing:            cluster.TestTiming(),
		Downing:           cluster.DowningConfig{StableAfter: stableAfter},
	}
	if seed != "" {
		cfg.SeedNodes = []string{seed}
	}
	seams.Install(nil, &cfg)
	c, err := cluster.Start(sys, cfg)
	if err != nil {
		shutdown(sys)
		return nil, err
	}
	return &clusterNode{sys: sys, r: r, c: c, reg: reg}, nil
}

// crash kills the node as a crashed process would, as far as the others can tell:
// every link of it is cut at once, so they hear nothing more from it (no leave, no
// hand-over). Behind the cut it downs itself, which stops its cluster services and
// then, in the background, its system.
func (n *clusterNode) crash() {
	network.Isolate(n.sys.Name())
	_ = n.c.Down(n.c.SelfUniqueAddress())
}

// formCluster starts n nodes, all joining the first, and returns when every node sees
// n members Up.
func formCluster(n int) ([]*clusterNode, error) {
	nodes := make([]*clusterNode, 0, n)
	for i := range n {
		seed := ""
		if i > 0 {
			seed = nodes[0].c.GossipAddress()
		}
		node, err := startClusterNode(i, seed)
		if err != nil {
			stopCluster(nodes)
			return nil, err
		}
		nodes = append(nodes, node)
	}
	err := waitFor(nodes, 60*time.Second, func(st cluster.CurrentClusterState) bool {
		up := 0
		for _, m := range st.Members {
			if m.Status == cluster.Up {
				up++
			}
		}
		return up == n && len(st.Members) == n
	})
	if err != nil {
		stopCluster(nodes)
		return nil, err
	}
	return nodes, nil
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

func stopCluster(nodes []*clusterNode) {
	for _, n := range nodes {
		shutdown(n.sys)
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
