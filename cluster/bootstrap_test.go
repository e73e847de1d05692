package cluster_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/discovery"
	"github.com/troupe-go/troupe/testkit"
)

// fakeDiscovery is one node's discovery, whose answers the test sets. It counts the
// lookups, so that a test can wait for a node to have looked a number of times.
type fakeDiscovery struct {
	mu      sync.Mutex
	answer  func(n int) ([]discovery.Target, error) // n counts the lookups, from 1
	n       int
	changed chan struct{} // closed and replaced at every lookup
}

func newFakeDiscovery(answer func(n int) ([]discovery.Target, error)) *fakeDiscovery {
	return &fakeDiscovery{answer: answer, changed: make(chan struct{})}
}

// Lookup implements discovery.Discovery.
func (f *fakeDiscovery) Lookup(_ context.Context, l discovery.Lookup) ([]discovery.Target, error) {
	f.mu.Lock()
	f.n++
	n, answer := f.n, f.answer
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	if l.Service != "shop" {
		return nil, errors.New("unexpected service " + l.Service)
	}
	return answer(n)
}

// set makes answer give the answers from now on.
func (f *fakeDiscovery) set(answer func(n int) ([]discovery.Target, error)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

// awaitLookups waits until the node has looked up more times than now. It fails the
// test if n, when given, becomes Up first: it was to go on looking.
func (f *fakeDiscovery) awaitLookups(t *testing.T, more int, n *testNode) {
	t.Helper()
	f.mu.Lock()
	want := f.n + more
	f.mu.Unlock()
	var up chan struct{} // stays nil (never ready) without n
	if n != nil {
		up = make(chan struct{})
		n.RegisterOnMemberUp(func() { close(up) })
	}
	deadline := time.After(testkit.Dilated(20 * time.Second))
	for {
		f.mu.Lock()
		looked, changed := f.n, f.changed
		f.mu.Unlock()
		if looked >= want {
			return
		}
		select {
		case <-changed:
		case <-up:
			t.Fatalf("%s is Up in cluster %q (formed it: %v) after %d lookups; it was to go on looking (JoinProgress %+v)",
				n.GossipAddress(), n.ClusterID(), len(formed(n)) == 1, looked, n.JoinProgress())
		case <-deadline:
			t.Fatalf("%d lookups, want %d", looked, want)
		}
	}
}

// answers returns an answer that lists targets.
func answers(targets ...discovery.Target) func(int) ([]discovery.Target, error) {
	targets = slices.Clone(targets)
	return func(int) ([]discovery.Target, error) { return targets, nil }
}

// target returns the target of a gossip address, by host name when byName.
func target(t *testing.T, addr string, byName bool) discovery.Target {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if byName {
		host = "localhost"
	}
	return discovery.Target{Host: host, Port: gossipPort(t, addr)}
}

// The bootstrap settings of the tests: a margin of ten lookups.
const (
	testStableMargin   = 500 * time.Millisecond
	testLookupInterval = 50 * time.Millisecond
)

// bootstrapNode starts a node that bootstraps through d, on addr.
func bootstrapNode(t *testing.T, name, addr string, d discovery.Discovery, required int) *testNode {
	t.Helper()
	return node(t, name, cluster.Config{GossipPort: gossipPort(t, addr), Bootstrap: cluster.BootstrapConfig{
		Discovery: d, Lookup: discovery.Lookup{Service: "shop"}, RequiredContactPoints: required,
		StableMargin: testStableMargin, LookupInterval: testLookupInterval,
	}})
}

// lowest returns the node with the lowest gossip address (all on 127.0.0.1).
func lowest(t *testing.T, nodes ...*testNode) *testNode {
	return slices.MinFunc(nodes, func(a, b *testNode) int {
		return gossipPort(t, a.GossipAddress()) - gossipPort(t, b.GossipAddress())
	})
}

// awaitOneCluster waits until every node sees all of them Up, and checks that they
// carry one identity, formed by the node with the lowest address alone.
func awaitOneCluster(t *testing.T, nodes ...*testNode) {
	t.Helper()
	for _, n := range nodes {
		awaitUpMembers(t, n, nodes...)
	}
	for _, n := range nodes {
		if n.ClusterID() == "" || n.ClusterID() != nodes[0].ClusterID() {
			t.Fatalf("cluster identities %q and %q", n.ClusterID(), nodes[0].ClusterID())
		}
	}
}

// formed returns the nodes that logged forming a cluster.
func formed(nodes ...*testNode) []*testNode {
	var out []*testNode
	for _, n := range nodes {
		if n.logs.FilterMessageSnippet("formed a new cluster").Len() > 0 {
			out = append(out, n)
		}
	}
	return out
}

// Five nodes start at once; discovery reveals them one by one, in a random order,
// each after every node has looked up twice without it, with some targets by host
// name. One cluster forms, formed by the node with the lowest address, and all five
// are Up in it.
func TestBootstrapFiveNodesStartingTogetherFormOneCluster(t *testing.T) {
	addrs := gossipAddresses(t, 5)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	var revealed []discovery.Target
	var fakes []*fakeDiscovery
	var nodes []*testNode
	for i, a := range addrs {
		f := newFakeDiscovery(answers())
		fakes = append(fakes, f)
		nodes = append(nodes, bootstrapNode(t, "boot"+strconv.Itoa(i), a, f, len(addrs)))
	}
	for _, i := range rng.Perm(len(addrs)) {
		for _, f := range fakes {
			f.awaitLookups(t, 2, nil)
		}
		revealed = append(revealed, target(t, addrs[i], rng.IntN(2) == 0))
		for _, f := range fakes {
			f.set(answers(revealed...))
		}
	}
	awaitOneCluster(t, nodes...)
	if f := formed(nodes...); len(f) != 1 || f[0] != lowest(t, nodes...) {
		t.Fatalf("formed by %d nodes, want one: the lowest address, %s", len(f), lowest(t, nodes...).GossipAddress())
	}
	if o := nodes[0].State().Oldest; o == nil || o.Unique != lowest(t, nodes...).SelfUniqueAddress() {
		t.Fatalf("the oldest is %+v, want the founder", o)
	}
	if jp := nodes[0].JoinProgress(); !jp.Joined || len(jp.ContactPoints) != len(addrs) || jp.LastError != nil {
		t.Fatalf("JoinProgress %+v", jp)
	}
}

// A node restarts into a running cluster and joins it, never forming one of its own:
// the node with the lowest address (the founder) at the same address, first while its
// discovery still lists only itself and addresses where nothing runs (it waits: they
// do not answer), then with the right answers; and another node at a new address,
// its old one still listed.
func TestBootstrapRestartedNodeJoinsTheRunningCluster(t *testing.T) {
	addrs := gossipAddresses(t, 5) // three nodes, and two addresses where none runs yet
	all := answers(target(t, addrs[0], false), target(t, addrs[1], false), target(t, addrs[2], false))
	var nodes []*testNode
	for i, a := range addrs[:3] {
		nodes = append(nodes, bootstrapNode(t, "boot"+strconv.Itoa(i), a, newFakeDiscovery(all), 3))
	}
	awaitOneCluster(t, nodes...)
	id := nodes[0].ClusterID()
	founder := lowest(t, nodes...)
	var rest []*testNode
	for _, n := range nodes {
		if n != founder {
			rest = append(rest, n)
		}
	}
	shutdown(t, founder)
	awaitUpMembers(t, rest[0], rest...)

	stale := newFakeDiscovery(answers(target(t, founder.GossipAddress(), false), target(t, addrs[3], false), target(t, addrs[4], false)))
	again := bootstrapNode(t, "again", founder.GossipAddress(), stale, 3)
	stale.awaitLookups(t, 3*int(testStableMargin/testLookupInterval), again)
	if jp := again.JoinProgress(); jp.Joined || jp.LastError == nil || !strings.Contains(jp.LastError.Error(), "did not answer") {
		t.Fatalf("with silent contact points: JoinProgress %+v", jp)
	}
	stale.set(all)
	awaitOneCluster(t, append(rest, again)...)
	if again.ClusterID() != id || len(formed(again)) != 0 {
		t.Fatalf("the restarted founder is in %q (formed: %d), want the running %q", again.ClusterID(), len(formed(again)), id)
	}

	moved := rest[0]
	shutdown(t, moved)
	awaitUpMembers(t, rest[1], rest[1], again)
	list := answers(target(t, addrs[0], false), target(t, addrs[1], false), target(t, addrs[2], false), target(t, addrs[3], true))
	elsewhere := bootstrapNode(t, "elsewhere", addrs[3], newFakeDiscovery(list), 3)
	awaitOneCluster(t, rest[1], again, elsewhere)
	if elsewhere.ClusterID() != id || len(formed(elsewhere)) != 0 {
		t.Fatalf("the node at a new address is in %q, want the running %q", elsewhere.ClusterID(), id)
	}
}

// Discovery fails: the nodes report it in JoinProgress and the log, and none forms a
// cluster, not even the lowest, whose first lookup listed all three (a failed lookup
// restarts the stable margin). Discovery recovers: one cluster.
func TestBootstrapDiscoveryFailingThenRecovering(t *testing.T) {
	addrs := gossipAddresses(t, 3)
	var targets []discovery.Target
	for _, a := range addrs {
		targets = append(targets, target(t, a, false))
	}
	failing := errors.New("dns: server misbehaving")
	low := 0
	for i, a := range addrs {
		if gossipPort(t, a) < gossipPort(t, addrs[low]) {
			low = i
		}
	}
	var fakes []*fakeDiscovery
	var nodes []*testNode
	for i, a := range addrs {
		f := newFakeDiscovery(func(n int) ([]discovery.Target, error) {
			if i == low && n == 1 { // the lowest sees everyone once
				return targets, nil
			}
			return nil, failing
		})
		fakes = append(fakes, f)
		nodes = append(nodes, bootstrapNode(t, "boot"+strconv.Itoa(i), a, f, 3))
	}
	for i, f := range fakes {
		f.awaitLookups(t, 3*int(testStableMargin/testLookupInterval), nodes[i])
	}
	for _, n := range nodes {
		jp := n.JoinProgress()
		if jp.Joined || jp.Attempts < 2 || !errors.Is(jp.LastError, failing) {
			t.Fatalf("%s while discovery fails: JoinProgress %+v", n.GossipAddress(), jp)
		}
		if n.logs.FilterMessageSnippet("joining through discovery failed").FilterFieldKey("error").Len() == 0 {
			t.Errorf("%s logged no warning about the failing lookups", n.GossipAddress())
		}
	}
	if len(nodes[low].JoinProgress().ContactPoints) != 3 {
		t.Fatalf("the lowest lost the contact points of its successful lookup: %+v", nodes[low].JoinProgress())
	}
	for _, f := range fakes {
		f.set(answers(targets...))
	}
	awaitOneCluster(t, nodes...)
	if f := formed(nodes...); len(f) != 1 || f[0] != nodes[low] {
		t.Fatalf("formed by %d nodes, want one: the lowest", len(f))
	}
}

// shutdown shuts n's system down (it leaves the cluster).
func shutdown(t *testing.T, n *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(15*time.Second))
	defer cancel()
	if err := n.sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}
