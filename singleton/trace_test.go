package singleton_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// stopNow lets a slowStop instance stop; the test sends it on the instance's node.
type stopNow struct{}

// slowStop is the test singleton. While hold is set, it stops after its termination
// message only once told to (stopNow): messages sent meanwhile reach its manager
// during the hand-over.
type slowStop struct {
	instance
	hold *atomic.Bool
}

func (s *slowStop) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case Terminate:
		if !s.hold.Load() {
			s.instance.Receive(ctx)
			return
		}
		s.tab.note("terminate %d", s.node)
	case stopNow:
		_ = ctx.Stop(ctx.Self())
	default:
		s.instance.Receive(ctx)
	}
}

// A message sent to a proxy in a trace keeps it to the singleton on another node,
// whose span (its Props set Trace) is the child of the sender's span: when the proxy
// buffered it before any manager ran, when the proxy knows where the singleton is (a
// tell, and an ask, whose client span is the parent), and when it was sent during a
// hand-over (held by the old host and handed over, passed on by it, or buffered by
// the proxy: the trace survives whichever way it went).
func TestTraceCrossesTheProxy(t *testing.T) {
	rec := spantest.NewRecorder(t)
	hold := new(atomic.Bool)
	var h *harness
	h = newHarness(t, harnessOptions{nodes: 2, noStart: true,
		opts: multinode.Options{ConfigureSystem: func(_ int, c *actor.Config) { c.TracerProvider = rec.Provider }},
		mod: func(i int, cfg *singleton.Config) {
			cfg.Props = actor.PropsOf(func() actor.Actor { return &slowStop{instance: instance{tab: h.tab, node: i}, hold: hold} })
			cfg.Props.Trace = true
			cfg.TerminationMessage = Terminate{}
		},
	})
	wait := testkit.Dilated(10 * time.Second)
	tracer := rec.Provider.Tracer("test")
	// numbered sends Numbered{stream, 1} to proxy in a new trace, runs then, and
	// returns the span of the singleton that handled the message, the child of the
	// sender's.
	numbered := func(proxy actor.Ref, stream string, then func()) sdktrace.ReadOnlySpan {
		t.Helper()
		ctx, root := tracer.Start(context.Background(), "root "+stream)
		if err := proxy.TellContext(ctx, Numbered{Stream: stream, Seq: 1}); err != nil {
			t.Fatal(err)
		}
		root.End()
		then()
		h.tab.await(t, 10*time.Second, stream, func(tb *table) bool { return len(tb.streams[stream]) == 1 })
		span := rec.WaitForIn(t, root.SpanContext().TraceID(), "troupe.receive singleton_test.Numbered", wait)
		spantest.ChildOf(t, span, root.SpanContext())
		return span
	}

	// Buffered: a proxy on node 1, and no manager anywhere yet; the message waits in
	// the proxy's buffer until the managers start and the singleton runs on node 0.
	proxy, err := singleton.Proxy(h.c.Node(1).System, singleton.ProxyConfig{Name: h.name, IdentificationInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	span := numbered(proxy, "buffered", func() {
		// The proxy refused what followed the message, so it took the message before
		// any manager started.
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := actor.Ask[Pong](ctx, proxy, Unregistered{}); !errors.Is(err, actor.ErrDeadLetter) {
			t.Fatalf("an unregistered message through the proxy: %v", err)
		}
		h.start(0)
		h.start(1)
	})
	spantest.OnNode(t, span, h.c.Node(0).System)

	// A tell through a proxy that knows where the singleton runs.
	spantest.OnNode(t, numbered(h.proxy(1), "tell", func() {}), h.c.Node(0).System)

	// An ask: the singleton's span is the child of the ask's.
	ctx, root := tracer.Start(context.Background(), "root ask")
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if p, err := actor.Ask[Pong](actx, h.proxy(1), Ping{Seq: 1}); err != nil || p.Node != 0 {
		t.Fatalf("ask: %+v, %v", p, err)
	}
	root.End()
	tid := root.SpanContext().TraceID()
	ask := rec.WaitForIn(t, tid, "troupe.ask singleton_test.Ping", wait)
	span = rec.WaitForIn(t, tid, "troupe.receive singleton_test.Ping", wait)
	spantest.ChildOf(t, ask, root.SpanContext())
	spantest.ChildOf(t, span, ask.SpanContext())
	spantest.OnNode(t, span, h.c.Node(0).System)

	// During a hand-over: node 0 leaves, and its instance holds on after its
	// termination message until the message was sent.
	old, err := h.c.Node(0).System.Resolve("/system/singleton/counter/counter")
	if err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	left := make(chan struct{})
	go func() {
		defer close(left)
		h.leave(0)
	}()
	defer func() {
		hold.Store(false)       // node 1's instance stops when the test ends
		_ = old.Tell(stopNow{}) // when the test failed before
		<-left
	}()
	h.tab.await(t, 10*time.Second, "the termination message", func(tb *table) bool {
		return slices.Contains(tb.events, "terminate 0")
	})
	span = numbered(h.proxy(1), "hand-over", func() {
		if err := old.Tell(stopNow{}); err != nil {
			t.Fatal(err)
		}
	})
	spantest.OnNode(t, span, h.c.Node(1).System)
}
