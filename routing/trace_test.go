package routing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/testkit"
)

// traced is a message whose routee reports the trace it handled it in.
type traced struct{}

// SendContext carries the caller's trace to the routee, through the Router and through
// a Broadcast; Send carries none.
func TestSendContextCarriesTheTrace(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	probe := testkit.NewProbe(t, sys)
	routee := actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(traced); ok {
			_ = probe.Ref().Tell(trace.SpanContextFromContext(ctx.TraceContext()))
		}
	})
	routee.Trace = true
	for _, logic := range []routing.Logic{routing.RoundRobin(), routing.Random()} {
		r := newPool(t, sys, routing.PoolConfig{Routee: routee, Size: 2, Logic: logic})
		ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
		if err := r.SendContext(ctx, traced{}, actor.Ref{}); err != nil {
			t.Fatal(err)
		}
		if got := testkit.ExpectMsgType[trace.SpanContext](probe); got.TraceID() != root.SpanContext().TraceID() {
			t.Fatalf("routee's trace %v, want the caller's %v", got.TraceID(), root.SpanContext().TraceID())
		}
		if err := r.SendContext(ctx, routing.Broadcast{Msg: traced{}}, actor.Ref{}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got := testkit.ExpectMsgType[trace.SpanContext](probe); got.TraceID() != root.SpanContext().TraceID() {
				t.Fatalf("broadcast: routee's trace %v, want the caller's", got.TraceID())
			}
		}
		root.End()
		if err := r.Send(traced{}, actor.Ref{}); err != nil {
			t.Fatal(err)
		}
		if got := testkit.ExpectMsgType[trace.SpanContext](probe); got.TraceID() == root.SpanContext().TraceID() {
			t.Fatal("Send carried the earlier trace")
		}
	}
}
