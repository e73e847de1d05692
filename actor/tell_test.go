package actor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func TestTellKeepsOrderPerSender(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	echo := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if n, ok := ctx.Message().(int); ok {
			_ = probe.Ref().Tell(n)
		}
	}), "echo")
	const n = 10_000
	for i := range n {
		if err := echo.Tell(i); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		probe.ExpectMsg(i)
	}
}

func TestSendRespondAndForwardKeepSender(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	replier := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			ctx.Respond("re:" + s)
		}
	}), "replier")
	forwarder := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(string); ok {
			_ = ctx.Forward(replier)
		}
	}), "forwarder")
	probe.Send(forwarder, "hi")
	probe.ExpectMsg("re:hi")
	if probe.LastSender() != replier {
		t.Fatalf("reply came from %v, want %v", probe.LastSender(), replier)
	}
}

func TestBadSendsReturnErrors(t *testing.T) {
	sys := testkit.NewSystem(t)
	ref := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "a")
	if err := ref.Tell(nil); !errors.Is(err, actor.ErrNilMessage) {
		t.Fatalf("Tell(nil) = %v, want ErrNilMessage", err)
	}
	var zero actor.Ref
	if err := zero.Tell("x"); !errors.Is(err, actor.ErrNoRecipient) {
		t.Fatalf("zero.Tell = %v, want ErrNoRecipient", err)
	}
	if zero.String() != "nobody" || !zero.IsZero() {
		t.Fatalf("zero ref: %q %v", zero.String(), zero.IsZero())
	}
}

func TestSpawnNamesAndPaths(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case string:
			child, err := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), m)
			if err != nil {
				ctx.Respond(err)
				return
			}
			ctx.Respond(child)
		}
	}), "parent")
	if parent.Path() != "/user/parent" {
		t.Fatalf("path %q", parent.Path())
	}
	if _, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "parent"); !errors.Is(err, actor.ErrNameTaken) {
		t.Fatalf("duplicate top-level name: %v", err)
	}
	probe.Send(parent, "kid")
	kid := testkit.ExpectMsgType[actor.Ref](probe)
	if kid.Path() != "/user/parent/kid" || kid.Name() != "kid" || parent.Name() != "parent" {
		t.Fatalf("child path %q, name %q; parent's name %q", kid.Path(), kid.Name(), parent.Name())
	}
	probe.Send(parent, "kid")
	if err := testkit.ExpectMsgType[error](probe); !errors.Is(err, actor.ErrNameTaken) {
		t.Fatalf("duplicate child name: %v", err)
	}
	for _, bad := range []string{"a/b", "$x", "sp ace"} {
		if _, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), bad); !errors.Is(err, actor.ErrInvalidName) {
			t.Fatalf("name %q: %v", bad, err)
		}
	}
	anon := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "")
	if !strings.HasPrefix(anon.Path(), "/user/$") || "/user/"+anon.Name() != anon.Path() {
		t.Fatalf("anonymous path %q, name %q", anon.Path(), anon.Name())
	}
	if (actor.Ref{}).Name() != "" || sys.DeadLetters().Name() != "deadLetters" {
		t.Fatalf("names of nobody and dead letters: %q, %q", actor.Ref{}.Name(), sys.DeadLetters().Name())
	}
	got, err := sys.Resolve("/user/parent/kid")
	if err != nil || got != kid {
		t.Fatalf("Resolve = %v, %v; want %v", got, err, kid)
	}
	if _, err := sys.Resolve("/user/nope"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("Resolve missing: %v", err)
	}
	if _, err := sys.Spawn(nil, "x"); !errors.Is(err, actor.ErrInvalidProps) {
		t.Fatalf("nil props: %v", err)
	}
	if _, err := sys.Spawn(&actor.Props{}, "x"); !errors.Is(err, actor.ErrInvalidProps) {
		t.Fatalf("no producer: %v", err)
	}
}

func TestRefsAreComparableMapKeys(t *testing.T) {
	sys := testkit.NewSystem(t)
	a := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "a")
	b := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "b")
	again, _ := sys.Resolve("/user/a")
	m := map[actor.Ref]int{a: 1, b: 2}
	if m[again] != 1 || a == b {
		t.Fatal("refs are not usable as map keys")
	}
}

func TestAsk(t *testing.T) {
	sys := testkit.NewSystem(t)
	doubler := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch n := ctx.Message().(type) {
		case int:
			ctx.Respond(2 * n)
		case string:
			ctx.Respond(actor.Failure{Err: errors.New("no strings")})
		}
	}), "doubler")

	got, err := actor.Ask[int](t.Context(), doubler, 21)
	if err != nil || got != 42 {
		t.Fatalf("Ask = %v, %v", got, err)
	}
	if _, err := actor.Ask[int](t.Context(), doubler, "x"); err == nil || err.Error() != "no strings" {
		t.Fatalf("Failure reply: %v", err)
	}
	if _, err := actor.Ask[string](t.Context(), doubler, 1); !errors.Is(err, actor.ErrUnexpectedReply) {
		t.Fatalf("wrong type: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = actor.Ask[int](short, doubler, 1.5)
	if !errors.Is(err, actor.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no reply: %v", err)
	}
	// The error names the target and the message's type.
	if msg := err.Error(); !strings.Contains(msg, "/user/doubler") || !strings.Contains(msg, "float64") {
		t.Fatalf("timeout error %q does not name the target and the message type", msg)
	}
	res, err := doubler.Ask(t.Context(), 5).Result(t.Context())
	if err != nil || res != 10 {
		t.Fatalf("Future = %v, %v", res, err)
	}
}

func TestAskToStoppedActorFailsFast(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	ref := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "gone")
	probe.Watch(ref)
	sys.Stop(ref)
	probe.ExpectTerminated(ref)

	start := time.Now()
	_, err := actor.Ask[int](t.Context(), ref, 1)
	if !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("Ask to stopped actor: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Ask took %v: it waited for the timeout", took)
	}
	if _, err := ref.Ask(t.Context(), 1).Result(t.Context()); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("Future to stopped actor: %v", err)
	}
}

func TestPipeTo(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	echo := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if s, ok := ctx.Message().(string); ok {
			ctx.Respond(s)
		}
	}), "echo")
	echo.Ask(t.Context(), "piped").PipeTo(probe.Ref())
	probe.ExpectMsg("piped")
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	echo.Ask(short, 1).PipeTo(probe.Ref())
	f := testkit.ExpectMsgType[actor.Failure](probe)
	if !errors.Is(f.Err, actor.ErrTimeout) {
		t.Fatalf("piped failure: %v", f.Err)
	}
}

func TestDeadLettersArePublished(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), probe.Ref())
	ref := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "short-lived")
	watcher := testkit.NewProbe(t, sys)
	watcher.Watch(ref)
	sys.Stop(ref)
	watcher.ExpectTerminated(ref)
	_ = ref.Tell("late")
	dl := testkit.ExpectMsgType[actor.DeadLetter](probe)
	if dl.Recipient != ref || dl.Message != "late" || !errors.Is(dl.Reason, actor.ErrRecipientStopped) {
		t.Fatalf("dead letter %+v", dl)
	}
	_ = sys.DeadLetters().Tell("direct")
	dl = testkit.ExpectMsgType[actor.DeadLetter](probe)
	if dl.Message != "direct" || !errors.Is(dl.Reason, actor.ErrDeadLetter) {
		t.Fatalf("dead letter %+v", dl)
	}
	if n := sys.DeadLetterCount(); n != 2 {
		t.Fatalf("DeadLetterCount = %d, want 2", n)
	}
}

// Respond without a sender and Stop of a stranger say so, instead of doing nothing.
func TestRespondAndStopReportMisuse(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	stranger := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "stranger")
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		if ctx.Message() == "go" {
			_ = probe.Ref().Tell(ctx.Respond("answer"))
			_ = probe.Ref().Tell(ctx.Stop(stranger))
			_ = probe.Ref().Tell(ctx.Stop(actor.Ref{}))
		}
	}), "misuser")
	_ = ref.Tell("go") // no sender
	for _, want := range []error{actor.ErrNoRecipient, actor.ErrNotChild, actor.ErrNotChild} {
		if err := testkit.ExpectMsgType[error](probe); !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
	}
	if err := sys.Stop(actor.Ref{}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("System.Stop of the zero Ref: %v", err)
	}
}
