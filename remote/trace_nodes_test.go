package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/testkit"
)

// A message sent while handling a traced message carries its context to the other
// node: the recipient's span there is the child of the sender's span, and the reply
// to an ask across the nodes ends the ask's client span.
func TestTraceCrossesNodes(t *testing.T) {
	rec := spantest.NewRecorder(t)
	cfg := actor.Config{TracerProvider: rec.Provider}
	a := startNodeWith(t, "a", registry(t), cfg)
	b := startNodeWith(t, "b", registry(t), cfg)
	echo := echoProps()
	echo.Trace = true
	target, err := b.sys.Spawn(echo, "echo")
	if err != nil {
		t.Fatal(err)
	}
	remoteEcho := a.remoteRef(t, target)
	relay := actor.PropsOf(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*ping); ok {
				_ = ctx.Forward(remoteEcho)
			}
		})
	})
	relay.Trace = true
	r, err := a.sys.Spawn(relay, "relay")
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
	tctx, cancel := context.WithTimeout(ctx, testkit.Dilated(5*time.Second))
	defer cancel()
	if _, err := actor.Ask[*pong](tctx, r, &ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	root.End()
	id, wait := root.SpanContext().TraceID(), testkit.Dilated(5*time.Second)
	ask := rec.WaitForIn(t, id, "troupe.ask *remote_test.ping", wait)
	atRelay := rec.WaitForAt(t, id, "troupe.receive *remote_test.ping", "/user/relay", wait)
	atEcho := rec.WaitForAt(t, id, "troupe.receive *remote_test.ping", "/user/echo", wait)
	spantest.ChildOf(t, ask, root.SpanContext())
	spantest.ChildOf(t, atRelay, ask.SpanContext())
	spantest.ChildOf(t, atEcho, atRelay.SpanContext())
	if got := spantest.Attr(atEcho, "messaging.destination.name"); got != "/user/echo" {
		t.Errorf("the far span names %q", got)
	}
}

// A system without a TracerProvider sends no trace context, even for a send from a
// context with a span: the traced actor on the other node starts a trace of its own.
func TestNoTracerSendsNoTraceContext(t *testing.T) {
	rec := spantest.NewRecorder(t)
	a := startNode(t, "a", registry(t))
	b := startNodeWith(t, "b", registry(t), actor.Config{TracerProvider: rec.Provider})
	probe := testkit.NewProbe(t, a.sys)
	echo := echoProps()
	echo.Trace = true
	target, err := b.sys.Spawn(echo, "echo")
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
	if err := a.remoteRef(t, target).TellContext(ctx, &ping{N: 1, ReplyTo: probe.Ref()}); err != nil {
		t.Fatal(err)
	}
	testkit.ExpectMsgType[*pong](probe)
	root.End()
	span := rec.WaitFor(t, "troupe.receive *remote_test.ping", testkit.Dilated(5*time.Second))
	if span.Parent().IsValid() || span.SpanContext().TraceID() == root.SpanContext().TraceID() {
		t.Errorf("the far span joined the sender's trace: parent %v", span.Parent())
	}
}
