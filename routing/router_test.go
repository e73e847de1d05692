package routing_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/supervision"
	"github.com/troupe-go/troupe/testkit"
)

// reply is what the echo routees answer: who answered, to what.
type reply struct {
	From actor.Ref
	Msg  any
}

// echoProps answers every string and int with a reply naming the routee, panics on
// "boom" and tells started to starts (if set) when it starts.
func echoProps(starts actor.Ref) *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			if !starts.IsZero() {
				_ = starts.Tell(ctx.Self())
			}
		case string:
			if m == "boom" {
				panic("boom")
			}
			_ = ctx.Respond(reply{From: ctx.Self(), Msg: m})
		case int, keyed:
			_ = ctx.Respond(reply{From: ctx.Self(), Msg: m})
		}
	})
}

func newPool(t *testing.T, sys *actor.System, cfg routing.PoolConfig) *routing.Router {
	t.Helper()
	r, err := routing.NewPool(context.Background(), sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// routees asks the router actor for its routees. The senders' snapshot (r.Routees) is
// published before the answer, so it is the same or newer.
func routees(t *testing.T, r *routing.Router) []actor.Ref {
	t.Helper()
	got, err := actor.Ask[routing.Routees](context.Background(), r.Ref(), routing.GetRoutees{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Refs
}

// awaitRouteesEqual waits until the router's routees are want, in the router actor and
// in the senders' snapshot. A routee's stop reaches the router a moment after it reaches
// a test's probe, with nothing to wait on, so this asks again until they match (each
// ask a round trip to the router, not a sleep).
func awaitRouteesEqual(t *testing.T, r *routing.Router, want []actor.Ref) {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(testkit.DefaultTimeout))
	for {
		got := routees(t, r)
		if slices.Equal(got, want) && slices.Equal(r.Routees(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("routees %v (snapshot %v), want %v", got, r.Routees(), want)
		}
		runtime.Gosched()
	}
}

func TestPoolRoundRobinKeepsTheSender(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 3})
	rs := routees(t, r)
	if len(rs) != 3 {
		t.Fatalf("routees %v, want 3", rs)
	}
	for _, ref := range rs {
		if ref.Path() == "" || ref.Path()[:len(r.Ref().Path())] != r.Ref().Path() {
			t.Fatalf("routee %v is not a child of the router %v", ref, r.Ref())
		}
	}
	// Through the handle, on this goroutine: each routee in turn, replying to the probe.
	for i := range 6 {
		if err := r.Send(i, probe.Ref()); err != nil {
			t.Fatal(err)
		}
		got := testkit.ExpectMsgType[reply](probe)
		if got.From != rs[i%3] || got.Msg != i {
			t.Fatalf("message %d: %+v, want from %v", i, got, rs[i%3])
		}
	}
	// Through the router actor: same turns, the sender still the probe.
	for i := range 3 {
		probe.Send(r.Ref(), i)
		got := testkit.ExpectMsgType[reply](probe)
		if got.Msg != i || !slices.Contains(rs, got.From) {
			t.Fatalf("via Ref, message %d: %+v", i, got)
		}
	}
	// Ask goes straight to the routee.
	got, err := r.Ask(context.Background(), "q").Result(context.Background())
	if err != nil || got.(reply).Msg != "q" {
		t.Fatalf("Ask: %v, %v", got, err)
	}
}

func TestPoolSupervisesRouteesWithItsStrategy(t *testing.T) {
	t.Run("restart keeps the routee", func(t *testing.T) {
		sys := testkit.NewSystem(t)
		starts := testkit.NewProbe(t, sys)
		probe := testkit.NewProbe(t, sys)
		r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(starts.Ref()), Size: 2})
		starts.ReceiveN(2)
		rs := routees(t, r)
		_ = r.Tell("boom") // to rs[0]
		if again := testkit.ExpectMsgType[actor.Ref](starts); again != rs[0] {
			t.Fatalf("restarted %v, want %v", again, rs[0])
		}
		if got := routees(t, r); !slices.Equal(got, rs) {
			t.Fatalf("routees after restart %v, want %v", got, rs)
		}
		_ = r.Send("after", probe.Ref()) // to rs[1]
		_ = r.Send("after", probe.Ref()) // to rs[0], restarted
		probe.ReceiveN(2)
	})
	t.Run("stop removes the routee", func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		r := newPool(t, sys, routing.PoolConfig{
			Routee:   echoProps(actor.Ref{}),
			Size:     2,
			Strategy: supervision.OneForOne{Decider: func(error) supervision.Directive { return supervision.Stop }},
		})
		rs := routees(t, r)
		probe.Watch(rs[0])
		_ = r.Tell("boom")
		probe.ExpectTerminated(rs[0])
		awaitRouteesEqual(t, r, rs[1:])
		for range 3 {
			_ = r.Send("x", probe.Ref())
			if got := testkit.ExpectMsgType[reply](probe); got.From != rs[1] {
				t.Fatalf("routed to %v, want %v", got.From, rs[1])
			}
		}
	})
}

func TestPoolStopsWithItsLastRoutee(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 2})
	rs := routees(t, r)
	probe.Watch(r.Ref())
	probe.Watch(rs[0])
	_ = rs[0].Tell(actor.PoisonPill{})
	probe.ExpectTerminated(rs[0])
	_ = rs[1].Tell(actor.PoisonPill{})
	probe.ExpectTerminated(r.Ref())
	if got := r.Routees(); len(got) != 0 {
		t.Fatalf("stopped router still lists %v", got)
	}
	// Sends to a stopped router are dead letters, and not errors, as for any actor.
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	if err := r.Tell("late"); err != nil {
		t.Fatalf("Tell to a stopped router: %v", err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
	if dl.Recipient != r.Ref() || !errors.Is(dl.Reason, actor.ErrRecipientStopped) || dl.Message != "late" {
		t.Fatalf("dead letter %+v", dl)
	}
}

func TestPoisonPillStopsPoolAndRoutees(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 3})
	rs := routees(t, r)
	for _, ref := range append([]actor.Ref{r.Ref()}, rs...) {
		probe.Watch(ref)
	}
	if err := r.Tell(actor.PoisonPill{}); err != nil { // goes to the router, not a routee
		t.Fatal(err)
	}
	for range 4 {
		testkit.ExpectMsgType[actor.Terminated](probe)
	}
}

func TestBroadcastReachesEveryRoutee(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 3})
	rs := routees(t, r)
	check := func(how string) {
		t.Helper()
		from := map[actor.Ref]bool{}
		for range 3 {
			got := testkit.ExpectMsgType[reply](probe)
			if got.Msg != "all" {
				t.Fatalf("%s: %+v", how, got)
			}
			from[got.From] = true
		}
		if len(from) != 3 {
			t.Fatalf("%s: replies from %v, want all of %v", how, from, rs)
		}
	}
	if err := r.Send(routing.Broadcast{Msg: "all"}, probe.Ref()); err != nil {
		t.Fatal(err)
	}
	check("Send")
	probe.Send(r.Ref(), routing.Broadcast{Msg: "all"})
	check("via Ref")
}

func TestManagementMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 2})
	rs := routees(t, r)

	_ = r.Tell(routing.AdjustPoolSize{Change: 2})
	grown := routees(t, r)
	if len(grown) != 4 || !slices.Equal(grown[:2], rs) {
		t.Fatalf("after +2: %v", grown)
	}
	probe.Watch(grown[3])
	_ = r.Tell(routing.AdjustPoolSize{Change: -1})
	probe.ExpectTerminated(grown[3])
	if got := routees(t, r); !slices.Equal(got, grown[:3]) {
		t.Fatalf("after -1: %v", got)
	}

	outsider, err := sys.Spawn(echoProps(actor.Ref{}), "outsider")
	if err != nil {
		t.Fatal(err)
	}
	_ = r.Tell(routing.AddRoutee{Ref: outsider})
	_ = r.Tell(routing.AddRoutee{Ref: outsider}) // twice is once
	if got := routees(t, r); len(got) != 4 || got[3] != outsider {
		t.Fatalf("after AddRoutee: %v", got)
	}
	probe.Watch(grown[0])
	_ = r.Tell(routing.RemoveRoutee{Ref: grown[0]})
	probe.ExpectTerminated(grown[0]) // a child of the pool: stopped
	_ = r.Tell(routing.RemoveRoutee{Ref: outsider})
	if got := routees(t, r); !slices.Equal(got, grown[1:3]) {
		t.Fatalf("after RemoveRoutee: %v", got)
	}
	// An outsider is not stopped by removal: it still answers (a PoisonPill from the
	// router would be ahead of this ask, as the router sent it before its last answer).
	if _, err := actor.Ask[reply](context.Background(), outsider, "x"); err != nil {
		t.Fatalf("outsider: %v", err)
	}
}

func TestRouterTellDoesNotAllocate(t *testing.T) {
	sys := testkit.NewSystem(t)
	r := newPool(t, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 4})
	msg := &struct{ n int }{}
	// The routees ignore *struct{n int}; a Tell of a pointer allocates nothing, routed
	// or not (the mailbox's segments are reused once its routee keeps up).
	for range 1000 {
		_ = r.Tell(msg)
	}
	if n := testing.AllocsPerRun(1000, func() { _ = r.Tell(msg) }); n > 0.01 {
		t.Errorf("Router.Tell allocates %v times per message", n)
	}
}

func TestPoolAsAChildStopsWithItsParent(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(actor.Started); ok {
			r, err := routing.NewPool(context.Background(), ctx, routing.PoolConfig{Name: "pool", Routee: echoProps(actor.Ref{}), Size: 2})
			if err != nil {
				_ = probe.Ref().Tell(err)
				return
			}
			_ = probe.Ref().Tell(r)
		}
	}), "parent")
	if err != nil {
		t.Fatal(err)
	}
	r := testkit.ExpectMsgType[*routing.Router](probe)
	if r.Ref().Path() != "/user/parent/pool" {
		t.Fatalf("router at %v", r.Ref().Path())
	}
	rs := routees(t, r)
	for _, ref := range append([]actor.Ref{r.Ref()}, rs...) {
		probe.Watch(ref)
	}
	_ = sys.Stop(parent)
	for range 3 {
		testkit.ExpectMsgType[actor.Terminated](probe)
	}
}
