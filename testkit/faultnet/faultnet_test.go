package faultnet_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/faultnet"
	"go.uber.org/zap/zapcore"
)

// note is the message the tests send from one system to another.
type note struct{ N int }

// pair is two systems with remoting, a and b, wired through one Network, and a probe
// on each.
type pair struct {
	net      *faultnet.Network
	a, b     *actor.System
	probeA   *testkit.Probe
	probeB   *testkit.Probe
	toB, toA actor.Ref // b's probe as a sees it, and a's as b sees it
}

func newPair(t *testing.T) *pair {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := serialization.Register[*note](reg, "faultnet.test.Note"); err != nil {
		t.Fatal(err)
	}
	p := &pair{net: faultnet.New()}
	start := func(name string) *actor.System {
		logger, stopLog := testkit.NewLogger(t, zapcore.InfoLevel)
		sys, err := actor.New(name, actor.Config{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		rc := remote.Config{Registry: reg, ReconnectBackoffMin: 10 * time.Millisecond, ReconnectBackoffMax: 100 * time.Millisecond}
		p.net.Node(name).Install(&rc, nil)
		if _, err := remote.Start(sys, rc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
			defer cancel()
			if err := sys.Shutdown(ctx); err != nil {
				t.Errorf("shutdown %s: %v", name, err)
			}
			stopLog()
		})
		return sys
	}
	p.a, p.b = start("a"), start("b")
	p.probeA, p.probeB = testkit.NewProbe(t, p.a), testkit.NewProbe(t, p.b)
	var err error
	if p.toB, err = p.a.Resolve(p.probeB.Ref().URI()); err != nil {
		t.Fatal(err)
	}
	if p.toA, err = p.b.Resolve(p.probeA.Ref().URI()); err != nil {
		t.Fatal(err)
	}
	return p
}

// both checks that note n crosses the link each way.
func (p *pair) both(t *testing.T, n int) {
	t.Helper()
	if err := p.toB.Tell(&note{N: n}); err != nil {
		t.Fatal(err)
	}
	expectNote(t, p.probeB, n)
	if err := p.toA.Tell(&note{N: n}); err != nil {
		t.Fatal(err)
	}
	expectNote(t, p.probeA, n)
}

// expectNote waits for note n; notes sent earlier, during a fault, may arrive first
// (the transport sends what it had queued once it reconnects) and are skipped.
func expectNote(t *testing.T, probe *testkit.Probe, n int) {
	t.Helper()
	for {
		got := testkit.ExpectMsgType[*note](probe, testkit.Dilated(10*time.Second))
		switch {
		case got.N == n:
			return
		case got.N > n:
			t.Fatalf("got note %d, want %d", got.N, n)
		}
	}
}

// A link cut one way carries nothing from the cut side, and nothing back either: the
// connections between the two need both directions (a TCP connection fails both ways).
// Restore heals it, and the transport reconnects on its own.
func TestAOneWayCutStopsTheLinkUntilRestored(t *testing.T) {
	p := newPair(t)
	p.both(t, 1)
	p.net.Cut("a", "b")
	_ = p.toB.Tell(&note{N: 2})
	_ = p.toA.Tell(&note{N: 2})
	p.probeB.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	p.probeA.ExpectNoMsg(testkit.Dilated(100 * time.Millisecond))
	p.net.Restore("a", "b")
	p.both(t, 3)
}

// A black hole swallows what is written, with no error to the sender.
func TestABlackholeSwallowsWritesSilently(t *testing.T) {
	p := newPair(t)
	p.both(t, 1)
	p.net.Blackhole("a", "b")
	if err := p.toB.Tell(&note{N: 2}); err != nil {
		t.Fatalf("a send into a black hole failed: %v", err)
	}
	p.probeB.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	p.net.Heal()
	p.both(t, 3)
}

// A slow link delays each write by its delay, and keeps the order.
func TestASlowLinkDelaysWritesInOrder(t *testing.T) {
	p := newPair(t)
	p.both(t, 0)
	const delay = 200 * time.Millisecond
	p.net.Slow("a", "b", delay)
	sent := time.Now()
	for i := 1; i <= 20; i++ {
		if err := p.toB.Tell(&note{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 20; i++ {
		if got := testkit.ExpectMsgType[*note](p.probeB, testkit.Dilated(10*time.Second)); got.N != i {
			t.Fatalf("note %d arrived at position %d", got.N, i)
		}
		if i == 1 {
			if took := time.Since(sent); took < delay {
				t.Fatalf("the first note took %v, below the link's delay %v", took, delay)
			}
		}
	}
	p.net.Slow("a", "b", 0)
	p.both(t, 21)
}

// An isolated node is cut off both ways until it is reconnected.
func TestAnIsolatedNodeIsCutOffBothWays(t *testing.T) {
	p := newPair(t)
	p.both(t, 1)
	p.net.Isolate("b")
	_ = p.toB.Tell(&note{N: 2})
	_ = p.toA.Tell(&note{N: 2})
	p.probeB.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	p.probeA.ExpectNoMsg(testkit.Dilated(100 * time.Millisecond))
	p.net.Heal() // does not end an isolation
	_ = p.toB.Tell(&note{N: 3})
	p.probeB.ExpectNoMsg(testkit.Dilated(300 * time.Millisecond))
	p.net.Reconnect("b")
	p.both(t, 4)
}
