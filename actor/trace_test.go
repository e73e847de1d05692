package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/testkit"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

type (
	toA      struct{}
	toB      struct{}
	toC      struct{}
	question struct{}
	answer   struct{}
)

// spanWait bounds the waits for spans.
var spanWait = testkit.Dilated(5 * time.Second)

// traceActor runs f for each message; traced sets Props.Trace.
func traceActor(t *testing.T, sys *actor.System, name string, traced bool, f func(ctx actor.Context)) actor.Ref {
	t.Helper()
	p := actor.PropsOf(func() actor.Actor { return actor.ReceiveFunc(f) })
	p.Trace = traced
	return spawn(t, sys, p, name)
}

func rootSpan(r *spantest.Recorder) (context.Context, trace.Span) {
	return r.Provider.Tracer("test").Start(context.Background(), "root")
}

// A traced actor's span is the child of the span that sent the message; an actor that
// does not opt in makes no span and passes the context on (Forward and Send), so the
// next traced actor's span is the child of the last span before it.
func TestTraceFollowsMessagesThroughActors(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	probe := testkit.NewProbe(t, sys)
	c := traceActor(t, sys, "c", true, func(ctx actor.Context) {
		if _, ok := ctx.Message().(toC); ok {
			probe.Ref().Tell(trace.SpanContextFromContext(ctx.TraceContext()))
		}
	})
	b := traceActor(t, sys, "b", false, func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case toB:
			_ = ctx.Send(ctx.Self(), toC{}) // to itself first: still passed on
		case toC:
			_ = ctx.Forward(c)
		}
	})
	a := traceActor(t, sys, "a", true, func(ctx actor.Context) {
		if _, ok := ctx.Message().(toA); ok {
			_ = ctx.Send(b, toB{})
		}
	})
	ctx, root := rootSpan(rec)
	if err := a.TellContext(ctx, toA{}); err != nil {
		t.Fatal(err)
	}
	seen := testkit.ExpectMsgType[trace.SpanContext](probe)
	root.End()
	spanA := rec.WaitFor(t, "troupe.receive actor_test.toA", spanWait)
	spanC := rec.WaitFor(t, "troupe.receive actor_test.toC", spanWait)
	spantest.ChildOf(t, spanA, root.SpanContext())
	spantest.ChildOf(t, spanC, spanA.SpanContext())
	if !seen.Equal(spanC.SpanContext()) {
		t.Errorf("TraceContext in c gave %v, its span is %v", seen, spanC.SpanContext())
	}
	if got := spantest.Attr(spanC, "messaging.destination.name"); got != "/user/c" {
		t.Errorf("c's span names the actor %q", got)
	}
	if got := spantest.Attr(spanC, "troupe.sender"); got != b.String() {
		t.Errorf("c's span names the sender %q, want %q", got, b.String())
	}
	if spanC.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("receive span of kind %v", spanC.SpanKind())
	}
	for _, s := range rec.Spans() {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q is in another trace", s.Name())
		}
	}
	if n := len(rec.Spans()); n != 3 {
		t.Errorf("%d spans, want 3 (root, a, c): b makes none", n)
	}
}

// An ask is a client span, the child of the asker's context; the recipient's span is
// its child, whichever way the ask goes (the future, or the blocking Ask that runs an
// idle recipient itself).
func TestAskIsAClientSpan(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	d := traceActor(t, sys, "d", true, func(ctx actor.Context) {
		if _, ok := ctx.Message().(question); ok {
			_ = ctx.Respond(answer{})
		}
	})
	for _, how := range []string{"future", "blocking"} {
		t.Run(how, func(t *testing.T) {
			ctx, root := rootSpan(rec)
			tctx, cancel := context.WithTimeout(ctx, spanWait)
			defer cancel()
			var err error
			if how == "future" {
				_, err = d.Ask(tctx, question{}).Result(tctx)
			} else {
				_, err = actor.Ask[answer](tctx, d, question{})
			}
			if err != nil {
				t.Fatal(err)
			}
			root.End()
			id := root.SpanContext().TraceID()
			askSpan := rec.WaitForIn(t, id, "troupe.ask actor_test.question", spanWait)
			recvSpan := rec.WaitForIn(t, id, "troupe.receive actor_test.question", spanWait)
			spantest.ChildOf(t, askSpan, root.SpanContext())
			spantest.ChildOf(t, recvSpan, askSpan.SpanContext())
			if askSpan.SpanKind() != trace.SpanKindClient || askSpan.Status().Code == codes.Error {
				t.Errorf("ask span of kind %v, status %v", askSpan.SpanKind(), askSpan.Status())
			}
		})
	}
}

// A stashed message keeps its trace: handled again after UnstashAll, what it sends
// joins the trace it came with, not the one of the message that unstashed it.
func TestStashKeepsTheTrace(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	c := traceActor(t, sys, "c", true, func(actor.Context) {})
	stashed := false
	e := traceActor(t, sys, "e", false, func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case toA:
			if !stashed {
				stashed = true
				_ = ctx.Stash()
				return
			}
			_ = ctx.Send(c, toC{})
		case toB:
			ctx.UnstashAll()
		}
	})
	first, root1 := rootSpan(rec)
	second, root2 := rootSpan(rec)
	_ = e.TellContext(first, toA{})
	_ = e.TellContext(second, toB{})
	spanC := rec.WaitFor(t, "troupe.receive actor_test.toC", spanWait)
	root1.End()
	root2.End()
	spantest.ChildOf(t, spanC, root1.SpanContext())
}

// A panic in a traced Receive ends its span with an error status; the actor restarts
// and its next message gets a span of its own.
func TestAFailedReceiveEndsItsSpanWithAnError(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	probe := testkit.NewProbe(t, sys)
	f := traceActor(t, sys, "f", true, func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case toA:
			panic(boom{})
		case toB:
			_ = probe.Ref().Tell(trace.SpanContextFromContext(ctx.TraceContext()).IsValid())
		}
	})
	_ = f.Tell(toA{})
	_ = f.Tell(toB{})
	probe.ExpectMsg(true)
	failed := rec.WaitFor(t, "troupe.receive actor_test.toA", spanWait)
	if failed.Status().Code != codes.Error {
		t.Errorf("span of a failed Receive has status %v", failed.Status())
	}
	next := rec.WaitFor(t, "troupe.receive actor_test.toB", spanWait)
	if next.Parent().IsValid() || next.SpanContext().TraceID() == failed.SpanContext().TraceID() {
		t.Errorf("a message sent outside any trace got a span in another's trace")
	}
}

// Without a TracerProvider nothing is traced, even for an actor that opts in and a
// context with a span: its TraceContext is context.Background().
func TestNoTracerNoTrace(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	g := traceActor(t, sys, "g", true, func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case toA:
			_ = probe.Ref().Tell(ctx.TraceContext() == context.Background())
		case question:
			_ = ctx.Respond(answer{})
		}
	})
	ctx, root := rootSpan(rec)
	_ = g.TellContext(ctx, toA{})
	probe.ExpectMsg(true)
	if _, err := actor.Ask[answer](ctx, g, question{}); err != nil {
		t.Fatal(err)
	}
	root.End()
	if spans := rec.Spans(); len(spans) != 1 {
		t.Errorf("%d spans, want the root only", len(spans))
	}
}

// A message outside any trace costs nothing more with tracing on: a relay's ctx.Send
// and its TraceContext allocate nothing, with or without a TracerProvider.
func TestUntracedMessagesAllocateNothing(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[on], func(t *testing.T) {
			cfg := actor.Config{}
			if on {
				cfg.TracerProvider = spantest.NewRecorder(t).Provider
			}
			sys := testkit.NewSystem(t, cfg)
			done := make(chan struct{}, 1)
			sink := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
				if _, ok := ctx.Message().(*int); ok {
					done <- struct{}{}
				}
			}), "sink")
			relay := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
				if m, ok := ctx.Message().(*int); ok && ctx.TraceContext() == context.Background() {
					_ = ctx.Send(sink, m)
				}
			}), "relay")
			msg := new(int)
			tell := func() {
				_ = relay.Tell(msg)
				<-done
			}
			for range 100 {
				tell()
			}
			if a := testing.AllocsPerRun(1000, tell); a != 0 {
				t.Errorf("%v allocations per relayed tell", a)
			}
		})
	}
}
