package multinode

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/faultnet"
	"go.uber.org/zap/zapcore"
)

// Options configure a test cluster. Zero fields mean the documented defaults.
type Options struct {
	// Nodes is how many nodes Start starts. Default 3.
	Nodes int
	// Registry is shared by every node's transport; default an empty registry.
	Registry *serialization.Registry
	// StableAfter is the split-brain resolver's stable-after. Default 3s: with
	// cluster.TestTiming under -race on a loaded machine, the heartbeat detector (which
	// adapts to the jitter of each link) detected the members of one partition up to 2s
	// apart.
	StableAfter time.Duration
	// Configure, when set, adjusts node i's cluster config before it starts.
	Configure func(i int, c *cluster.Config)
	// ConfigureRemote, when set, adjusts node i's remote config before it starts.
	ConfigureRemote func(i int, c *remote.Config)
	// ConfigureSystem, when set, adjusts node i's actor system config (its phase
	// timeouts, say) before it starts; the test kit sets the Logger first.
	ConfigureSystem func(i int, c *actor.Config)
	// NoWait makes Start return without waiting for every node to be Up.
	NoWait bool
	// Seeds, when above 0, makes the first Seeds nodes the seed nodes of every node:
	// each node's config lists their gossip addresses, node 0 first, the same list on
	// every node as docs/cluster.md advises, and Restart keeps it. Their gossip ports
	// are picked before the nodes start. By default node 0 forms the cluster alone,
	// the others join through it, and a restarted node joins through a live node.
	Seeds int
}

// Cluster is a set of nodes in one process on 127.0.0.1, each an actor system with
// remoting and cluster membership, wired through a fault-injecting network
// (testkit/faultnet) plugged into the transports' seams.
type Cluster struct {
	t    testing.TB
	opts Options
	net  *faultnet.Network

	mu       sync.Mutex
	nodes    []*Node
	seeds    []string // with Options.Seeds: every node's seed nodes
	stopLogs []func() // the nodes' test loggers, stopped after the shutdown at the end
}

// Node is one member of a test cluster.
type Node struct {
	Index   int
	System  *actor.System
	Remote  *remote.Remote
	Cluster *cluster.Cluster

	name       string
	remotePort int
	gossip     string // "127.0.0.1:port"
	crashed    bool
}

// Start starts opts.Nodes nodes, the first as the seed of the others, and waits until
// every node sees every node Up. Everything is shut down at the end of the test.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Registry == nil {
		opts.Registry = serialization.NewRegistry()
	}
	if opts.StableAfter == 0 {
		opts.StableAfter = 3 * time.Second
	}
	c := &Cluster{t: t, opts: opts, net: faultnet.New()}
	t.Cleanup(c.shutdownAll)
	for i := range opts.Nodes {
		c.nodes = append(c.nodes, &Node{Index: i, name: "node" + strconv.Itoa(i)})
	}
	for i, port := range FreePorts(t, min(opts.Seeds, opts.Nodes)) {
		c.nodes[i].gossip = "127.0.0.1:" + strconv.Itoa(port)
		c.seeds = append(c.seeds, c.nodes[i].gossip)
	}
	for i, n := range c.nodes {
		seeds := c.seeds
		if seeds == nil && i > 0 {
			seeds = []string{c.nodes[0].gossip}
		}
		c.boot(n, seeds)
	}
	if !opts.NoWait {
		c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	}
	return c
}

// boot starts (or restarts) node n, on its previous ports if it had any.
func (c *Cluster) boot(n *Node, seeds []string) {
	t := c.t
	t.Helper()
	logger, stopLog := testkit.NewLogger(t, zapcore.InfoLevel)
	ac := actor.Config{Logger: logger}
	if c.opts.ConfigureSystem != nil {
		c.opts.ConfigureSystem(n.Index, &ac)
	}
	sys, err := actor.New(n.name, ac)
	if err != nil {
		t.Fatalf("multinode: %v", err)
	}
	c.mu.Lock()
	c.stopLogs = append(c.stopLogs, stopLog)
	c.mu.Unlock()
	seams := c.net.Node(n.name)
	c.net.Reconnect(n.name) // a restarted node is no longer crashed
	rc := remote.Config{
		Registry:            c.opts.Registry,
		ListenPort:          n.remotePort,
		ReconnectBackoffMin: 10 * time.Millisecond,
		ReconnectBackoffMax: 200 * time.Millisecond,
	}
	seams.Install(&rc, nil)
	if c.opts.ConfigureRemote != nil {
		c.opts.ConfigureRemote(n.Index, &rc)
	}
	r, err := remote.Start(sys, rc)
	if err != nil {
		t.Fatalf("multinode: remote on node %d: %v", n.Index, err)
	}
	gossipPort := 0
	if n.gossip != "" {
		_, p, _ := splitPort(n.gossip)
		gossipPort = p
	}
	node := n
	cfg := cluster.Config{
		GossipPort:        gossipPort,
		SeedNodes:         seeds,
		JoinRetryInterval: 50 * time.Millisecond,
		Timing:            cluster.TestTiming(),
		Downing:           cluster.DowningConfig{StableAfter: c.opts.StableAfter},
	}
	seams.Install(nil, &cfg)
	if c.opts.Configure != nil {
		c.opts.Configure(n.Index, &cfg)
	}
	cl, err := cluster.Start(sys, cfg)
	if err != nil {
		t.Fatalf("multinode: cluster on node %d: %v", n.Index, err)
	}
	c.mu.Lock()
	node.System, node.Remote, node.Cluster = sys, r, cl
	node.remotePort = r.Address().Port
	node.gossip = cl.GossipAddress()
	node.crashed = false
	c.mu.Unlock()
}

func splitPort(hostport string) (string, int, error) {
	for i := len(hostport) - 1; i >= 0; i-- {
		if hostport[i] == ':' {
			p, err := strconv.Atoi(hostport[i+1:])
			return hostport[:i], p, err
		}
	}
	return "", 0, fmt.Errorf("no port in %q", hostport)
}

// Add starts one more node, joining through the first live node, and returns it.
func (c *Cluster) Add() *Node {
	c.mu.Lock()
	n := &Node{Index: len(c.nodes), name: "node" + strconv.Itoa(len(c.nodes))}
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	c.boot(n, c.liveSeed(n))
	return n
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Nodes returns all nodes, crashed ones included.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Partition cuts every node of sideA off from every node of sideB, both in gossip and
// in the remote transport, until Heal.
func (c *Cluster) Partition(sideA, sideB []int) {
	for _, i := range sideA {
		for _, j := range sideB {
			a, b := c.Node(i).name, c.Node(j).name
			c.net.Cut(a, b)
			c.net.Cut(b, a)
		}
	}
}

// HealPartition removes the cuts Partition(sideA, sideB) made, and only those.
func (c *Cluster) HealPartition(sideA, sideB []int) {
	for _, i := range sideA {
		for _, j := range sideB {
			a, b := c.Node(i).name, c.Node(j).name
			c.net.Restore(a, b)
			c.net.Restore(b, a)
		}
	}
}

// PartitionGossip cuts every node of sideA off from every node of sideB in serf's
// gossip only, both ways, until Heal or HealPartition. The remote transport between
// them goes on, and with it the cluster's heartbeats (which watch every member of a
// cluster of up to six) and the application's messages; serf sees each side fail on
// the other. What the cluster spreads by serf's user events (its Down decisions) never
// crosses the cut.
func (c *Cluster) PartitionGossip(sideA, sideB []int) {
	for _, i := range sideA {
		for _, j := range sideB {
			a, b := c.Node(i).name, c.Node(j).name
			c.net.CutGossip(a, b)
			c.net.CutGossip(b, a)
		}
	}
}

// CutOneWay drops what node from sends to node to, in serf's gossip, until Heal; serf
// routes around such a cut with its indirect probes and sees nothing. The remote
// transport between the two is cut both ways, as a TCP connection fails both ways when
// one direction drops its packets (its acknowledgements are lost), so that each node's
// heartbeats to the other go unanswered.
func (c *Cluster) CutOneWay(from, to int) {
	c.net.Cut(c.Node(from).name, c.Node(to).name)
}

// SlowLink delays every write node from makes to node to on the remote transport's
// connections by delay, until Heal (or SlowLink with 0); gossip is not delayed.
func (c *Cluster) SlowLink(from, to int, delay time.Duration) {
	c.net.Slow(c.Node(from).name, c.Node(to).name, delay)
}

// Heal removes every cut and delay (a crashed node stays cut off until Restart).
func (c *Cluster) Heal() {
	c.net.Heal()
}

// Network returns the fault-injecting network the nodes are wired through, for faults
// the methods above do not offer (Blackhole, say); node i is named Node(i).Name().
func (c *Cluster) Network() *faultnet.Network { return c.net }

// Name returns the node's name in its cluster's Network: "node" and its index.
func (n *Node) Name() string { return n.name }

// Crash kills node i as a crashed process would: no leave, no goodbye, no hand-over.
// Every link of the node is cut both ways at once (its connections close, its gossip
// is dropped), so the others hear nothing more from it and see it unreachable; then,
// behind the cut, the node downs itself (which stops its cluster services, and with
// them its singletons and shards, at once) and its system shuts down to free its
// goroutines. It returns once the system has terminated.
func (c *Cluster) Crash(i int) {
	n := c.Node(i)
	c.net.Isolate(n.name)
	c.mu.Lock()
	n.crashed = true
	c.mu.Unlock()
	_ = n.Cluster.Down(n.Cluster.SelfUniqueAddress())
	select {
	case <-n.Cluster.Stopped():
	case <-time.After(testkit.Dilated(5 * time.Second)):
		c.t.Logf("multinode: node %d did not stop its cluster services within 5s of its crash", i)
	}
	shutdown(c.t, n.System)
}

// Restart starts crashed (or shut down) node i again on the same addresses, as a new
// incarnation: with Options.Seeds, with the seed nodes every node has; otherwise
// joining through the first live node. It first waits (up to 10s, dilated) until the
// old incarnation's remote port is free: a system's transport closes a moment after it
// reports termination.
func (c *Cluster) Restart(i int) *Node {
	n := c.Node(i)
	awaitPortFree(c.t, "127.0.0.1:"+strconv.Itoa(n.remotePort))
	seeds := c.seeds
	if seeds == nil {
		seeds = c.liveSeed(n)
	}
	c.boot(n, seeds)
	return n
}

// awaitPortFree waits until nothing listens on addr any more.
func awaitPortFree(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(10 * time.Second))
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			_ = l.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("multinode: port %s still in use: %v", addr, err)
		}
		<-time.After(20 * time.Millisecond) // polling the kernel, not the actors
	}
}

// FreePorts returns n different ports on 127.0.0.1, lowest first, each free for both
// TCP and UDP (serf gossips on both): for nodes whose addresses must be known before
// they start (seed nodes, a node that must have the lowest address). Another process
// may take one before the node binds it; on a test machine that is rare.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var held []io.Closer
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 100*n {
			t.Fatalf("multinode: no %d ports free for both TCP and UDP", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("multinode: %v", err)
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
	return ports
}

// liveSeed returns the gossip address of the first running node other than n.
func (c *Cluster) liveSeed(n *Node) []string {
	for _, m := range c.Nodes() {
		if m != n && !m.crashed && m.System != nil {
			return []string{m.gossip}
		}
	}
	return nil
}

// AwaitAllUp waits until every live node sees every live node Up.
func (c *Cluster) AwaitAllUp(timeout time.Duration) {
	c.t.Helper()
	var live []*Node
	for _, n := range c.Nodes() {
		if !n.crashed {
			live = append(live, n)
		}
	}
	for _, n := range live {
		c.Await(n.Index, timeout, fmt.Sprintf("%d members Up", len(live)), func(st cluster.CurrentClusterState) bool {
			up := 0
			for _, m := range st.Members {
				if m.Status == cluster.Up {
					up++
				}
			}
			return up == len(live) && len(st.Members) == len(live)
		})
	}
}

// Await waits until cond holds for node i's view of the cluster, re-checking at every
// cluster event; it fails the test after timeout.
func (c *Cluster) Await(i int, timeout time.Duration, what string, cond func(cluster.CurrentClusterState) bool) {
	c.t.Helper()
	n := c.Node(i)
	changed := make(chan struct{}, 1)
	sub, err := n.System.SpawnSystem(actor.PropsFunc(func(ctx actor.Context) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}), "")
	if err != nil {
		c.t.Fatalf("multinode: %v", err)
	}
	defer func() { _ = n.System.Stop(sub) }()
	if err := n.Cluster.Subscribe(sub); err != nil && !n.crashed {
		select {
		case <-n.Cluster.Stopped():
		default:
			c.t.Fatalf("multinode: subscribe on node %d: %v", i, err)
		}
	}
	deadline := time.After(timeout)
	for !cond(n.Cluster.State()) {
		select {
		case <-changed:
		case <-n.Cluster.Stopped():
			if !cond(n.Cluster.State()) {
				c.t.Fatalf("multinode: node %d stopped before %s; state %+v", i, what, n.Cluster.State())
			}
			return
		case <-deadline:
			c.t.Fatalf("multinode: node %d: no %s within %v; state %+v", i, what, timeout, n.Cluster.State())
		}
	}
}

// shutdownAll shuts every node down at the end of the test, and then stops their
// loggers: what the nodes log while they shut down reaches the test's log.
func (c *Cluster) shutdownAll() {
	for _, n := range c.Nodes() {
		if n.System != nil {
			shutdown(c.t, n.System)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, stop := range c.stopLogs {
		stop()
	}
}

func shutdown(t testing.TB, sys *actor.System) {
	select {
	case <-sys.Terminated():
		return // the test shut it down already, and has seen the outcome
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Errorf("multinode: shutdown %s: %v", sys.Name(), err)
	}
}
