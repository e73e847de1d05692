package persistence_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// startNode starts an actor system named name with persistence on store, and shuts
// it down when the test ends: a node of its own. Two of them run side by side in one
// test, which testkit.NewSystem's leak check does not allow (TestMain checks leaks).
func startNode(t *testing.T, name string, store *memjournal.Store) *actor.System {
	t.Helper()
	return startNodeOn(t, name, store, store, registry(t))
}

// startNodeOn is startNode with a journal, a snapshot store and a registry of the
// test's choosing.
func startNodeOn(t *testing.T, name string, j persistence.Journal, snaps persistence.SnapshotStore, reg *serialization.Registry) *actor.System {
	t.Helper()
	log, stopLog := testkit.NewLogger(t, zapcore.InfoLevel)
	sys, err := actor.New(name, actor.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown of %s: %v", name, err)
		}
		stopLog()
	})
	if _, err := persistence.Start(sys, persistence.Config{Journal: j, Snapshots: snaps, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	return sys
}

// watchful is a counter that reports its Stopping and Stopped to its probe, and asks
// for a snapshot in its Stopped handler.
type watchful struct{ counter }

func (w *watchful) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case actor.Stopping:
		_ = w.probe.Tell("stopping")
	case actor.Stopped:
		_ = w.probe.Tell("stopped")
		ctx.SaveSnapshot(CounterState{Value: w.value})
	default:
		w.counter.Receive(ctx)
	}
}

func watchfulProps(id string, probe *testkit.Probe) *actor.Props {
	return persistence.Props(func() persistence.Entity {
		return &watchful{counter{id: id, probe: probe.Ref()}}
	})
}

// expectStop collects what probe receives as ref stops after a failure: n messages
// from the entity, in order, and Terminated, which may come before the last of them
// (a probe takes system messages first).
func expectStop(t *testing.T, probe *testkit.Probe, ref actor.Ref, n int) []any {
	t.Helper()
	var got []any
	terminated := false
	for _, m := range probe.ReceiveN(n + 1) {
		if tm, ok := m.(actor.Terminated); ok && tm.Ref == ref {
			terminated = true
			continue
		}
		got = append(got, m)
	}
	if !terminated {
		t.Fatalf("%v stopped without Terminated: %v", ref, got)
	}
	return got
}

// Two incarnations of one persistence id, on two nodes after a split brain, recover
// the same history. The first writes #1; the second's write of #1 conflicts, and the
// second stops there: its command's sender gets the conflict as actor.Failure, the
// command stashed behind it goes to dead letters, it runs its Stopping and Stopped
// handlers (the snapshot asked there is refused), and it writes nothing more. The
// journal holds one history, the first incarnation's. It used to receive
// PersistRejected and go on, and its next write, #2, was stored above the first's #1.
func TestConflictStopsTheSecondIncarnation(t *testing.T) {
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	sys1, sys2 := startNode(t, "node1", store), startNode(t, "node2", store)
	p1, p2 := testkit.NewProbe(t, sys1), testkit.NewProbe(t, sys2)
	first, _ := sys1.Spawn(watchfulProps("split", p1), "c")
	p1.ExpectMsg(persistence.RecoveryCompleted{})
	second, _ := sys2.Spawn(watchfulProps("split", p2), "c")
	p2.ExpectMsg(persistence.RecoveryCompleted{})

	p1.Send(first, increment{by: 1})
	p1.ExpectMsg(1)

	p2.Watch(second)
	p2.Send(second, increment{by: 10}) // #1 again: a conflict
	p2.Send(second, get{})             // stashed behind the Persist
	got := expectStop(t, p2, second, 3)
	if len(got) != 3 || got[1] != "stopping" || got[2] != "stopped" {
		t.Fatalf("the second incarnation's sender got %v, want a Failure, stopping, stopped", got)
	}
	if f, ok := got[0].(actor.Failure); !ok || !errors.Is(f.Err, persistence.ErrSequenceConflict) {
		t.Fatalf("reply to the conflicting command: %#v, want actor.Failure wrapping ErrSequenceConflict", got[0])
	}
	if _, err := actor.Ask[int](context.Background(), second, increment{by: 100}); !errors.Is(err, actor.ErrDeadLetter) {
		t.Errorf("ask of the stopped incarnation: %v, want ErrDeadLetter", err)
	}

	p1.Send(first, increment{by: 2})
	p1.ExpectMsg(3)
	var writers []string
	var seqs []uint64
	err := store.ReplayMessages(context.Background(), "split", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		seqs, writers = append(seqs, r.SequenceNr), append(writers, r.WriterID)
		return nil
	})
	if err != nil || !slices.Equal(seqs, []uint64{1, 2}) || writers[0] != first.URI() || writers[1] != first.URI() {
		t.Fatalf("the journal holds #%v written by %v (%v), want #1 and #2 by %s", seqs, writers, err, first.URI())
	}
	if _, ok, err := store.LoadSnapshot(context.Background(), "split", persistence.SnapshotCriteria{}); ok || err != nil {
		t.Errorf("the stopped incarnation stored a snapshot (%v)", err)
	}
	st := persistence.Get(sys2).Stats()
	if st.SequenceConflicts != 1 || st.EventsRejected != 0 || st.HandlersDropped != 1 {
		t.Errorf("node2's stats %+v, want one conflict, one handler dropped, no rejection", st)
	}
}

// An entity stopped by a failed write receives Stopping and Stopped, so that it
// releases what it holds, and the sender of its command gets the failure. A snapshot
// asked from its Stopped handler is refused: its state is not to be trusted.
func TestWriteFailureDeliversStoppingAndStopped(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(watchfulProps("failing", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(1)

	probe.Watch(ref)
	fire := errors.New("disk on fire")
	store.InjectWriteFailure(fire)
	probe.Send(ref, increment{by: 1})
	got := expectStop(t, probe, ref, 3)
	if len(got) != 3 || got[1] != "stopping" || got[2] != "stopped" {
		t.Fatalf("got %v, want a Failure, stopping, stopped", got)
	}
	if f, ok := got[0].(actor.Failure); !ok || !errors.Is(f.Err, fire) {
		t.Fatalf("reply to the command whose write failed: %#v, want actor.Failure wrapping %v", got[0], fire)
	}
	if _, ok, err := store.LoadSnapshot(context.Background(), "failing", persistence.SnapshotCriteria{}); ok || err != nil {
		t.Errorf("the failed entity stored a snapshot (%v)", err)
	}
}

// The writer id of an event names the incarnation that wrote it: two incarnations at
// the same path, in systems of the same name (a node that restarted), write
// different ids, each its full path with uid. It used to be the path alone.
func TestWriterIDNamesTheIncarnation(t *testing.T) {
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	var refs []actor.Ref
	for i := range 2 {
		sys := startNode(t, "node", store)
		probe := testkit.NewProbe(t, sys)
		ref, _ := sys.Spawn(counterProps("writer", probe), "c")
		probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: uint64(i)})
		probe.Send(ref, increment{by: 1})
		probe.ExpectMsg(i + 1)
		stopAndWait(sys, probe, ref)
		refs = append(refs, ref)
	}
	var writers []string
	if err := store.ReplayMessages(context.Background(), "writer", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		writers = append(writers, r.WriterID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{refs[0].URI(), refs[1].URI()}; !slices.Equal(writers, want) || want[0] == want[1] {
		t.Fatalf("writer ids %q, want %q, distinct", writers, want)
	}
}
