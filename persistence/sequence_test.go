package persistence_test

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// Noted is the notebook's event; Notes its snapshot.
type (
	Noted struct{ S string }
	Notes struct{ List []string }
)

// The notebook's commands.
type (
	noteBatch struct{ mode string } // persist a, b, c and snapshot early (see Receive)
	note      struct{ s string }    // persist s and reply when handled
	snapNow   struct{}
	seqQuery  struct{}
)

// notebook keeps the list of its notes and reports the sequence number each handler
// sees, the snapshots it saves and, after recovery, what it recovered.
type notebook struct {
	id    string
	probe actor.Ref
	notes []string
}

func (n *notebook) PersistenceID() string { return n.id }

func (n *notebook) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		n.notes = slices.Clone(m.Snapshot.(Notes).List)
	case Noted:
		n.notes = append(n.notes, m.S)
	case persistence.RecoveryCompleted:
		_ = n.probe.Tell(slices.Clone(n.notes))
	}
}

func (n *notebook) snapshot(ctx persistence.Context) {
	ctx.SaveSnapshot(Notes{List: slices.Clone(n.notes)})
}

func (n *notebook) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case noteBatch:
		evs := []Noted{{"a"}, {"b"}, {"c"}}
		first := true
		handler := func(ev Noted) {
			n.notes = append(n.notes, ev.S)
			_ = n.probe.Tell(ctx.LastSequenceNr())
			if first && m.mode != "defer" {
				first = false
				n.snapshot(ctx) // covers a only
			}
		}
		switch m.mode {
		case "all":
			_ = persistence.PersistAll(ctx, evs, handler)
		case "all-async":
			_ = persistence.PersistAllAsync(ctx, evs, handler)
		case "async":
			for _, ev := range evs {
				_ = persistence.PersistAsync(ctx, ev, handler)
			}
		case "defer":
			_ = persistence.PersistAsync(ctx, evs[0], handler)
			ctx.Defer(func() { n.snapshot(ctx) }) // runs after a's handler, before b's
			_ = persistence.PersistAsync(ctx, evs[1], handler)
			_ = persistence.PersistAsync(ctx, evs[2], handler)
		}
	case note:
		_ = persistence.Persist(ctx, Noted{m.s}, func(ev Noted) {
			n.notes = append(n.notes, ev.S)
			ctx.Respond(ctx.LastSequenceNr())
		})
	case snapNow:
		n.snapshot(ctx)
	case seqQuery:
		ctx.Respond(ctx.LastSequenceNr())
	case persistence.SaveSnapshotSuccess:
		_ = n.probe.Tell(m)
	}
}

func notebookRegistry(t *testing.T) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := serialization.Register[Noted](reg, "test.Noted"); err != nil {
		t.Fatal(err)
	}
	if err := serialization.Register[Notes](reg, "test.Notes"); err != nil {
		t.Fatal(err)
	}
	return reg
}

func notebookProps(id string, probe *testkit.Probe) *actor.Props {
	return persistence.Props(func() persistence.Entity { return &notebook{id: id, probe: probe.Ref()} })
}

// Each handler of a batch sees its own event's sequence number, so a snapshot saved
// in the first handler (or in a deferred call after it) covers only the first event,
// and a new incarnation recovers all three. The runtime used to report the end of the
// batch (3, 3, 3): the snapshot claimed events 2 and 3, and recovery lost them.
func TestSnapshotInsideABatchCoversOnlyTheEventsHandled(t *testing.T) {
	for _, mode := range []string{"all", "all-async", "async", "defer"} {
		t.Run(mode, func(t *testing.T) {
			sys := testkit.NewSystem(t)
			store := memjournal.New()
			t.Cleanup(func() { _ = store.Close() })
			if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: notebookRegistry(t)}); err != nil {
				t.Fatal(err)
			}
			probe := testkit.NewProbe(t, sys)
			ref, _ := sys.Spawn(notebookProps("nb", probe), "nb")
			probe.ExpectMsg([]string(nil))
			_ = ref.Tell(noteBatch{mode: mode})
			var seqs []uint64
			var snap persistence.SaveSnapshotSuccess
			for len(seqs) < 3 || snap.Metadata.SequenceNr == 0 {
				switch m := probe.FishForMessage(func(any) bool { return true }).(type) {
				case uint64:
					seqs = append(seqs, m)
				case persistence.SaveSnapshotSuccess:
					snap = m
				}
			}
			if !slices.Equal(seqs, []uint64{1, 2, 3}) || snap.Metadata.SequenceNr != 1 {
				t.Fatalf("handlers saw %v, snapshot at %d; want [1 2 3] and 1", seqs, snap.Metadata.SequenceNr)
			}
			stopAndWait(sys, probe, ref)
			if _, err := sys.Spawn(notebookProps("nb", probe), "nb2"); err != nil {
				t.Fatal(err)
			}
			probe.ExpectMsg([]string{"a", "b", "c"})
		})
	}
}

// holdingJournal holds every write until release is closed.
type holdingJournal struct {
	persistence.Journal
	release chan struct{}
}

func (h *holdingJournal) WriteMessages(ctx context.Context, w []persistence.AtomicWrite) ([]error, error) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Journal.WriteMessages(ctx, w)
}

// A command handled while an async batch is in flight sees only the events handled so
// far; a snapshot it saves covers those, and recovery still finds the batch. The
// runtime used to count the batch as soon as it was persisted: the snapshot claimed
// events whose handlers had not run, and recovery lost them.
func TestCommandDuringAsyncBatchSeesOnlyHandledEvents(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	held := &holdingJournal{Journal: store, release: make(chan struct{})}
	if _, err := persistence.Start(sys, persistence.Config{Journal: held, Snapshots: store, Registry: notebookRegistry(t)}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(notebookProps("nb", probe), "nb")
	probe.ExpectMsg([]string(nil))

	_ = ref.Tell(noteBatch{mode: "all-async"}) // its write is held
	probe.Send(ref, seqQuery{})
	probe.ExpectMsg(uint64(0))
	_ = ref.Tell(snapNow{})
	if s := testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe); s.Metadata.SequenceNr != 0 {
		t.Fatalf("a snapshot of no handled event claims %d", s.Metadata.SequenceNr)
	}
	close(held.release)
	for _, m := range probe.ReceiveN(4) { // 1, 2, 3 and the first handler's snapshot
		if s, ok := m.(persistence.SaveSnapshotSuccess); ok && s.Metadata.SequenceNr != 1 {
			t.Fatalf("snapshot in the first handler at %d", s.Metadata.SequenceNr)
		}
	}
	stopAndWait(sys, probe, ref)
	if _, err := sys.Spawn(notebookProps("nb", probe), "nb2"); err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg([]string{"a", "b", "c"})
}

// A command stashed behind a stashing batch is handled after every handler of the
// batch, and sees the batch's last number; an entity that stashes and unstashes
// commands itself inside a handler gets the same.
func TestStashedCommandSeesTheWholeBatch(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	held := &holdingJournal{Journal: store, release: make(chan struct{})}
	if _, err := persistence.Start(sys, persistence.Config{Journal: held, Snapshots: store, Registry: notebookRegistry(t)}); err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &selfStasher{notebook: notebook{id: "st", probe: probe.Ref()}}
	}), "st")
	probe.ExpectMsg([]string(nil))
	_ = ref.Tell(noteBatch{mode: "all"})
	probe.Send(ref, seqQuery{}) // stashed by the runtime
	_ = ref.Tell("later")       // stashed by the runtime, then by the entity itself
	close(held.release)
	got := probe.ReceiveN(6)
	// The handlers report 1, 2, 3 and snapshot at 1; then the query and the entity's
	// own unstashed command see 3.
	want := []any{uint64(1), uint64(2), uint64(3), uint64(3), "later:3"}
	var nums []any
	for _, m := range got {
		if _, ok := m.(persistence.SaveSnapshotSuccess); !ok {
			nums = append(nums, m)
		}
	}
	if len(nums) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if nums[i] != want[i] {
			t.Fatalf("got %v, want %v", nums, want)
		}
	}
}

// selfStasher stashes "later" itself until the handler of the event c has run.
type selfStasher struct {
	notebook
	seenC bool
}

func (s *selfStasher) Receive(ctx persistence.Context) {
	if m, ok := ctx.Message().(string); ok && m == "later" {
		if !s.seenC {
			_ = ctx.Stash()
			return
		}
		_ = s.probe.Tell(m + ":" + strconv.FormatUint(ctx.LastSequenceNr(), 10))
		return
	}
	if _, ok := ctx.Message().(noteBatch); ok {
		_ = persistence.PersistAll(ctx, []Noted{{"a"}, {"b"}, {"c"}}, func(ev Noted) {
			s.notes = append(s.notes, ev.S)
			_ = s.probe.Tell(ctx.LastSequenceNr())
			if ev.S == "a" {
				s.snapshot(ctx)
			}
			if ev.S == "c" {
				s.seenC = true
				ctx.UnstashAll()
			}
		})
		return
	}
	s.notebook.Receive(ctx)
}
