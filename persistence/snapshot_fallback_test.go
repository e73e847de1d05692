package persistence_test

import (
	"context"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
)

// garbledLatest is a snapshot store whose latest snapshot of every
// persistence id does not decode: its payload is garbage, as after a change
// of the state's type or a bug in a plug-in that checks no checksums.
type garbledLatest struct {
	persistence.SnapshotStore
}

func (g garbledLatest) LoadSnapshot(ctx context.Context, pid string, c persistence.SnapshotCriteria) (persistence.Snapshot, bool, error) {
	s, ok, err := g.SnapshotStore.LoadSnapshot(ctx, pid, c)
	if ok && c.MaxSequenceNr == 0 {
		s.Payload = []byte{0xc1, 0xc1, 0xc1} // not msgpack
	}
	return s, ok, err
}

// snapshotsAt builds a counter with snapshots after its 2nd and 4th events
// and one more event, then stops it. The value is 1+2+3+4+5 = 15.
func snapshotsAt(t *testing.T, sys *actor.System, probe *testkit.Probe, id string) {
	t.Helper()
	ref, _ := sys.Spawn(counterProps(id, probe), id)
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	sum := 0
	for by := 1; by <= 5; by++ {
		probe.Send(ref, increment{by: by})
		sum += by
		probe.ExpectMsg(sum)
		if by == 2 || by == 4 {
			_ = ref.Tell(snap{})
			testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe)
		}
	}
	stopAndWait(sys, probe, ref)
}

// A corrupt latest snapshot is skipped for the older one, and the events
// after that are replayed.
func TestCorruptSnapshotFallsBackToOlder(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	snapshotsAt(t, sys, probe, "fallback")
	if err := store.CorruptSnapshot("fallback", 4); err != nil {
		t.Fatal(err)
	}
	// Events 1 and 2 are covered by the older snapshot: damage one, so that a
	// full replay would fail and only the fallback to the snapshot at 2 works.
	if err := store.CorruptEvent("fallback", 1); err != nil {
		t.Fatal(err)
	}
	again, _ := sys.Spawn(counterProps("fallback", probe), "again")
	probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 5})
	probe.Send(again, get{})
	probe.ExpectMsg(15)
}

// A latest snapshot that does not decode is skipped the same way.
func TestUndecodableSnapshotFallsBackToOlder(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	snapshotsAt(t, sys, probe, "garbled")

	sys2 := testkit.NewSystem(t)
	reg := registry(t)
	if _, err := persistence.Start(sys2, persistence.Config{Journal: store, Snapshots: garbledLatest{store}, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	probe2 := testkit.NewProbe(t, sys2)
	again, _ := sys2.Spawn(counterProps("garbled", probe2), "again")
	probe2.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 5})
	probe2.Send(again, get{})
	probe2.ExpectMsg(15)
}

// Without an older snapshot the entity replays every event; when the events
// the snapshot covered are deleted that cannot rebuild the state, and the
// recovery fails instead of starting from a wrong one.
func TestUnusableSnapshotWithDeletedEventsStopsTheEntity(t *testing.T) {
	sys := testkit.NewSystem(t)
	store := setup(t, sys)
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("nofallback", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Send(ref, increment{by: 1})
	probe.ExpectMsg(1)
	probe.Send(ref, increment{by: 2})
	probe.ExpectMsg(3)
	_ = ref.Tell(snap{})
	testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe)
	_ = ref.Tell(deleteTo{seq: 2})
	testkit.ExpectMsgType[persistence.DeleteMessagesSuccess](probe)
	stopAndWait(sys, probe, ref)

	// Only the snapshot held the state, and it is damaged.
	if err := store.CorruptSnapshot("nofallback", 2); err != nil {
		t.Fatal(err)
	}
	again, _ := sys.Spawn(counterProps("nofallback", probe), "again")
	probe.Watch(again)
	probe.ExpectTerminated(again)

	// With events left after the lost ones, the gap is detected too.
	if err := store.DeleteSnapshots(context.Background(), "nofallback", persistence.SnapshotCriteria{}); err != nil {
		t.Fatal(err)
	}
	_, err := store.WriteMessages(context.Background(), []persistence.AtomicWrite{{PersistenceID: "nofallback", Events: []persistence.Record{
		{PersistenceID: "nofallback", SequenceNr: 3, Manifest: "test.Incremented", Payload: []byte{0x81, 0xa2, 'B', 'y', 0x01}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SaveSnapshot(context.Background(), persistence.Snapshot{
		Metadata: persistence.SnapshotMetadata{PersistenceID: "nofallback", SequenceNr: 2}, Manifest: "test.CounterState", Payload: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	if err := store.CorruptSnapshot("nofallback", 2); err != nil {
		t.Fatal(err)
	}
	third, _ := sys.Spawn(counterProps("nofallback", probe), "third")
	probe.Watch(third)
	probe.ExpectTerminated(third)
}
