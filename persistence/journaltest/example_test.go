package journaltest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/journaltest"
	"github.com/troupe-go/troupe/persistence/memjournal"
)

// corruptEvent is what a plug-in's CorruptEvent hook does: damage one stored
// event. The in-memory store offers a method for it; a disk-based plug-in
// flips a byte in its files.
func corruptEvent(t *testing.T, j persistence.Journal, _ string, pid string, seq uint64) persistence.Journal {
	if err := j.(*memjournal.Store).CorruptEvent(pid, seq); err != nil {
		t.Fatal(err)
	}
	return j
}

// This is what the suite's corruption test checks: after the hook has run,
// replay stops at the damaged event with an error that names it.
func Example_corruptionHook() {
	ctx := context.Background()
	j := memjournal.New()
	defer j.Close()
	w := persistence.AtomicWrite{PersistenceID: "account-7"}
	for seq := uint64(1); seq <= 3; seq++ {
		w.Events = append(w.Events, persistence.Record{PersistenceID: "account-7", SequenceNr: seq, Payload: []byte("deposit")})
	}
	if _, err := j.WriteMessages(ctx, []persistence.AtomicWrite{w}); err != nil {
		fmt.Println(err)
		return
	}
	corruptEvent(nil, j, "", "account-7", 2)

	err := j.ReplayMessages(ctx, "account-7", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		fmt.Println("replayed", r.SequenceNr)
		return nil
	})
	var corrupt *persistence.CorruptRecordError
	fmt.Println(errors.As(err, &corrupt), corrupt.PersistenceID, corrupt.SequenceNr)
	// Output:
	// replayed 1
	// true account-7 2
}

func TestSuiteAgainstMemjournal(t *testing.T) {
	opts := journaltest.Options{
		CorruptEvent: corruptEvent,
		CorruptSnapshot: func(t *testing.T, s persistence.SnapshotStore, _ string, pid string, seq uint64) persistence.SnapshotStore {
			if err := s.(*memjournal.Store).CorruptSnapshot(pid, seq); err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	t.Run("Journal", func(t *testing.T) {
		journaltest.RunJournalSuite(t, func(*testing.T, string) persistence.Journal { return memjournal.New() }, opts)
	})
	t.Run("SnapshotStore", func(t *testing.T) {
		journaltest.RunSnapshotSuite(t, func(*testing.T, string) persistence.SnapshotStore { return memjournal.New() }, opts)
	})
}
