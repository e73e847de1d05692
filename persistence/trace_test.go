package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/spantest"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
)

// A persist handler runs after its command was handled, when the journal answers: its
// Respond still replies in the command's trace, so the reply's span is the child of
// the command's span. The journal's answers make no spans.
func TestAPersistHandlerRepliesInItsCommandsTrace(t *testing.T) {
	rec := spantest.NewRecorder(t)
	sys := testkit.NewSystem(t, actor.Config{TracerProvider: rec.Provider})
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	sinkProps := actor.PropsFunc(func(ctx actor.Context) {
		if n, ok := ctx.Message().(int); ok {
			_ = probe.Ref().Tell(n)
		}
	})
	sinkProps.Trace = true
	sink, err := sys.Spawn(sinkProps, "sink")
	if err != nil {
		t.Fatal(err)
	}
	props := counterProps("traced-1", probe)
	props.Trace = true
	ref, err := sys.Spawn(props, "c")
	if err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	ctx, root := rec.Provider.Tracer("test").Start(context.Background(), "root")
	if err := ref.SendContext(ctx, increment{by: 5}, sink); err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg(5)
	root.End()
	tid, wait := root.SpanContext().TraceID(), testkit.Dilated(5*time.Second)
	command := rec.WaitForIn(t, tid, "troupe.receive persistence_test.increment", wait)
	reply := rec.WaitForAt(t, tid, "troupe.receive int", "/user/sink", wait)
	for _, s := range rec.Spans() {
		if s.Name() != "root" && s.Name() != "troupe.receive int" && s.Name() != command.Name() {
			t.Errorf("a span for persistence's own message (the entity opts in, its journal answers make none): %s", s.Name())
		}
	}
	spantest.ChildOf(t, command, root.SpanContext())
	spantest.ChildOf(t, reply, command.SpanContext())
}
