package remote_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// restartAtTheSameAddress starts a and b, with a's cluster (played by the test) counting
// a member at b's address, has a talk to b, shuts b down, and returns a and a new
// incarnation of b at b's address, whose transport a has not reached.
func restartAtTheSameAddress(t *testing.T) (a, b2 node) {
	t.Helper()
	reg := registry(t)
	a, b := startNode(t, "a", reg, patient), startNode(t, "b", reg, patient)
	member := b.r.Address()
	a.r.SetMembership(func(addr actor.Address) bool { return addr == member })
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(a.remoteRef(t, echo), &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)
	shutdown(t, b.sys) // returns once a has acknowledged the goodbye: a ends b's incarnation
	b2 = startNode(t, "b", reg, patient, func(c *remote.Config) { c.ListenPort = member.Port })
	return a, b2
}

// A rolling restart: a cluster member's system shuts down and starts again at the same
// address, and the cluster counts the new incarnation as a member. The first send to
// an actor of the new incarnation, before this system's transport has reached it,
// waits for the transport to look at the address and goes through: it does not fail
// as if it were for the old incarnation (a sharding region once failed an ask there,
// sent to the region of a node that had just come back).
func TestAFirstSendToAMembersNewIncarnationIsDelivered(t *testing.T) {
	a, b2 := restartAtTheSameAddress(t)
	echo2, err := b2.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	if err := a.remoteRef(t, echo2).Tell(&ping{N: 2, ReplyTo: probe.Ref()}); err != nil {
		t.Fatalf("the first send to the member's new incarnation: %v", err)
	}
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 2 {
		t.Fatalf("pong %d, want 2", got.N)
	}
}

// When the look finds nothing new at the member's address (the old incarnation, or
// nobody, answers), what waited for it goes to dead letters as for a quarantined peer.
func TestASendToAMembersAddressWhereNobodyAnswersIsADeadLetter(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg, patient), startNode(t, "b", reg, patient)
	member := b.r.Address()
	a.r.SetMembership(func(addr actor.Address) bool { return addr == member })
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](probe)
	shutdown(t, b.sys)

	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())
	if err := ref.Tell(&ping{N: 2}); err != nil && !errors.Is(err, remote.ErrQuarantined) {
		t.Fatalf("a send to the shut-down member: %v", err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
	if !errors.Is(dl.Reason, remote.ErrQuarantined) || dl.Recipient != ref {
		t.Fatalf("dead letter %+v, want one for %v with ErrQuarantined", dl, ref)
	}
}

// A watch of an actor of a member's new incarnation, made before this system's
// transport has reached it, is not answered at once as for the old incarnation: it
// reaches the actor, and Terminated comes when the actor stops.
func TestAWatchOfAMembersNewIncarnationReachesIt(t *testing.T) {
	a, b2 := restartAtTheSameAddress(t)
	echo2, err := b2.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, echo2)
	watcher := testkit.NewProbe(t, a.sys)
	watcher.Watch(ref)
	// Watch returns once the watch is made: a Terminated answering it at once is in
	// the probe's mailbox before the pong of a ping sent now.
	if err := ref.Tell(&ping{N: 2, ReplyTo: watcher.Ref()}); err != nil {
		t.Fatalf("a send to the member's new incarnation: %v", err)
	}
	if got := watcher.ReceiveN(1)[0]; !isPong(got, 2) {
		t.Fatalf("got %T %+v before the pong, want pong 2", got, got)
	}
	// Stopped now, the actor is reported stopped by its system (which answers a watch
	// that arrives after the stop with the death too), not with its address ending.
	if err := b2.sys.Stop(echo2); err != nil {
		t.Fatal(err)
	}
	term := testkit.ExpectMsgType[actor.Terminated](watcher)
	if term.Ref != ref || term.AddressTerminated {
		t.Fatalf("Terminated %+v, want the actor's own stop of %v", term, ref)
	}
}

// A watch made at a member's address where the look finds no new incarnation is
// answered with Terminated, as for the quarantined incarnation.
func TestAWatchAtAMembersAddressWhereNobodyAnswersEnds(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg, patient), startNode(t, "b", reg, patient)
	member := b.r.Address()
	a.r.SetMembership(func(addr actor.Address) bool { return addr == member })
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	ref := a.remoteRef(t, echo)
	watcher := testkit.NewProbe(t, a.sys)
	watcher.Send(ref, &ping{N: 1})
	testkit.ExpectMsgType[*pong](watcher)
	shutdown(t, b.sys)

	watcher.Watch(ref)
	term := testkit.ExpectMsgType[actor.Terminated](watcher)
	if term.Ref != ref || !term.AddressTerminated {
		t.Fatalf("Terminated %+v, want %v with AddressTerminated", term, ref)
	}
}

func isPong(m any, n int) bool {
	p, ok := m.(*pong)
	return ok && p.N == n
}
