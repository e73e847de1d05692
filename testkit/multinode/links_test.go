package multinode_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// seq is a numbered message between nodes.
type seq struct{ N int }

// A slow link delays what crosses it and loses nothing: the messages arrive in order,
// none before the delay, and the cluster goes on seeing every member reachable.
func TestASlowLinkDelaysButLosesNothing(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*seq](reg, "multinode.test.Seq"); err != nil {
		t.Fatal(err)
	}
	c := multinode.Start(t, multinode.Options{Nodes: 2, Registry: reg})
	p := testkit.NewProbe(t, c.Node(1).System)
	events := subscribe(t, c, 0)
	to, err := c.Node(0).System.Resolve(p.Ref().URI())
	if err != nil {
		t.Fatal(err)
	}
	const delay = 100 * time.Millisecond
	c.SlowLink(0, 1, delay)
	sent := time.Now()
	for i := range 50 {
		if err := to.Tell(&seq{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if got := testkit.ExpectMsgType[*seq](p, testkit.Dilated(10*time.Second)); got.N != i {
			t.Fatalf("message %d arrived at position %d", got.N, i)
		}
		if i == 0 && time.Since(sent) < delay {
			t.Fatalf("the first message arrived after %v, below the link's delay %v", time.Since(sent), delay)
		}
	}
	events.ExpectNoMsgMatching(testkit.Dilated(500*time.Millisecond), func(m any) bool {
		_, ok := m.(cluster.UnreachableMember)
		return ok
	})
	c.Heal()
	if err := to.Tell(&seq{N: 50}); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ExpectMsgType[*seq](p, testkit.Dilated(10*time.Second)); got.N != 50 {
		t.Fatalf("after Heal: message %d, want 50", got.N)
	}
}

// The network behind a test cluster takes faults the Cluster's methods do not offer:
// a black hole one way, healed by Heal.
func TestNetworkBlackholeIsHealed(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*seq](reg, "multinode.test.Seq"); err != nil {
		t.Fatal(err)
	}
	c := multinode.Start(t, multinode.Options{Nodes: 2, Registry: reg})
	p := testkit.NewProbe(t, c.Node(1).System)
	to, err := c.Node(0).System.Resolve(p.Ref().URI())
	if err != nil {
		t.Fatal(err)
	}
	_ = to.Tell(&seq{N: 0})
	testkit.ExpectMsgType[*seq](p, testkit.Dilated(10*time.Second))
	c.Network().Blackhole(c.Node(0).Name(), c.Node(1).Name())
	if err := to.Tell(&seq{N: 1}); err != nil {
		t.Fatalf("a send into a black hole failed: %v", err)
	}
	p.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	c.Heal()
	_ = to.Tell(&seq{N: 2})
	for {
		if got := testkit.ExpectMsgType[*seq](p, testkit.Dilated(10*time.Second)); got.N == 2 {
			return
		}
	}
}
