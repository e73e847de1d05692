package multinode

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Options configure a cluster of nodes in one process. Zero fields mean the
// documented defaults.
type Options struct {
	// Nodes is how many nodes Start and New start. Default 3.
	Nodes int
	// Name is the prefix of the nodes' names: node i's actor system, and its name in
	// the cluster's Network, is Name followed by i. Default "node".
	Name string
	// Registry is shared by every node's transport (and is the one to give the
	// services OnStart starts); default an empty registry.
	Registry *serialization.Registry
	// StableAfter is the split-brain resolver's stable-after. Default 3s: with
	// cluster.TestTiming under -race on a loaded machine, the heartbeat detector (which
	// adapts to the jitter of each link) detected the members of one partition up to 2s
	// apart.
	StableAfter time.Duration
	// Logger is every node's logger. Default: with Start, the test's log (at Info);
	// with New, the actor system's default (warnings and errors on standard error).
	// ConfigureSystem may still change it per node.
	Logger *zap.Logger
	// Configure, when set, adjusts node i's cluster config before it starts: its
	// Timing (cluster.TestTiming by default), Downing, MinNrOfMembers, Roles, or a
	// fixed GossipPort, say.
	Configure func(i int, c *cluster.Config)
	// ConfigureRemote, when set, adjusts node i's remote config before it starts (a
	// fixed ListenPort, say).
	ConfigureRemote func(i int, c *remote.Config)
	// ConfigureSystem, when set, adjusts node i's actor system config (its phase
	// timeouts, say) before it starts; the Logger is set first.
	ConfigureSystem func(i int, c *actor.Config)
	// OnStart, when set, is called on each node once its remoting and cluster have
	// started, before waiting for it to be Up, and again whenever the node is
	// restarted or added: the place to start what else a node runs (persistence,
	// distributed data, sharding, singletons). An error fails the node's start, and
	// its system is shut down.
	OnStart func(n *Node) error
	// NoWait makes Start and New return without waiting for every node to be Up.
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
	t    testing.TB  // nil for a Cluster from New
	log  *zap.Logger // where a Cluster from New reports what a test would log
	opts Options
	net  *faultnet.Network

	mu       sync.Mutex
	nodes    []*Node
	seeds    []string // with Options.Seeds: every node's seed nodes
	stopLogs []func() // the nodes' test loggers, stopped after the shutdown at the end
}

// Node is one member of a cluster.
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
// every node sees every node Up. It is New for tests: each node logs to the test's
// log, a failure fails the test, and everything is shut down at the end of the test.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c := newCluster(t, opts)
	t.Cleanup(c.shutdownAll)
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	if !c.opts.NoWait {
		c.AwaitAllUp(testkit.Dilated(10 * time.Second))
	}
	return c
}

// New starts opts.Nodes nodes in this process, the first as the seed of the others,
// and unless opts.NoWait waits until every node sees every node Up, or until ctx ends.
// It is Start for programs (examples, demos, benchmarks): it returns an error instead
// of failing a test, and the caller shuts the nodes down with Shutdown. On an error,
// the nodes it started are shut down again.
//
// The methods that fail a test when they fail (Add, Restart, Await, AwaitAllUp) log
// the failure on a Cluster from New and return (Add and Restart a nil node); programs
// use AddNode, RestartNode, WaitFor and WaitAllUp, which return the error.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	c := newCluster(nil, opts)
	err := c.start()
	if err == nil && !c.opts.NoWait {
		err = c.WaitAllUp(ctx)
	}
	if err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
		defer cancel()
		return nil, errors.Join(err, c.Shutdown(sctx))
	}
	return c, nil
}

func newCluster(t testing.TB, opts Options) *Cluster {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Name == "" {
		opts.Name = "node"
	}
	if opts.Registry == nil {
		opts.Registry = serialization.NewRegistry()
	}
	if opts.StableAfter == 0 {
		opts.StableAfter = 3 * time.Second
	}
	c := &Cluster{t: t, log: opts.Logger, opts: opts, net: faultnet.New()}
	if c.log == nil {
		c.log = stderrLogger()
	}
	return c
}

// stderrLogger writes warnings and errors on standard error, as an actor system does
// when it is given no logger.
func stderrLogger() *zap.Logger {
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), zapcore.WarnLevel))
}

// start boots every node, without waiting for them to be Up.
func (c *Cluster) start() error {
	for i := range c.opts.Nodes {
		c.nodes = append(c.nodes, &Node{Index: i, name: c.opts.Name + strconv.Itoa(i)})
	}
	ports, err := freePorts(min(c.opts.Seeds, c.opts.Nodes))
	if err != nil {
		return err
	}
	for i, port := range ports {
		c.nodes[i].gossip = "127.0.0.1:" + strconv.Itoa(port)
		c.seeds = append(c.seeds, c.nodes[i].gossip)
	}
	for i, n := range c.nodes {
		seeds := c.seeds
		if seeds == nil && i > 0 {
			seeds = []string{c.nodes[0].gossip}
		}
		if err := c.boot(n, seeds); err != nil {
			return err
		}
	}
	return nil
}

// boot starts (or restarts) node n, on its previous ports if it had any. When it
// fails, the node's system is shut down and the node counts as crashed.
func (c *Cluster) boot(n *Node, seeds []string) error {
	ac := actor.Config{Logger: c.opts.Logger}
	if c.t != nil && ac.Logger == nil {
		logger, stopLog := testkit.NewLogger(c.t, zapcore.InfoLevel)
		ac.Logger = logger
		c.mu.Lock()
		c.stopLogs = append(c.stopLogs, stopLog)
		c.mu.Unlock()
	}
	if c.opts.ConfigureSystem != nil {
		c.opts.ConfigureSystem(n.Index, &ac)
	}
	sys, err := actor.New(n.name, ac)
	if err != nil {
		return fmt.Errorf("multinode: %w", err)
	}
	fail := func(err error) error {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
		defer cancel()
		c.mu.Lock()
		n.crashed = true
		c.mu.Unlock()
		return errors.Join(err, shutdownSystem(ctx, sys))
	}
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
		return fail(fmt.Errorf("multinode: remote on node %d: %w", n.Index, err))
	}
	gossipPort := 0
	if n.gossip != "" {
		_, p, _ := splitPort(n.gossip)
		gossipPort = p
	}
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
		return fail(fmt.Errorf("multinode: cluster on node %d: %w", n.Index, err))
	}
	c.mu.Lock()
	n.System, n.Remote, n.Cluster = sys, r, cl
	n.remotePort = r.Address().Port
	n.gossip = cl.GossipAddress()
	n.crashed = false
	c.mu.Unlock()
	if c.opts.OnStart != nil {
		if err := c.opts.OnStart(n); err != nil {
			return fail(fmt.Errorf("multinode: OnStart on node %d: %w", n.Index, err))
		}
	}
	return nil
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

// isCrashed reports whether n was crashed (or failed to start) and not restarted.
func (c *Cluster) isCrashed(n *Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return n.crashed
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

// Name returns the node's name, its actor system's and its name in its cluster's
// Network: Options.Name ("node" by default) and its index.
func (n *Node) Name() string { return n.name }

// Shutdown shuts every running node down (a coordinated shutdown: a node hands its
// shards and singletons over and leaves), one after the other, within ctx, and
// returns their errors joined. A Cluster from Start is shut down at the end of its
// test; a program calls Shutdown for a Cluster from New. Nodes already shut down or
// crashed are skipped, so Shutdown may be called again.
func (c *Cluster) Shutdown(ctx context.Context) error {
	var errs []error
	for _, n := range c.Nodes() {
		if sys := c.systemOf(n); sys != nil {
			errs = append(errs, shutdownSystem(ctx, sys))
		}
	}
	return errors.Join(errs...)
}

// systemOf returns n's current actor system (a restart replaces it), read under the
// lock boot writes it under.
func (c *Cluster) systemOf(n *Node) *actor.System {
	c.mu.Lock()
	defer c.mu.Unlock()
	return n.System
}

// shutdownAll shuts every node down at the end of the test, each within 15s, and then
// stops their loggers: what the nodes log while they shut down reaches the test's log.
func (c *Cluster) shutdownAll() {
	for _, n := range c.Nodes() {
		if sys := c.systemOf(n); sys != nil {
			c.shutdown(sys)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, stop := range c.stopLogs {
		stop()
	}
}

// shutdown shuts sys down within 15s (dilated), and reports an error: to the test as
// an error, or to the log.
func (c *Cluster) shutdown(sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
	defer cancel()
	if err := shutdownSystem(ctx, sys); err != nil {
		if c.t != nil {
			c.t.Errorf("%v", err)
		} else {
			c.log.Error("multinode: shutdown failed", zap.Error(err))
		}
	}
}

func shutdownSystem(ctx context.Context, sys *actor.System) error {
	select {
	case <-sys.Terminated():
		return nil // shut down already, and the caller has seen the outcome
	default:
	}
	if err := sys.Shutdown(ctx); err != nil {
		return fmt.Errorf("multinode: shutdown %s: %w", sys.Name(), err)
	}
	return nil
}

// fail reports a failure of a method without an error result: it fails the test, or,
// on a Cluster from New, logs it.
func (c *Cluster) fail(err error) {
	if c.t != nil {
		c.t.Helper()
		c.t.Fatal(err)
	}
	c.log.Error("multinode: failed", zap.Error(err))
}
