package remote_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

func TestRemoteWatchSeesTheActorStop(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	// A round trip after the watch: the watch is in place before the stop.
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)
	b.sys.Stop(echo)
	term := probe.ExpectTerminated(ref)
	if term.AddressTerminated {
		t.Error("a normal stop reported as address terminated")
	}

	// Watching an actor that is already gone answers at once.
	other := testkit.NewProbe(t, a.sys)
	other.Watch(ref)
	other.ExpectTerminated(ref)
}

// System.Stop of a Ref to an actor in another system stops it there.
func TestSystemStopOfARemoteActor(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	local := testkit.NewProbe(t, b.sys)
	local.Watch(echo)
	if err := a.sys.Stop(a.remoteRef(t, echo)); err != nil {
		t.Fatal(err)
	}
	local.ExpectTerminated(echo)
}

func TestRemoteUnwatch(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, _ := b.sys.Spawn(echoProps(), "echo")
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	probe.Unwatch(ref)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)
	b.sys.Stop(echo)
	probe.ExpectNoMsg(testkit.Dilated(200 * time.Millisecond))
}

func TestRemoteWatchFromTheOtherSide(t *testing.T) {
	// A remote actor watches a local one: B's probe watches A's echo.
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, _ := a.sys.Spawn(echoProps(), "echo")
	probe := testkit.NewProbe(t, b.sys)
	ref := b.remoteRef(t, echo)
	probe.Watch(ref)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)
	a.sys.Stop(echo)
	probe.ExpectTerminated(ref)
}

func TestSystemMessagesSurviveBrokenConnections(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, _ := b.sys.Spawn(echoProps(), "echo")
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)

	probe.Watch(ref)
	remote.BreakConnections(a.r)
	remote.BreakConnections(b.r)
	// The watch is resent on the new connection; a duplicate would be ignored.
	probe.Send(ref, &ping{N: 2})
	testkit.ExpectMsgType[*pong](probe, testkit.Dilated(5*time.Second))
	b.sys.Stop(echo)
	probe.ExpectTerminated(ref)
	probe.ExpectNoMsg(testkit.Dilated(100 * time.Millisecond))
	if a.r.Stats().Reconnects == 0 {
		t.Error("no reconnect counted")
	}
}

func TestFailureDetectorTerminatesWatchedActorsOfALostSystem(t *testing.T) {
	reg := registry(t)
	fast := func(c *remote.Config) {
		c.FailureDetector = remote.FailureDetectorConfig{
			HeartbeatInterval: 20 * time.Millisecond,
			AcceptablePause:   200 * time.Millisecond,
			MinStdDeviation:   20 * time.Millisecond,
		}
	}
	a, b := startNode(t, "a", reg, fast), startNode(t, "b", reg, fast)
	echo, _ := b.sys.Spawn(echoProps(), "echo")
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)

	remote.Abort(b.r) // the actor lives on, but nobody can reach its system
	term := probe.ExpectTerminated(ref, testkit.Dilated(5*time.Second))
	if !term.AddressTerminated {
		t.Error("Terminated after a lost system does not say address terminated")
	}
	if a.r.Stats().Quarantines != 1 {
		t.Errorf("quarantines = %d, want 1", a.r.Stats().Quarantines)
	}
	// The quarantined incarnation gets nothing more: sends are dead letters.
	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())
	_ = ref.Tell(&ping{N: 2})
	testkit.ExpectMsgType[actor.DeadLetter](dead)
}
