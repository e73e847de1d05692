package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.opentelemetry.io/otel/trace"
)

// TraceHop asks a traced entity to tell To a string, and to answer 1.
type TraceHop struct{ To actor.Ref }

// tracedEntityConfig is an entity type whose entities opt into tracing and answer
// TraceHop.
func tracedEntityConfig() EntityConfig {
	cfg := persistentCounterConfig() // its stores and timings; other entities
	cfg.EntityFactory = func(EntityID) *actor.Props {
		p := actor.PropsOf(func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				if m, ok := ctx.Message().(TraceHop); ok {
					_ = ctx.Send(m.To, "hop")
					_ = ctx.Respond(1)
				}
			})
		})
		p.Trace = true
		return p
	}
	return cfg
}

// An ask from node 0 to a sharded entity on node 1, which tells an actor on node 2,
// is one trace: the ask's client span, the entity's span its child, the actor's span
// the entity's child. A TellContext to the entity joins the caller's trace too.
func TestTraceCrossesShardingAndNodes(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sc := startShardClusterWith(t, multinode.Options{Nodes: 3, ConfigureSystem: func(_ int, c *actor.Config) {
		c.TracerProvider = rec.Provider
	}}, func(int) EntityConfig { return tracedEntityConfig() })
	probe := testkit.NewProbe(t, sc.nodes[2].System)
	sinkProps := actor.PropsOf(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			if s, ok := ctx.Message().(string); ok {
				_ = probe.Ref().Tell(s)
			}
		})
	})
	sinkProps.Trace = true
	sink, err := sc.nodes[2].System.Spawn(sinkProps, "sink")
	if err != nil {
		t.Fatal(err)
	}
	// An entity whose shard node 1 hosts: once every region has registered, the
	// coordinator gives each about a third of the shards.
	for i := range 3 {
		awaitRegistered(t, sc.nodes[i].region, 3, fmt.Sprintf("node %d's region", i))
	}
	var id EntityID
	for _, cand := range entityIDs(40) {
		sc.mustAsk(0, cand, TraceHop{To: sink})
		probe.ExpectMsg("hop")
		home := sc.homes(0, 1, 2)[HashShardID(cand, 10)]
		if len(home) == 1 && home[0] == 1 {
			id = cand
			break
		}
	}
	if id == "" {
		t.Fatal("node 1 hosts none of 40 entities")
	}
	ref, err := EntityRefFor[TraceHop](sc.nodes[0].System, sc.typeName, id)
	if err != nil {
		t.Fatal(err)
	}
	wait := testkit.Dilated(10 * time.Second)

	t.Run("ask", func(t *testing.T) {
		ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
		actx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if n, err := Ask[int](actx, ref, TraceHop{To: sink}); err != nil || n != 1 {
			t.Fatalf("ask: %d, %v", n, err)
		}
		probe.ExpectMsg("hop")
		root.End()
		tid := root.SpanContext().TraceID()
		ask := rec.WaitForIn(t, tid, "troupe.ask sharding.TraceHop", wait)
		entity := rec.WaitForIn(t, tid, "troupe.receive sharding.TraceHop", wait)
		hop := rec.WaitForAt(t, tid, "troupe.receive string", "/user/sink", wait)
		spantest.ChildOf(t, ask, root.SpanContext())
		spantest.ChildOf(t, entity, ask.SpanContext())
		spantest.ChildOf(t, hop, entity.SpanContext())
		spantest.OnNode(t, entity, sc.nodes[1].System)
		onlyTrace(t, rec, tid, 4)
	})

	t.Run("tell", func(t *testing.T) {
		ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
		if err := ref.TellContext(ctx, TraceHop{To: sink}); err != nil {
			t.Fatal(err)
		}
		probe.ExpectMsg("hop")
		root.End()
		tid := root.SpanContext().TraceID()
		entity := rec.WaitForIn(t, tid, "troupe.receive sharding.TraceHop", wait)
		hop := rec.WaitForAt(t, tid, "troupe.receive string", "/user/sink", wait)
		spantest.ChildOf(t, entity, root.SpanContext())
		spantest.ChildOf(t, hop, entity.SpanContext())
	})
}

// onlyTrace fails unless trace id has exactly n spans.
func onlyTrace(t *testing.T, rec *spantest.Recorder, id trace.TraceID, n int) {
	t.Helper()
	got := 0
	for _, s := range rec.Spans() {
		if s.SpanContext().TraceID() == id {
			got++
		}
	}
	if got != n {
		t.Errorf("trace has %d spans, want %d", got, n)
	}
}
