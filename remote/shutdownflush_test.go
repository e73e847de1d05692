package remote_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// patient keeps the failure detector from giving a peer up within a test: what
// a watcher hears then comes from the peer itself. It also gives the shutdown's flush
// time enough on a loaded machine: the tests wait for what the flush promises, not
// for the default second to suffice.
func patient(c *remote.Config) {
	c.FailureDetector.AcceptablePause = 10 * time.Minute
	c.GiveUpAfter = 10 * time.Minute
	c.ShutdownFlushTimeout = testkit.Dilated(time.Minute)
}

// A system that shuts down gracefully delivers, before its transport closes, what its
// actors sent and the notices of their deaths: a remote watcher hears Terminated from
// the actor's own system, not from a failure detector that gives the system up.
func TestAGracefulShutdownTellsRemoteWatchersAtOnce(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg, patient), startNode(t, "b", reg, patient)
	const n = 20_000
	sent := make(chan struct{})
	probe, ref := startBurst(t, a, b, actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*ping); ok {
			for i := range m.N {
				_ = ctx.Sender().Tell(&pong{N: i})
			}
			close(sent)
		}
	}), n)
	<-sent // the pongs are queued, most of them not yet written
	shutdown(t, b.sys)

	got := probe.ReceiveN(n+1, testkit.Dilated(10*time.Second))
	for i, m := range got[:n] {
		if p, ok := m.(*pong); !ok || p.N != i {
			t.Fatalf("message %d is %T %+v, want pong %d", i, m, m, i)
		}
	}
	term, ok := got[n].(actor.Terminated)
	if !ok || term.Ref != ref {
		t.Fatalf("last message %T %+v, want Terminated of %v", got[n], got[n], ref)
	}
	if term.AddressTerminated {
		t.Error("Terminated came from the failure detector, not from the shut-down system")
	}
	if lost := b.r.Stats().Lost; lost != 0 {
		t.Errorf("the shut-down system lost %d messages", lost)
	}
}

// A peer that cannot be reached does not hold the shutdown up for the flush: the lane
// whose connection attempt failed is not waited for.
func TestShutdownDoesNotWaitForAnUnreachablePeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: a connection attempt is refused
	reg := registry(t)
	sys, err := actor.New("lonely", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := remote.Config{Registry: reg, ShutdownFlushTimeout: time.Hour}
	if _, err := remote.Start(sys, long); err != nil {
		t.Fatal(err)
	}
	target, err := sys.Resolve("troupe://gone@" + addr + "/user/target")
	if err != nil {
		t.Fatal(err)
	}
	_ = target.Tell(&ping{N: 1})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for a peer it cannot reach: %v", err)
	}
}

// The last thing a system that shuts down sends each peer is that it does: the peer
// ends that incarnation at once, so what is sent to it afterwards fails at once with
// ErrQuarantined instead of waiting in a queue for GiveUpAfter. It is not counted as
// a quarantine: nothing went wrong.
func TestAPeerHearsThatASystemShutDown(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg, patient), startNode(t, "b", reg, patient)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)

	shutdown(t, b.sys) // returns once a has acknowledged the goodbye
	if err := ref.Tell(&ping{N: 2}); !errors.Is(err, remote.ErrQuarantined) {
		t.Fatalf("a send to the shut-down system: %v, want ErrQuarantined", err)
	}
	if q := a.r.Stats().Quarantines; q != 0 {
		t.Errorf("a graceful shutdown counted as %d quarantines", q)
	}

	// A new incarnation at the address is reached, as after a rolling restart: a send
	// that fails makes a look for it, and once found, sends go through again.
	port := b.r.Address().Port
	b2 := startNode(t, "b", reg, func(c *remote.Config) { c.ListenPort = port })
	echo2, err := b2.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref2 := a.remoteRef(t, echo2)
	deadline := time.Now().Add(testkit.Dilated(5 * time.Second))
	for {
		err := ref2.Tell(&ping{N: 3, ReplyTo: probe.Ref()})
		if err == nil {
			break
		}
		if !errors.Is(err, remote.ErrQuarantined) || time.Now().After(deadline) {
			t.Fatalf("a send to the new incarnation: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // the send above made a look for it
	}
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 3 {
		t.Fatalf("pong %d, want 3", got.N)
	}
}
