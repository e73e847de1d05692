package routing_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/testkit"
)

func newGroup(t *testing.T, sys *actor.System, cfg routing.GroupConfig) *routing.Router {
	t.Helper()
	r, err := routing.NewGroup(context.Background(), sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGroupRoutesToRefsAndPaths(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	a, _ := sys.Spawn(echoProps(actor.Ref{}), "a")
	b, _ := sys.Spawn(echoProps(actor.Ref{}), "b")
	r := newGroup(t, sys, routing.GroupConfig{
		Routees: []actor.Ref{a},
		Paths:   []string{"/user/b", "/user/nobody", "/user/a"}, // a twice: once
	})
	if got := routees(t, r); !slices.Equal(got, []actor.Ref{a, b}) {
		t.Fatalf("routees %v, want [a b] (the path with no actor left out)", got)
	}
	for i := range 4 {
		_ = r.Send(i, probe.Ref())
		if got := testkit.ExpectMsgType[reply](probe); got.From != []actor.Ref{a, b}[i%2] {
			t.Fatalf("message %d from %v", i, got.From)
		}
	}

	// A routee that stops leaves; the group stays up with none.
	probe.Watch(a)
	_ = a.Tell(actor.PoisonPill{})
	probe.ExpectTerminated(a)
	probe.Watch(b)
	_ = b.Tell(actor.PoisonPill{})
	probe.ExpectTerminated(b)
	probe.Watch(r.Ref())
	awaitRouteesEqual(t, r, nil)

	// With none, a send fails at once: an error and a counted dead letter.
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	before := sys.DeadLetterCount()
	if err := r.Tell("lost"); !errors.Is(err, routing.ErrNoRoutees) {
		t.Fatalf("Tell with no routees: %v, want ErrNoRoutees", err)
	}
	dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
	if dl.Message != "lost" || dl.Recipient != r.Ref() || !errors.Is(dl.Reason, routing.ErrNoRoutees) {
		t.Fatalf("dead letter %+v", dl)
	}
	if sys.DeadLetterCount() != before+1 {
		t.Fatalf("dead letters %d, want %d", sys.DeadLetterCount(), before+1)
	}
	if _, err := r.Ask(context.Background(), "q").Result(context.Background()); !errors.Is(err, actor.ErrDeadLetter) || !errors.Is(err, routing.ErrNoRoutees) {
		t.Fatalf("Ask with no routees: %v", err)
	}
	if err := r.Send(routing.Broadcast{Msg: "all"}, actor.Ref{}); !errors.Is(err, routing.ErrNoRoutees) {
		t.Fatalf("Broadcast with no routees: %v", err)
	}

	// UpdateRoutees replaces the set.
	c, _ := sys.Spawn(echoProps(actor.Ref{}), "c")
	_ = r.Tell(routing.UpdateRoutees{Refs: []actor.Ref{c, {}, c}})
	if got := routees(t, r); !slices.Equal(got, []actor.Ref{c}) {
		t.Fatalf("after UpdateRoutees: %v", got)
	}
	// A group ignores AdjustPoolSize.
	_ = r.Tell(routing.AdjustPoolSize{Change: 3})
	if got := routees(t, r); !slices.Equal(got, []actor.Ref{c}) {
		t.Fatalf("after AdjustPoolSize: %v", got)
	}
	// The group never stopped.
	probe.ExpectNoMsgMatching(0, func(msg any) bool { _, ok := msg.(actor.Terminated); return ok })
}

func TestBadInput(t *testing.T) {
	sys := testkit.NewSystem(t)
	ctx := context.Background()
	for name, cfg := range map[string]routing.PoolConfig{
		"no props":  {Size: 1},
		"bad props": {Routee: &actor.Props{}, Size: 1},
		"size 0":    {Routee: echoProps(actor.Ref{}), Size: 0},
		"size -1":   {Routee: echoProps(actor.Ref{}), Size: -1},
	} {
		if _, err := routing.NewPool(ctx, sys, cfg); !errors.Is(err, routing.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
	if _, err := routing.NewGroup(ctx, sys, routing.GroupConfig{Routees: []actor.Ref{{}}}); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Errorf("zero Ref routee: %v", err)
	}
	if _, err := routing.NewGroup(ctx, sys, routing.GroupConfig{Paths: []string{""}}); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Errorf("empty path: %v", err)
	}
	if _, err := routing.NewGroup(ctx, nil, routing.GroupConfig{}); !errors.Is(err, routing.ErrInvalidConfig) {
		t.Errorf("nil parent: %v", err)
	}
	if _, err := routing.NewPool(ctx, sys, routing.PoolConfig{Name: "bad/name", Routee: echoProps(actor.Ref{}), Size: 1}); !errors.Is(err, actor.ErrInvalidName) {
		t.Errorf("bad name: %v", err)
	}

	r := newPool(t, sys, routing.PoolConfig{
		Routee: echoProps(actor.Ref{}), Size: 2,
		Logic: routing.ConsistentHashing(routing.ConsistentHashingConfig{}),
	})
	if err := r.Tell(nil); !errors.Is(err, actor.ErrNilMessage) {
		t.Errorf("nil message: %v", err)
	}
	if err := r.Tell(routing.Broadcast{}); !errors.Is(err, actor.ErrNilMessage) {
		t.Errorf("nil broadcast: %v", err)
	}
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	if err := r.Tell("no key"); !errors.Is(err, routing.ErrNoKey) {
		t.Errorf("message without a key: %v, want ErrNoKey", err)
	}
	if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); !errors.Is(dl.Reason, routing.ErrNoKey) {
		t.Errorf("dead letter %+v", dl)
	}
	// The same through the router actor.
	_ = r.Ref().Tell("no key")
	if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); !errors.Is(dl.Reason, routing.ErrNoKey) || dl.Recipient != r.Ref() {
		t.Errorf("dead letter via Ref %+v", dl)
	}
	probe := testkit.NewProbe(t, sys)
	_ = r.Send(keyed("k"), probe.Ref())
	first := testkit.ExpectMsgType[reply](probe).From
	for range 5 {
		probe.Send(r.Ref(), keyed("k"))
		if got := testkit.ExpectMsgType[reply](probe).From; got != first {
			t.Fatalf("key k went to %v and %v", first, got)
		}
	}
	// A pool whose start is abandoned is stopped.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := routing.NewPool(cctx, sys, routing.PoolConfig{Routee: echoProps(actor.Ref{}), Size: 1}); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled start: %v", err)
	}
}

// silentProps makes routees that answer "q" after a delay read from the message
// table, or never.
func delayedProps(delay map[string]time.Duration, asked actor.Ref) *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case string:
			_ = asked.Tell(ctx.Self().Name())
			d, ok := delay[ctx.Self().Name()]
			if !ok {
				return // never answers
			}
			ctx.StartSingleTimer("answer", answerTo{ctx.Sender()}, d)
		case answerTo:
			_ = ctx.Message().(answerTo).to.Send(ctx.Self().Name(), ctx.Self())
		}
	})
}

type answerTo struct{ to actor.Ref }

func TestScatterGatherFirstReplyWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		asked := testkit.NewProbe(t, sys)
		fast, _ := sys.Spawn(delayedProps(map[string]time.Duration{"fast": 10 * time.Millisecond}, asked.Ref()), "fast")
		slow, _ := sys.Spawn(delayedProps(map[string]time.Duration{"slow": 300 * time.Millisecond}, asked.Ref()), "slow")
		mute, _ := sys.Spawn(delayedProps(nil, asked.Ref()), "mute")
		r := newGroup(t, sys, routing.GroupConfig{
			Routees: []actor.Ref{slow, mute, fast},
			Logic:   routing.ScatterGatherFirstCompleted(routing.ScatterGatherConfig{Within: time.Second}),
		})
		start := time.Now()
		got, err := actor.Ask[string](context.Background(), r.Ref(), "q")
		if err != nil || got != "fast" {
			t.Fatalf("Ask: %q, %v; want fast", got, err)
		}
		if el := time.Since(start); el != 10*time.Millisecond {
			t.Fatalf("answered after %v, want 10ms", el)
		}
		asked.ReceiveN(3)
		// Through the handle, with a probe as sender: the first reply, from its routee.
		probe := testkit.NewProbe(t, sys)
		_ = r.Send("q", probe.Ref())
		probe.ExpectMsg("fast")
		if probe.LastSender() != fast {
			t.Fatalf("reply's sender %v, want %v", probe.LastSender(), fast)
		}
		asked.ReceiveN(3)
		// The late replies are absorbed: nothing but the first reaches the asker.
		probe.ExpectNoMsg(2 * time.Second)

		// Without a fast routee: the asker gets ErrNoReply at Within.
		r2 := newGroup(t, sys, routing.GroupConfig{
			Routees: []actor.Ref{mute},
			Logic:   routing.ScatterGatherFirstCompleted(routing.ScatterGatherConfig{Within: time.Second}),
		})
		start = time.Now()
		_, err = r2.Ask(context.Background(), "q").Result(context.Background())
		if !errors.Is(err, routing.ErrNoReply) || time.Since(start) != time.Second {
			t.Fatalf("Ask of a mute group: %v after %v; want ErrNoReply after 1s", err, time.Since(start))
		}
		asked.ReceiveN(1)
		// A Tell without a sender goes to every routee.
		_ = r.Tell("q")
		asked.ReceiveN(3)
	})
}

func TestTailChoppingAsksOneMoreEachInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		asked := testkit.NewProbe(t, sys)
		delays := map[string]time.Duration{"slow": time.Second, "quick": 50 * time.Millisecond}
		mute, _ := sys.Spawn(delayedProps(delays, asked.Ref()), "mute")
		slow, _ := sys.Spawn(delayedProps(delays, asked.Ref()), "slow")
		quick, _ := sys.Spawn(delayedProps(delays, asked.Ref()), "quick")
		r := newGroup(t, sys, routing.GroupConfig{
			Routees: []actor.Ref{mute, slow, quick},
			Logic:   routing.TailChopping(routing.TailChoppingConfig{Within: 3 * time.Second, Interval: 200 * time.Millisecond}),
		})
		// First request starts at mute (0ms), slow (200ms), quick (400ms): quick answers
		// at 450ms, before slow (1200ms).
		start := time.Now()
		got, err := actor.Ask[string](context.Background(), r.Ref(), "q")
		if err != nil || got != "quick" || time.Since(start) != 450*time.Millisecond {
			t.Fatalf("first: %q, %v after %v; want quick after 450ms", got, err, time.Since(start))
		}
		if names := asked.ReceiveN(3); names[0] != "mute" || names[1] != "slow" || names[2] != "quick" {
			t.Fatalf("asked %v", names)
		}
		// The next starts at slow, which would answer at 1s; quick is asked at 200ms and
		// answers at 250ms; mute, last in turn, is never asked.
		start = time.Now()
		got, err = askRouter(r, "q")
		if err != nil || got != "quick" || time.Since(start) != 250*time.Millisecond {
			t.Fatalf("second: %v, %v after %v; want quick after 250ms", got, err, time.Since(start))
		}
		if names := asked.ReceiveN(2); names[0] != "slow" || names[1] != "quick" {
			t.Fatalf("asked %v", names)
		}
		// Starting at quick: answered at 50ms, nobody else asked.
		start = time.Now()
		got, err = askRouter(r, "q")
		if err != nil || got != "quick" || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("third: %v, %v after %v", got, err, time.Since(start))
		}
		asked.ExpectMsg("quick")
		asked.ExpectNoMsg(time.Second)

		// Nobody answers within: ErrNoReply at Within.
		r2 := newGroup(t, sys, routing.GroupConfig{
			Routees: []actor.Ref{mute},
			Logic:   routing.TailChopping(routing.TailChoppingConfig{Within: 500 * time.Millisecond}),
		})
		start = time.Now()
		_, err = r2.Ask(context.Background(), "q").Result(context.Background())
		if !errors.Is(err, routing.ErrNoReply) || time.Since(start) != 500*time.Millisecond {
			t.Fatalf("mute: %v after %v", err, time.Since(start))
		}
		asked.ExpectMsg("mute")
		// Without a sender a message goes to one routee.
		_ = r.Tell("q")
		asked.ExpectMsg("mute")
		asked.ExpectNoMsg(time.Second)
	})
}

// askRouter asks through the Router handle and expects a string.
func askRouter(r *routing.Router, msg any) (string, error) {
	v, err := r.Ask(context.Background(), msg).Result(context.Background())
	s, _ := v.(string)
	return s, err
}
