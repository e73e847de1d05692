package actor_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/mailbox"
	"github.com/troupe-go/troupe/testkit"
)

// blocked spawns an actor that blocks on its first message until release is closed,
// then reports every int it handles.
func blocked(t *testing.T, sys *actor.System, p *actor.Props, probe *testkit.Probe, release chan struct{}) actor.Ref {
	t.Helper()
	p.Producer = func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case string:
				_ = probe.Ref().Tell("blocking")
				<-release
			case int:
				_ = probe.Ref().Tell(m)
			}
		})
	}
	ref := spawn(t, sys, p, "")
	_ = ref.Tell("block")
	probe.ExpectMsg("blocking")
	return ref
}

func TestBoundedMailboxDropNewest(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	release := make(chan struct{})
	ref := blocked(t, sys, &actor.Props{MailboxCapacity: 2, Overflow: mailbox.DropNewest}, probe, release)
	for i := range 3 {
		if err := ref.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); dl.Message != 2 {
		t.Fatalf("dropped %v, want 2", dl.Message)
	}
	close(release)
	probe.ExpectMsg(0)
	probe.ExpectMsg(1)
}

func TestBoundedMailboxDropOldest(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	ref := blocked(t, sys, &actor.Props{MailboxCapacity: 2, Overflow: mailbox.DropOldest}, probe, release)
	for i := range 3 {
		_ = ref.Tell(i)
	}
	close(release)
	probe.ExpectMsg(1)
	probe.ExpectMsg(2)
}

func TestBoundedMailboxReject(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	ref := blocked(t, sys, &actor.Props{MailboxCapacity: 1, Overflow: mailbox.Reject}, probe, release)
	if err := ref.Tell(0); err != nil {
		t.Fatal(err)
	}
	if err := ref.Tell(1); !errors.Is(err, actor.ErrMailboxFull) {
		t.Fatalf("Tell to full mailbox: %v", err)
	}
	close(release)
	probe.ExpectMsg(0)
}

func TestPriorityMailbox(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	ref := blocked(t, sys, &actor.Props{Priority: func(m any) int {
		if n, ok := m.(int); ok && n >= 100 {
			return 1
		}
		return 0
	}}, probe, release)
	for _, n := range []int{1, 2, 100, 3, 101} {
		_ = ref.Tell(n)
	}
	close(release)
	for _, n := range []int{100, 101, 1, 2, 3} {
		probe.ExpectMsg(n)
	}
}

func TestInvalidProps(t *testing.T) {
	producer := func() actor.Actor { return actor.ReceiveFunc(func(actor.Context) {}) }
	for name, p := range map[string]*actor.Props{
		"no producer":       {},
		"negative capacity": {Producer: producer, MailboxCapacity: -1},
		"bounded priority":  {Producer: producer, MailboxCapacity: 3, Priority: func(any) int { return 0 }},
		"bad overflow":      {Producer: producer, MailboxCapacity: 3, Overflow: 42},
		"neg throughput":    {Producer: producer, Throughput: -1},
	} {
		if err := p.Validate(); !errors.Is(err, actor.ErrInvalidProps) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Under concurrent senders a bounded mailbox accounts for every message: each one is
// handled or becomes a dead letter.
func TestBoundedMailboxAccountsForEveryMessage(t *testing.T) {
	sys := testkit.NewSystem(t)
	dropped := 0
	counter := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.DeadLetter:
			dropped++
		case string:
			ctx.Respond(dropped)
		}
	}), "dead-counter")
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), counter)
	handled := 0
	ref := spawn(t, sys, &actor.Props{MailboxCapacity: 8, Overflow: mailbox.DropOldest, Producer: func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			switch ctx.Message().(type) {
			case int:
				handled++
			case string:
				ctx.Respond(handled)
			}
		})
	}}, "bounded")
	const senders, per = 4, 5000
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for i := range per {
				_ = ref.Tell(i)
			}
		})
	}
	wg.Wait()
	// Nothing is sent after these requests, so neither is dropped, and each is
	// handled after everything queued before it. Dead letters are published before
	// Tell returns.
	got, err := actor.Ask[int](t.Context(), ref, "count")
	if err != nil {
		t.Fatal(err)
	}
	lost, err := actor.Ask[int](t.Context(), counter, "count")
	if err != nil {
		t.Fatal(err)
	}
	if got+lost != senders*per || lost == 0 {
		t.Fatalf("handled %d + dropped %d = %d, want %d with some dropped", got, lost, got+lost, senders*per)
	}
}
