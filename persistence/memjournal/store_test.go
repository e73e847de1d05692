package memjournal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/journaltest"
	"github.com/troupe-go/troupe/persistence/memjournal"
)

func suiteOptions() journaltest.Options {
	return journaltest.Options{
		CorruptEvent: func(t *testing.T, j persistence.Journal, _ string, pid string, seq uint64) persistence.Journal {
			if err := j.(*memjournal.Store).CorruptEvent(pid, seq); err != nil {
				t.Fatal(err)
			}
			return j
		},
		CorruptSnapshot: func(t *testing.T, s persistence.SnapshotStore, _ string, pid string, seq uint64) persistence.SnapshotStore {
			if err := s.(*memjournal.Store).CorruptSnapshot(pid, seq); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func TestJournalConformance(t *testing.T) {
	journaltest.RunJournalSuite(t, func(*testing.T, string) persistence.Journal { return memjournal.New() }, suiteOptions())
}

func TestSnapshotStoreConformance(t *testing.T) {
	journaltest.RunSnapshotSuite(t, func(*testing.T, string) persistence.SnapshotStore { return memjournal.New() }, suiteOptions())
}

func TestInjectWriteFailure(t *testing.T) {
	ctx := context.Background()
	s := memjournal.New()
	defer s.Close()
	boom := errors.New("disk on fire")
	s.InjectWriteFailure(boom)
	w := persistence.AtomicWrite{PersistenceID: "a", Events: []persistence.Record{{PersistenceID: "a", SequenceNr: 1}}}
	if _, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w}); !errors.Is(err, boom) {
		t.Fatalf("WriteMessages with an injected failure: %v", err)
	}
	if h, _ := s.HighestSequenceNr(ctx, "a"); h != 0 {
		t.Fatalf("a failed write was stored: highest %d", h)
	}
	s.InjectWriteFailure(nil)
	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w})
	if err != nil || results[0] != nil {
		t.Fatalf("WriteMessages after clearing the failure: %v %v", results, err)
	}
}

func TestCorruptHooksReportMissingRecords(t *testing.T) {
	s := memjournal.New()
	defer s.Close()
	if err := s.CorruptEvent("a", 1); err == nil {
		t.Error("CorruptEvent of a missing event succeeded")
	}
	if err := s.CorruptSnapshot("a", 1); err == nil {
		t.Error("CorruptSnapshot of a missing snapshot succeeded")
	}
}
