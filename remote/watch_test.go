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
	cut := newCutter()
	a, b := startNode(t, "a", reg, fast), startNode(t, "b", reg, fast, cut.seams)
	echo, _ := b.sys.Spawn(echoProps(), "echo")
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)

	cut.set(true) // the actor lives on, but nobody can reach its system
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

// burstProps answers a ping with N pongs to its sender and then stops; before pong
// number at, it calls during (when not nil).
func burstProps(at int, during func()) *actor.Props {
	return actor.PropsOf(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if m, ok := ctx.Message().(*ping); ok {
				for i := range m.N {
					if i == at && during != nil {
						during()
					}
					_ = ctx.Sender().Tell(&pong{N: i})
				}
				ctx.Stop(ctx.Self())
			}
		})
	})
}

// startBurst spawns props on b, has a probe on a watch it, and asks it for n pongs.
func startBurst(t *testing.T, a, b node, props *actor.Props, n int) (*testkit.Probe, actor.Ref) {
	t.Helper()
	burst, err := b.sys.Spawn(props, "")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, burst)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	probe.Send(ref, &ping{N: n})
	return probe, ref
}

// The notice of an actor's death travels on the system lane, its messages on the user
// lane: without the flush before the notice (deathgate.go), the watcher would hear
// Terminated before the last of them arrived.
func TestAWatcherGetsTheMessagesOfADeadActorBeforeTerminated(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	const n = 20_000
	for round := range 3 {
		probe, ref := startBurst(t, a, b, burstProps(0, nil), n)
		got := probe.ReceiveN(n + 1)
		for i, m := range got[:n] {
			if p, ok := m.(*pong); !ok || p.N != i {
				t.Fatalf("round %d: message %d is %T %+v, want pong %d", round, i, m, m, i)
			}
		}
		if term, ok := got[n].(actor.Terminated); !ok || term.Ref != ref {
			t.Fatalf("round %d: last message %T %+v, want Terminated", round, got[n], got[n])
		}
	}
}

// receiveBurst receives pongs until Terminated, and fails on a pong that comes after
// a later one (a pong lost with a broken connection is allowed). During is called
// with each pong's number before the next is received.
func receiveBurst(t *testing.T, probe *testkit.Probe, round int, during func(n int)) {
	t.Helper()
	last := -1
	for {
		m := probe.FishForMessage(func(any) bool { return true }, testkit.Dilated(10*time.Second))
		if _, ok := m.(actor.Terminated); ok {
			return
		}
		if p, ok := m.(*pong); ok {
			if p.N <= last {
				t.Fatalf("round %d: pong %d after pong %d", round, p.N, last)
			}
			last = p.N
			if during != nil {
				during(p.N)
			}
		}
	}
}

// A peer that reconnects sends on the new connection what it had not written on the
// old one, while this side may still be reading the old one: the new connection is
// read only once the old one is read to its end, so messages keep the order sent.
func TestAReconnectKeepsTheOrderOfMessages(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	const n = 20_000
	for round := range 5 {
		// b breaks the connections when the actor has queued a different number of
		// its messages each round, the last time after all of them.
		probe, _ := startBurst(t, a, b, burstProps(round*n/4, func() { remote.BreakConnections(b.r) }), n+1)
		receiveBurst(t, probe, round, nil)
	}
}

// A connection that breaks while a death notice waits for its flush: the frames not
// written are queued again, and a new flush after them, so the notice goes once they
// are delivered, long before the flush timeout.
func TestADeathNoticeOutlivesABrokenConnection(t *testing.T) {
	reg := registry(t)
	long := func(c *remote.Config) { c.DeathNoticeFlushTimeout = time.Minute }
	a, b := startNode(t, "a", reg, long), startNode(t, "b", reg, long)
	const n = 20_000
	for round := range 5 {
		// a breaks the connections when it has received a different number of
		// messages each round, probably after the actor has stopped and its notice
		// waits for the flush.
		probe, _ := startBurst(t, a, b, burstProps(0, nil), n)
		at := round * n / 5
		receiveBurst(t, probe, round, func(got int) {
			if got >= at {
				remote.BreakConnections(a.r)
				at = n
			}
		})
	}
}
