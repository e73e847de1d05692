package persistence_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
)

// logger persists each command with the mode it names and reports the order in which
// handlers, deferred calls and commands ran.
type logger struct {
	id    string
	probe actor.Ref
	rec   persistence.Recovery
	seen  []string
}

func (l *logger) PersistenceID() string          { return l.id }
func (l *logger) Recovery() persistence.Recovery { return l.rec }
func (l *logger) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Incremented:
		l.seen = append(l.seen, "replayed")
	case persistence.RecoveryCompleted:
		_ = l.probe.Tell(m)
	}
}

func (l *logger) Receive(ctx persistence.Context) {
	note := func(s string) func(Incremented) { return func(Incremented) { _ = l.probe.Tell(s) } }
	switch m := ctx.Message().(type) {
	case string:
		switch m {
		case "async":
			_ = persistence.PersistAsync(ctx, Incremented{By: 1}, note("async-1"))
			_ = persistence.PersistAsync(ctx, Incremented{By: 2}, note("async-2"))
			ctx.Defer(func() { _ = l.probe.Tell("deferred") })
			_ = l.probe.Tell("command-done")
		case "stashing":
			_ = persistence.Persist(ctx, Incremented{By: 1}, note("persisted"))
			ctx.Defer(func() { _ = l.probe.Tell("deferred") })
		case "next":
			_ = l.probe.Tell("next")
		case "defer-alone":
			ctx.Defer(func() { _ = l.probe.Tell("deferred-at-once") })
		case "seq":
			ctx.Respond(ctx.LastSequenceNr())
		case "replayed":
			ctx.Respond(len(l.seen))
		}
	}
}

func TestPersistAsyncDoesNotStashAndDeferRunsAfterHandlers(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity { return &logger{id: "log", probe: probe.Ref()} }), "log")
	probe.ExpectMsg(persistence.RecoveryCompleted{})

	_ = ref.Tell("async")
	_ = ref.Tell("next")
	// The command returns before its handlers run; the next command is not held back
	// (it may come before or after the handlers), and the handlers and the deferred
	// call keep their order.
	var order []string
	for range 5 {
		order = append(order, testkit.ExpectMsgType[string](probe))
	}
	pos := map[string]int{}
	for i, s := range order {
		pos[s] = i
	}
	if pos["command-done"] != 0 || !(pos["async-1"] < pos["async-2"] && pos["async-2"] < pos["deferred"]) {
		t.Fatalf("order %v", order)
	}

	_ = ref.Tell("stashing")
	_ = ref.Tell("next") // stashed until the handler and the deferred call ran
	probe.ExpectMsg("persisted")
	probe.ExpectMsg("deferred")
	probe.ExpectMsg("next")

	_ = ref.Tell("defer-alone")
	probe.ExpectMsg("deferred-at-once")
	probe.Send(ref, "seq")
	probe.ExpectMsg(uint64(3))
}

func TestRecoveryOptions(t *testing.T) {
	sys := testkit.NewSystem(t)
	setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	spawnLogger := func(name string, rec persistence.Recovery) actor.Ref {
		ref, err := sys.Spawn(persistence.Props(func() persistence.Entity {
			return &logger{id: "opts", probe: probe.Ref(), rec: rec}
		}), name)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	ref := spawnLogger("a", persistence.Recovery{})
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	for range 3 {
		_ = ref.Tell("stashing")
		probe.ExpectMsg("persisted")
		probe.ExpectMsg("deferred")
	}
	stop := func(ref actor.Ref) { stopAndWait(sys, probe, ref) }
	stop(ref)

	ref = spawnLogger("b", persistence.Recovery{ToSequenceNr: 2})
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 3})
	probe.Send(ref, "replayed")
	probe.ExpectMsg(2)
	stop(ref)

	ref = spawnLogger("c", persistence.Recovery{Disabled: true})
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, "replayed")
	probe.ExpectMsg(0)
	stop(ref)
}
