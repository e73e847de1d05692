package multinode

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/faultnet"
)

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

// Crash kills node i as a crashed process would: no leave, no goodbye, no hand-over.
// Every link of the node is cut both ways at once (its connections close, its gossip
// is dropped), so the others hear nothing more from it and see it unreachable; then,
// behind the cut, the node downs itself (which stops its cluster services, and with
// them its singletons and shards, at once) and its system shuts down to free its
// goroutines. It returns once the system has terminated. What goes wrong on the way
// (the cluster services not stopped within 5s, the shutdown failing) is logged: in the
// test's log, or on a Cluster from New in Options.Logger.
func (c *Cluster) Crash(i int) {
	n := c.Node(i)
	c.net.Isolate(n.name)
	c.mu.Lock()
	n.crashed = true
	sys, cl := n.System, n.Cluster
	c.mu.Unlock()
	_ = cl.Down(cl.SelfUniqueAddress())
	select {
	case <-cl.Stopped():
	case <-time.After(testkit.Dilated(5 * time.Second)):
		if c.t != nil {
			c.t.Logf("multinode: node %d did not stop its cluster services within 5s of its crash", i)
		} else {
			c.log.Warn(fmt.Sprintf("multinode: node %d did not stop its cluster services within 5s of its crash", i))
		}
	}
	c.shutdown(sys)
}

// Restart starts crashed (or shut down) node i again on the same addresses, as a new
// incarnation: with Options.Seeds, with the seed nodes every node has; otherwise
// joining through the first live node. It first waits (up to 10s, dilated) until the
// old incarnation's remote port is free: a system's transport closes a moment after it
// reports termination. It does not wait for the node to be Up (AwaitAllUp does).
// Options.OnStart runs on the new incarnation too.
func (c *Cluster) Restart(i int) *Node {
	if c.t != nil {
		c.t.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	n, err := c.RestartNode(ctx, i)
	if err != nil {
		c.fail(err)
	}
	return n
}

// RestartNode is Restart for programs: it waits for the old incarnation's remote port
// to be free within ctx, and returns an error where Restart fails the test. On an
// error the node stays down.
func (c *Cluster) RestartNode(ctx context.Context, i int) (*Node, error) {
	n := c.Node(i)
	if err := awaitPortFree(ctx, "127.0.0.1:"+strconv.Itoa(n.remotePort)); err != nil {
		return nil, err
	}
	seeds := c.seeds
	if seeds == nil {
		seeds = c.liveSeed(n)
	}
	if err := c.boot(n, seeds); err != nil {
		return nil, err
	}
	return n, nil
}

// Add starts one more node, joining through the first live node, and returns it. It
// does not wait for the node to be Up (AwaitAllUp does).
func (c *Cluster) Add() *Node {
	if c.t != nil {
		c.t.Helper()
	}
	n, err := c.AddNode()
	if err != nil {
		c.fail(err)
	}
	return n
}

// AddNode is Add for programs: it returns an error where Add fails the test.
func (c *Cluster) AddNode() (*Node, error) {
	c.mu.Lock()
	n := &Node{Index: len(c.nodes), name: c.opts.Name + strconv.Itoa(len(c.nodes))}
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
	if err := c.boot(n, c.liveSeed(n)); err != nil {
		return nil, err
	}
	return n, nil
}

// liveSeed returns the gossip address of the first running node other than n.
func (c *Cluster) liveSeed(n *Node) []string {
	for _, m := range c.Nodes() {
		if m != n && !c.isCrashed(m) && c.systemOf(m) != nil {
			return []string{m.gossip}
		}
	}
	return nil
}
