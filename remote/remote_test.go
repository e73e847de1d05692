package remote_test

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

func TestTellAndReplyAcrossSystems(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	ref := a.remoteRef(t, echo)
	if ref.IsLocal() || ref.Address() != b.r.Address() || ref.Path() != "/user/echo" || ref.Name() != "echo" || ref.UID() != echo.UID() {
		t.Fatalf("remote ref = %v (address %v, uid %d)", ref, ref.Address(), ref.UID())
	}
	// The sender is preserved: the reply to a remote sender goes back over the wire.
	probe.Send(ref, &ping{N: 1})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 1 {
		t.Fatalf("pong %d", got.N)
	}
	if s := probe.LastSender(); s.IsLocal() || s.Path() != "/user/echo" {
		t.Errorf("reply sender = %v", s)
	}
	// Refs inside messages resolve on the other side.
	_ = ref.Tell(&ping{N: 2, ReplyTo: probe.Ref()})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 2 {
		t.Fatalf("pong %d", got.N)
	}
	// Ask across systems.
	got, err := actor.Ask[*pong](t.Context(), ref, &ping{N: 3})
	if err != nil || got.N != 3 {
		t.Fatalf("ask = %v, %v", got, err)
	}
	// Refs come back equal to what was sent: local refs as local, remote as remote.
	back, err := actor.Ask[*carry](t.Context(), ref, &carry{Refs: []actor.Ref{probe.Ref(), ref}, One: b.sys.DeadLetters()})
	if err != nil {
		t.Fatal(err)
	}
	if back.Refs[0] != probe.Ref() || back.Refs[1] != ref {
		t.Errorf("refs after a round trip: %v", back.Refs)
	}
	st := a.r.Stats()
	if st.MessagesOut == 0 || st.MessagesIn == 0 || st.BytesOut == 0 || st.BytesIn == 0 {
		t.Errorf("stats: %+v", st)
	}
}

func TestOrderIsKeptPerSenderReceiverPair(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	probe := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, probe.Ref())
	const n = 5000
	for i := range n {
		if err := ref.Tell(&pong{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if got := testkit.ExpectMsgType[*pong](probe); got.N != i {
			t.Fatalf("message %d arrived as %d", i, got.N)
		}
	}
}

func TestUnregisteredTypes(t *testing.T) {
	sendReg, recvReg := registry(t), registry(t)
	if err := serialization.Register[*unshared](sendReg, "test.Unshared"); err != nil {
		t.Fatal(err)
	}
	a, b := startNode(t, "a", sendReg), startNode(t, "b", recvReg)
	probe := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, probe.Ref())
	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())

	// Sending a type the sender's registry lacks: the sender sees an error and a dead letter.
	if err := ref.Tell(&notRegistered{X: 1}); !errors.Is(err, remote.ErrUnregistered) {
		t.Fatalf("Tell of an unregistered type: %v", err)
	}
	if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); dl.Recipient != ref {
		t.Errorf("dead letter for %v", dl.Recipient)
	}
	// A type the receiver does not know goes to dead letters there, naming the
	// recipient; the connection stays up.
	deadThere := testkit.NewProbe(t, b.sys)
	actor.Subscribe[actor.DeadLetter](b.sys.EventStream(), deadThere.Ref())
	if err := ref.Tell(&unshared{X: 1}); err != nil {
		t.Fatal(err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](deadThere)
	if u, ok := dl.Message.(remote.Undecodable); !ok || u.Manifest != "test.Unshared" || dl.Recipient != probe.Ref() ||
		!errors.Is(dl.Reason, serialization.ErrUnknownManifest) {
		t.Errorf("dead letter %+v", dl)
	}
	_ = ref.Tell(&pong{N: 7})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 7 {
		t.Fatalf("got %d", got.N)
	}
	if st := b.r.Stats(); st.DeadLetters != 1 || st.Rejected != 0 {
		t.Errorf("receiver stats: %+v", st)
	}
}

func TestForwardAcrossSystemsKeepsTheOriginalSender(t *testing.T) {
	reg := registry(t)
	a, b, c := startNode(t, "a", reg), startNode(t, "b", reg), startNode(t, "c", reg)
	echo, _ := c.sys.Spawn(echoProps(), "echo")
	echoFromB := b.remoteRef(t, echo)
	// A forwarder on b passes pings on to c's echo; the echo answers a's probe directly.
	fwd, err := b.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*ping); ok {
			ctx.Forward(echoFromB)
		}
	}), "forwarder")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	probe.Send(a.remoteRef(t, fwd), &ping{N: 5})
	if got := testkit.ExpectMsgType[*pong](probe); got.N != 5 {
		t.Fatalf("pong %d", got.N)
	}
	if s := probe.LastSender(); s.Address() != c.r.Address() {
		t.Errorf("the reply came from %v, want c's echo", s)
	}
}
