package remote_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

func TestOutboundQueueOverflowGoesToDeadLetters(t *testing.T) {
	reg := registry(t)
	a := startNode(t, "a", reg, func(c *remote.Config) { c.MaxFrameSize, c.OutboundQueueBytes = 1024, 1024 })
	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())
	// Nobody listens at port 1: messages wait in the queue while the lane retries.
	ref, err := a.sys.Resolve("troupe://gone@127.0.0.1:1/user/x")
	if err != nil {
		t.Fatal(err)
	}
	refused := -1
	for i := range 200 {
		err := ref.Tell(&pong{N: i})
		switch {
		case err == nil && refused < 0:
		case errors.Is(err, remote.ErrOverloaded) && strings.Contains(err.Error(), ref.URI()):
			if refused < 0 {
				refused = i
			}
		default:
			t.Fatalf("Tell %d: %v (the queue filled at %d)", i, err, refused)
		}
	}
	if refused < 10 {
		t.Fatalf("the queue filled at %d", refused)
	}
	for i := refused; i < 200; i++ {
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
		if dl.Message.(*pong).N != i || dl.Recipient != ref || !errors.Is(dl.Reason, remote.ErrOverloaded) {
			t.Fatalf("dead letter %d for %v (%v), want %d", dl.Message.(*pong).N, dl.Recipient, dl.Reason, i)
		}
	}
	st := a.r.Stats()
	if n := uint64(200 - refused); st.DeadLetters != n || st.Overloaded != n || len(st.Peers) != 1 || st.Peers[0].Overloaded != n {
		t.Errorf("stats %+v, want %d refused", st, n)
	}
	if q := st.Peers[0].QueuedBytes; q == 0 || q > 1024 {
		t.Errorf("%d bytes queued", q)
	}
}

func TestOversizedMessageIsRefused(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	probe := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, probe.Ref())
	big := &carry{Refs: make([]actor.Ref, 30_000)} // about 30 KB per 1,000 refs: far above 256 KiB
	for i := range big.Refs {
		big.Refs[i] = probe.Ref()
	}
	if err := ref.Tell(big); !errors.Is(err, remote.ErrFrameTooLarge) {
		t.Fatalf("Tell of a huge message: %v", err)
	}
	_ = ref.Tell(&pong{N: 1})
	testkit.ExpectMsgType[*pong](probe)
}

func TestAskToARemoteActorThatNeverAnswersTimesOut(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	mute := testkit.NewProbe(t, b.sys)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := actor.Ask[*pong](ctx, a.remoteRef(t, mute.Ref()), &ping{N: 1})
	if !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("ask: %v", err)
	}
	testkit.ExpectMsgType[*ping](mute)
}

func TestConfigIsValidated(t *testing.T) {
	reg := registry(t)
	bad := []remote.Config{
		{},
		{Registry: reg, ListenPort: 70000},
		{Registry: reg, ListenHost: "not a host"},
		{Registry: reg, MaxFrameSize: 10},
		{Registry: reg, OutboundQueueBytes: -1},
		{Registry: reg, OutboundQueueBytes: 1000},
		{Registry: reg, MaxFrameSize: 4096, OutboundQueueBytes: 2048},
		{Registry: reg, BackpressureTimeout: -time.Second},
		{Registry: reg, MaxPendingConnections: -1},
		{Registry: reg, ReconnectBackoffMin: time.Second, ReconnectBackoffMax: time.Millisecond},
		{Registry: reg, FailureDetector: remote.FailureDetectorConfig{Threshold: -1}},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, remote.ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	sys := testkit.NewSystem(t)
	if _, err := remote.Start(sys, bad[0]); !errors.Is(err, remote.ErrInvalidConfig) {
		t.Errorf("Start with a bad config: %v", err)
	}
	if _, err := remote.Start(sys, remote.Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Start(sys, remote.Config{Registry: reg}); !errors.Is(err, remote.ErrAlreadyStarted) {
		t.Errorf("second Start: %v", err)
	}
}

// A link cut through the Dial and Listen seams carries nothing, and the transport
// reconnects on its own once it is restored.
func TestACutLinkCarriesNothingUntilRestored(t *testing.T) {
	reg := registry(t)
	cut := newCutter()
	a, b := startNode(t, "a", reg, cut.seams), startNode(t, "b", reg)
	roundTrip(t, a, b, 1)
	cut.set(true)
	probe := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, probe.Ref())
	_ = ref.Tell(&pong{N: 1})
	probe.ExpectNoMsg(testkit.Dilated(200 * time.Millisecond))
	cut.set(false)
	roundTrip(t, a, b, 2)
}

func TestQuarantineByHand(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	echo, _ := b.sys.Spawn(echoProps(), "echo")
	ref := a.remoteRef(t, echo)
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(ref)
	roundTrip(t, a, b, 1)
	a.r.Quarantine(b.r.Address(), b.r.UID(), "removed from the cluster", false)
	if term := probe.ExpectTerminated(ref); !term.AddressTerminated {
		t.Error("not address terminated")
	}
}

// A system that a peer quarantined learns it from the refusal of its next connection
// there: the transport reports the peer's address to the hook the cluster registers
// (a member that removed this one refuses it so).
func TestAQuarantinedSystemLearnsItFromTheRefusal(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	by := make(chan actor.Address, 1)
	b.r.OnQuarantinedBy(func(addr actor.Address) {
		select {
		case by <- addr:
		default: // reported again at each refused attempt
		}
	})
	echo, err := a.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	// Before b connects: a send on a connection a has just closed can be written
	// before b notices, and then nothing is left to make b connect again.
	a.r.Quarantine(b.r.Address(), b.r.UID(), "removed from the cluster", false)
	_ = b.remoteRef(t, echo).Tell(&ping{N: 1}) // b connects to a, and is refused
	select {
	case got := <-by:
		if got != a.r.Address() {
			t.Fatalf("quarantined by %v, want %v", got, a.r.Address())
		}
	case <-time.After(testkit.Dilated(5 * time.Second)):
		t.Fatal("b was not told that a quarantined it")
	}
}

// Messages for a system that cannot be reached for GiveUpAfter go to dead letters
// with ErrUnreachable, and the lane stops dialling (its goroutine ends).
func TestAnUnreachablePeerIsGivenUpOn(t *testing.T) {
	reg := registry(t)
	a := startNode(t, "a", reg, func(c *remote.Config) { c.GiveUpAfter = 200 * time.Millisecond })
	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())
	ref, err := a.sys.Resolve("troupe://gone@127.0.0.1:1/user/x#7")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := ref.Tell(&pong{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead, testkit.Dilated(5*time.Second))
		if !errors.Is(dl.Reason, remote.ErrUnreachable) || dl.Recipient != ref || dl.Message.(*pong).N != i {
			t.Fatalf("dead letter %d: %v for %v: %v", i, dl.Message, dl.Recipient, dl.Reason)
		}
	}
	deadline := time.Now().Add(testkit.Dilated(5 * time.Second))
	for remote.WriterRunning(a.r, ref.Address()) {
		if time.Now().After(deadline) {
			t.Fatal("the lane still runs")
		}
		runtime.Gosched()
	}
	if st := a.r.Stats(); st.DeadLetters != 3 {
		t.Errorf("stats %+v", st)
	}
}
