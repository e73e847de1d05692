package singleton_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Messages of the test singleton, registered in every test cluster's registry.
type (
	// Ping asks the singleton for a Pong.
	Ping struct{ Seq int }
	// Pong answers Ping from the instance on node Node.
	Pong struct {
		Node int
		Seq  int
	}
	// Numbered is one message of a numbered stream; the singleton records it.
	Numbered struct {
		Stream string
		Seq    int
	}
	// Terminate is the test singleton's termination message.
	Terminate struct{}
	// Unregistered is never registered.
	Unregistered struct{}
)

func testRegistry(t *testing.T) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[Ping](reg, "test.Ping"),
		serialization.Register[Pong](reg, "test.Pong"),
		serialization.Register[Numbered](reg, "test.Numbered"),
		serialization.Register[Terminate](reg, "test.Terminate"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// table records every singleton instance's start and stop, and what the instances
// received, across the nodes of one test; it is the shared in-process "never two"
// table. An instance is alive from its Started to its Stopped.
type table struct {
	mu         sync.Mutex
	next       int
	alive      map[int]int // instance id -> node
	events     []string    // "start n", "terminate n", "stop n", and notes
	violations []string
	streams    map[string][]int // stream -> the Seqs received, in order
	changed    chan struct{}
}

func newTable(t *testing.T) *table {
	tb := &table{alive: make(map[int]int), streams: make(map[string][]int), changed: make(chan struct{})}
	// Registered before the cluster starts, so that it runs after every node has
	// shut down: an overlap during shutdown counts too.
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, v := range tb.violations {
			t.Errorf("never two: %s", v)
		}
	})
	return tb
}

func (tb *table) note(format string, args ...any) {
	tb.mu.Lock()
	tb.events = append(tb.events, fmt.Sprintf(format, args...))
	tb.wake()
	tb.mu.Unlock()
}

// wake tells the waiters that something changed; tb.mu is held.
func (tb *table) wake() {
	close(tb.changed)
	tb.changed = make(chan struct{})
}

func (tb *table) started(node int) int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.next++
	id := tb.next
	if len(tb.alive) > 0 {
		tb.violations = append(tb.violations, fmt.Sprintf("instance %d started on node %d while %v (instance: node) alive; events %v",
			id, node, tb.alive, tb.events))
	}
	tb.alive[id] = node
	tb.events = append(tb.events, fmt.Sprintf("start %d", node))
	tb.wake()
	return id
}

func (tb *table) stopped(id, node int) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	delete(tb.alive, id)
	tb.events = append(tb.events, fmt.Sprintf("stop %d", node))
	tb.wake()
}

func (tb *table) received(n Numbered) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.streams[n.Stream] = append(tb.streams[n.Stream], n.Seq)
	tb.wake()
}

// await waits until cond holds on the table (checked under its lock).
func (tb *table) await(t *testing.T, timeout time.Duration, what string, cond func(tb *table) bool) {
	t.Helper()
	deadline := time.After(testkit.Dilated(timeout))
	for {
		tb.mu.Lock()
		ok, ch := cond(tb), tb.changed
		events := append([]string(nil), tb.events...)
		tb.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s within %v; events %v", what, timeout, events)
		}
	}
}

// hold checks for d that bad (checked under the table's lock at every change)
// returns "", and fails the test with what it returns otherwise. It watches a
// condition that must not happen for a bounded time.
func (tb *table) hold(t *testing.T, d time.Duration, bad func(tb *table) string) {
	t.Helper()
	end := time.After(testkit.Dilated(d))
	for {
		tb.mu.Lock()
		what, ch := bad(tb), tb.changed
		events := append([]string(nil), tb.events...)
		tb.mu.Unlock()
		if what != "" {
			t.Fatalf("%s; events %v", what, events)
		}
		select {
		case <-ch:
		case <-end:
			return
		}
	}
}

// aliveOn returns the nodes with a live instance.
func (tb *table) aliveOn() []int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var nodes []int
	for _, n := range tb.alive {
		nodes = append(nodes, n)
	}
	return nodes
}

// eventsSnapshot returns the events so far.
func (tb *table) eventsSnapshot() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.events...)
}

// stream returns the Seqs received on stream.
func (tb *table) stream(name string) []int {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]int(nil), tb.streams[name]...)
}

// instance is the test singleton: it records its life in the table and answers Ping.
type instance struct {
	tab  *table
	node int
	id   int
}

func (in *instance) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		in.id = in.tab.started(in.node)
	case actor.Stopped:
		in.tab.stopped(in.id, in.node)
	case Ping:
		_ = ctx.Respond(Pong{Node: in.node, Seq: m.Seq})
	case Numbered:
		in.tab.received(m)
	case Terminate:
		in.tab.note("terminate %d", in.node)
		_ = ctx.Stop(ctx.Self())
	}
}

// harness is a test cluster with a singleton manager and a proxy on each node.
type harness struct {
	t    *testing.T
	tab  *table
	c    *multinode.Cluster
	name string
	role string

	mu       sync.Mutex
	managers map[int]*singleton.Manager
	proxies  map[int]actor.Ref
	mod      func(node int, cfg *singleton.Config)
}

type harnessOptions struct {
	nodes int
	opts  multinode.Options
	role  string
	mod   func(node int, cfg *singleton.Config)
	// noStart leaves starting managers and proxies to the test.
	noStart bool
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	h := &harness{t: t, tab: newTable(t), name: "counter", role: o.role, mod: o.mod,
		managers: make(map[int]*singleton.Manager), proxies: make(map[int]actor.Ref)}
	if o.nodes == 0 {
		o.nodes = 3
	}
	o.opts.Nodes = o.nodes
	if o.opts.Registry == nil {
		o.opts.Registry = testRegistry(t)
	}
	h.c = multinode.Start(t, o.opts)
	if !o.noStart {
		for _, n := range h.c.Nodes() {
			h.start(n.Index)
		}
	}
	return h
}

// config returns the singleton's configuration on node i.
func (h *harness) config(i int) singleton.Config {
	cfg := singleton.Config{
		Name:                  h.name,
		Role:                  h.role,
		Props:                 actor.PropsOf(func() actor.Actor { return &instance{tab: h.tab, node: i} }),
		HandOverRetryInterval: 200 * time.Millisecond,
	}
	if h.mod != nil {
		h.mod(i, &cfg)
	}
	return cfg
}

// start starts the manager (when the node has the role) and a proxy on node i.
func (h *harness) start(i int) {
	h.t.Helper()
	n := h.c.Node(i)
	if h.role == "" || hasRole(n, h.role) {
		m, err := singleton.Start(n.System, h.config(i))
		if err != nil {
			h.t.Fatalf("node %d: %v", i, err)
		}
		h.mu.Lock()
		h.managers[i] = m
		h.mu.Unlock()
	}
	p, err := singleton.Proxy(n.System, singleton.ProxyConfig{Name: h.name, Role: h.role,
		IdentificationInterval: 200 * time.Millisecond})
	if err != nil {
		h.t.Fatalf("node %d: proxy: %v", i, err)
	}
	h.mu.Lock()
	h.proxies[i] = p
	h.mu.Unlock()
}

func hasRole(n *multinode.Node, role string) bool {
	self := n.Cluster.SelfUniqueAddress()
	for _, m := range n.Cluster.State().Members {
		if m.Unique == self {
			for _, r := range m.Roles {
				if r == role {
					return true
				}
			}
		}
	}
	return false
}

func (h *harness) manager(i int) *singleton.Manager {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.managers[i]
}

func (h *harness) proxy(i int) actor.Ref {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proxies[i]
}

func (h *harness) addr(i int) cluster.UniqueAddress { return h.c.Node(i).Cluster.SelfUniqueAddress() }

// byAge returns the indexes of the live nodes, oldest first, as node from sees them.
func (h *harness) byAge(from int) []int {
	h.t.Helper()
	index := make(map[cluster.UniqueAddress]int)
	for _, n := range h.c.Nodes() {
		if n.Cluster != nil {
			index[n.Cluster.SelfUniqueAddress()] = n.Index
		}
	}
	var ms []cluster.Member
	for _, m := range h.c.Node(from).Cluster.State().Members {
		if m.Status == cluster.Up || m.Status == cluster.Leaving {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b cluster.Member) int {
		switch {
		case a.IsOlderThan(b):
			return -1
		case b.IsOlderThan(a):
			return 1
		}
		return 0
	})
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = index[m.Unique]
	}
	return out
}

// ping asks the singleton through node i's proxy until an instance answers, and
// returns the node that answered.
func (h *harness) ping(i int, timeout time.Duration) int {
	h.t.Helper()
	deadline := time.Now().Add(testkit.Dilated(timeout))
	var last error
	for seq := 1; time.Now().Before(deadline); seq++ {
		ctx, cancel := context.WithTimeout(context.Background(), min(time.Until(deadline), testkit.Dilated(time.Second)))
		p, err := actor.Ask[Pong](ctx, h.proxy(i), Ping{Seq: seq})
		cancel()
		if err == nil {
			if p.Seq != seq {
				h.t.Fatalf("node %d: Pong %d for Ping %d", i, p.Seq, seq)
			}
			return p.Node
		}
		last = err
	}
	h.t.Fatalf("node %d: no answer through the proxy within %v: %v; events %v", i, timeout, last, h.tab.eventsSnapshot())
	return -1
}

// awaitRunning waits until the singleton runs on node i, as the table and node i's
// manager see it.
func (h *harness) awaitRunning(i int, timeout time.Duration) {
	h.t.Helper()
	h.tab.await(h.t, timeout, fmt.Sprintf("instance on node %d", i), func(tb *table) bool {
		for _, n := range tb.alive {
			if n == i {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(timeout))
	defer cancel()
	if _, err := h.manager(i).AwaitStatus(ctx, func(s singleton.Status) bool { return s.Running }); err != nil {
		h.t.Fatalf("node %d: %v", i, err)
	}
}

// leave shuts node i down gracefully: the singleton hands over, then it leaves.
func (h *harness) leave(i int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(30*time.Second))
	defer cancel()
	if err := h.c.Node(i).System.Shutdown(ctx); err != nil {
		h.t.Errorf("node %d: shutdown: %v", i, err)
	}
}

// indexOf returns the position of the first event equal to e at or after from, or -1.
func indexOf(events []string, e string, from int) int {
	for j := from; j < len(events); j++ {
		if events[j] == e {
			return j
		}
	}
	return -1
}
