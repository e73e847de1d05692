// Command sharding runs the seeds' Counter, a persistent entity, on a three-node
// cluster with cluster sharding:
//
//	go run ./examples/sharding
//
// starts three nodes in this process, sharing one embedded badger journal (a temporary
// folder, or -dir), and
//
//  1. increments and decrements counters from every node, and shows where their shards
//     live;
//  2. makes one node leave gracefully: its shards are handed off to the others;
//  3. crashes another (the one that does not have the lowest address, which the
//     split-brain resolver keeps in a two-member cluster): after the resolver downs it,
//     its shards start on the survivor, whose counters recover from the journal;
//
// and after each step reads every counter, which must be intact.
//
// With -processes and a PostgreSQL database (the journal every process shares) the three
// nodes run as separate processes of this program instead, each started with -node:
//
//	go run ./examples/sharding -processes -postgres postgres://localhost/troupe
//
// A node started by hand with -node takes commands on its standard input ("inc ID",
// "dec ID", "get ID", "shards") and answers one line each.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.uber.org/zap"
)

type flags struct {
	dir        string
	idle       time.Duration
	shards     int
	counters   int
	verbose    bool
	node       bool
	processes  bool
	postgres   string
	name       string
	seed       string
	remotePort int
	gossipPort int
}

func main() {
	var f flags
	flag.StringVar(&f.dir, "dir", "", "journal folder (default: a temporary folder, removed at the end)")
	flag.DurationVar(&f.idle, "idle", 2*time.Second, "passivate counters idle this long")
	flag.IntVar(&f.shards, "shards", 12, "number of shards")
	flag.IntVar(&f.counters, "counters", 9, "number of counters")
	flag.BoolVar(&f.verbose, "v", false, "log warnings of the runtime")
	flag.BoolVar(&f.node, "node", false, "run one node with a PostgreSQL journal (-postgres), taking commands on stdin")
	flag.BoolVar(&f.processes, "processes", false, "run the demo with each node in a process of its own (needs -postgres)")
	flag.StringVar(&f.postgres, "postgres", "", "PostgreSQL connection string of the shared journal")
	flag.StringVar(&f.name, "name", "counter-0", "-node: the node's name")
	flag.StringVar(&f.seed, "seed", "", "-node: the gossip address of a running node to join")
	flag.IntVar(&f.remotePort, "remote-port", 0, "-node: remote port (0: any)")
	flag.IntVar(&f.gossipPort, "gossip-port", 0, "-node: gossip port (0: any)")
	flag.Parse()
	var err error
	switch {
	case f.node:
		err = runNode(f)
	case f.processes:
		err = runProcesses(f)
	default:
		err = runInProcess(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sharding:", err)
		os.Exit(1)
	}
}

func logger(verbose bool) *zap.Logger {
	if verbose {
		l, _ := zap.NewDevelopment()
		return l
	}
	return zap.NewNop()
}

// runInProcess is the demo with three nodes in this process.
func runInProcess(f flags) error {
	dir := f.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "troupe-sharding-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer store.Close()
	reg := serialization.NewRegistry()
	if err := registerCounter(reg); err != nil {
		return err
	}
	cfg := nodeConfig{reg: reg, journal: store, snapshots: store, idle: f.idle, shards: f.shards, logger: logger(f.verbose)}

	fmt.Println("starting three nodes sharing the journal in", dir)
	fmt.Println("(each node: an actor system with remoting, cluster membership, persistence and")
	fmt.Println("sharding; a counter is a persistent entity that any node reaches by its ID)")
	// testkit/multinode starts the nodes in this process, connected through a network
	// that can cut a node's links: the demo crashes one with it.
	regions := make([]actor.Ref, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := multinode.New(ctx, multinode.Options{
		Nodes:       3,
		Name:        "counter-",
		Registry:    reg,
		StableAfter: stableAfter,
		Logger:      cfg.logger,
		OnStart: func(n *multinode.Node) (err error) {
			regions[n.Index], err = startServices(n.System, cfg)
			return err
		},
	})
	if err != nil {
		return err
	}
	defer func() { _ = c.Shutdown(context.Background()) }()
	nodes := make([]*node, 3)
	for i, n := range c.Nodes() {
		nodes[i] = &node{name: n.Name(), sys: n.System, cluster: n.Cluster, region: regions[i]}
	}

	ids := make([]string, f.counters)
	want := map[string]int{}
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	fmt.Println("\n1. three increments and one decrement per counter, sent from every node")
	fmt.Println("   After each step: the shards each node hosts, as shard[running counters], then")
	fmt.Println("   every counter's value, the node it runs on, and whether the value is the one")
	fmt.Println("   the last change returned (intact). A counter idle for -idle (2 s) is passivated:")
	fmt.Println("   it is not listed as running, and recovers its count at its next message.")
	for j, id := range ids {
		for k, cmd := range []any{Increment{}, Increment{}, Increment{}, Decrement{}} {
			n := nodes[(j+k)%3]
			c, err := n.send(id, cmd)
			if err != nil {
				return fmt.Errorf("counter %s through %s: %w", id, n.name, err)
			}
			want[id] = c.Value
		}
	}
	if err := show(nodes, ids, want); err != nil {
		return err
	}

	fmt.Println("\n2. counter-2 leaves the cluster gracefully (its shards are handed off), then every")
	fmt.Println("   counter is incremented once more: counter-2's counters now run on the other two")
	fmt.Println("   nodes, with the counts they recovered from the journal")
	if err := nodes[2].leave(); err != nil {
		return err
	}
	nodes[2] = nil
	for _, id := range ids {
		c, err := nodes[0].send(id, Increment{})
		if err != nil {
			return fmt.Errorf("counter %s: %w", id, err)
		}
		want[id] = c.Value
	}
	if err := show(nodes, ids, want); err != nil {
		return err
	}

	// With two members left, keep-majority (the default downing strategy) keeps the
	// member with the lowest address when the other one becomes unreachable: the demo
	// crashes the other one, so that the survivor is the member the resolver keeps.
	victim, survivor := 1, 0
	if nodes[1].cluster.SelfUniqueAddress().Compare(nodes[0].cluster.SelfUniqueAddress()) < 0 {
		victim, survivor = 0, 1
	}
	fmt.Printf("\n3. %s crashes; once it is downed, its shards start on %s\n", nodes[victim].name, nodes[survivor].name)
	fmt.Println("   (the wait: failure detection, the split-brain resolver's stable-after of 2 s, and")
	fmt.Println("   the removal margin after the downing, so that the crashed node has stopped first)")
	start := time.Now()
	c.Crash(victim)
	nodes[victim] = nil
	for _, id := range ids {
		if _, err := eventually(nodes[survivor], id, 30*time.Second); err != nil {
			return err
		}
	}
	fmt.Printf("   every counter answers again after %v\n", time.Since(start).Round(100*time.Millisecond))
	if err := show(nodes, ids, want); err != nil {
		return err
	}
	fmt.Println("\ndone: every count survived a graceful leave and a crash")
	return nil
}

// eventually asks counter id until it answers (messages to a crashed node are lost).
func eventually(n *node, id string, timeout time.Duration) (Count, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := n.send(id, Get{})
		if err == nil || time.Now().After(deadline) {
			return c, err
		}
	}
}

// show prints where the shards live and every counter, and checks the counts.
func show(nodes []*node, ids []string, want map[string]int) error {
	for _, n := range nodes {
		if n == nil {
			continue
		}
		s, err := n.shards()
		if err != nil {
			return err
		}
		fmt.Printf("  %s hosts shards %s\n", n.name, s)
	}
	var live *node
	for _, n := range nodes {
		if n != nil {
			live = n
			break
		}
	}
	for _, id := range ids {
		c, err := eventually(live, id, 30*time.Second)
		if err != nil {
			return fmt.Errorf("counter %s: %w", id, err)
		}
		status := "intact"
		if c.Value != want[id] {
			status = fmt.Sprintf("WRONG: want %d", want[id])
		}
		fmt.Printf("  counter %s = %d on %s (%s)\n", id, c.Value, c.Node, status)
		if c.Value != want[id] {
			return fmt.Errorf("counter %s is %d, want %d", id, c.Value, want[id])
		}
	}
	return nil
}
