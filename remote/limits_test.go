package remote_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

func TestOutboundQueueOverflowGoesToDeadLetters(t *testing.T) {
	reg := registry(t)
	a := startNode(t, "a", reg, func(c *remote.Config) { c.OutboundQueueSize = 10 })
	dead := testkit.NewProbe(t, a.sys)
	actor.Subscribe[actor.DeadLetter](a.sys.EventStream(), dead.Ref())
	// Nobody listens at port 1: messages wait in the queue while the lane retries.
	ref, err := a.sys.Resolve("troupe://gone@127.0.0.1:1/user/x")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		err := ref.Tell(&pong{N: i})
		if i < 10 && err != nil || i >= 10 && !errors.Is(err, remote.ErrOverloaded) {
			t.Fatalf("Tell %d: %v", i, err)
		}
	}
	for i := 10; i < 25; i++ {
		if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); dl.Message.(*pong).N != i {
			t.Fatalf("dead letter %d, want %d", dl.Message.(*pong).N, i)
		}
	}
	if got := a.r.Stats().DeadLetters; got != 15 {
		t.Errorf("dead letters counted = %d, want 15", got)
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
		{Registry: reg, OutboundQueueSize: -1},
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
	if _, err := remote.Start(sys, remote.Config{Registry: reg}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("second Start: %v", err)
	}
}

func TestBlockedAddressIsCutOffUntilUnblocked(t *testing.T) {
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	roundTrip(t, a, b, 1)
	remote.SetBlocked(a.r, b.r.Address(), true)
	remote.SetBlocked(b.r, a.r.Address(), true)
	probe := testkit.NewProbe(t, b.sys)
	ref := a.remoteRef(t, probe.Ref())
	_ = ref.Tell(&pong{N: 1})
	probe.ExpectNoMsg(testkit.Dilated(200 * time.Millisecond))
	remote.SetBlocked(a.r, b.r.Address(), false)
	remote.SetBlocked(b.r, a.r.Address(), false)
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
	remote.Quarantine(a.r, b.r.Address(), b.r.UID(), "removed from the cluster")
	if term := probe.ExpectTerminated(ref); !term.AddressTerminated {
		t.Error("not address terminated")
	}
}
