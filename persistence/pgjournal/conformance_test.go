package pgjournal

import (
	"testing"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/journaltest"
)

// suiteOptions damage rows by hand, as a failing disk or a careless
// operator would: one byte of the payload flipped.
func suiteOptions() journaltest.Options {
	return journaltest.Options{
		Durable:       true,
		SharedStorage: true,
		Writers:       20,
		CorruptEvent: func(t *testing.T, j persistence.Journal, _, pid string, seq uint64) persistence.Journal {
			s := j.(*Store)
			n := execIn(t, s.cfg.Schema, `UPDATE troupe_event SET payload = set_byte(payload, 0, get_byte(payload, 0) # 32)
				WHERE persistence_id = $1 AND sequence_nr = $2`, []byte(pid), int64(seq))
			if n != 1 {
				t.Fatalf("damaged %d rows of %q #%d, want 1", n, pid, seq)
			}
			return j
		},
		CorruptSnapshot: func(t *testing.T, st persistence.SnapshotStore, _, pid string, seq uint64) persistence.SnapshotStore {
			s := st.(*Store)
			n := execIn(t, s.cfg.Schema, `UPDATE troupe_snapshot SET payload = set_byte(payload, 0, get_byte(payload, 0) # 32)
				WHERE persistence_id = $1 AND sequence_nr = $2`, []byte(pid), int64(seq))
			if n != 1 {
				t.Fatalf("damaged %d snapshot rows of %q #%d, want 1", n, pid, seq)
			}
			return st
		},
	}
}

// openForSuite opens a store whose schema is named after the suite's
// folder, so that reopening the folder finds the data again.
func openForSuite(edit func(*setup)) func(t *testing.T, dir string) *Store {
	return func(t *testing.T, dir string) *Store {
		cfg := setup{Config: testConfig(schemaForDir(t, dir))}
		if edit != nil {
			edit(&cfg)
		}
		s, err := open(testContext(t), cfg.Config, cfg.tuning)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}
}

func TestJournalConformance(t *testing.T) {
	open := openForSuite(nil)
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal { return open(t, dir) }, suiteOptions())
}

// TestJournalConformanceSmall runs the suite with every size at its
// smallest: replays and tag queries read two rows per page, each call is a
// batch of its own, and each statement holds one event, so that every
// boundary is crossed.
func TestJournalConformanceSmall(t *testing.T) {
	open := openForSuite(func(c *setup) {
		c.ReplayPageSize = 2
		c.MaxBatchBytes = 1
		c.WriteConcurrency = 3
		c.chunkEvents = 1
	})
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal { return open(t, dir) }, suiteOptions())
}

// TestJournalConformanceCopy runs the suite with the fast path sending
// every batch's events by COPY, and TestJournalConformanceNoCopy never.
func TestJournalConformanceCopy(t *testing.T) {
	open := openForSuite(func(c *setup) { c.copyMinEvents = 1 })
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal { return open(t, dir) }, suiteOptions())
}

func TestJournalConformanceNoCopy(t *testing.T) {
	open := openForSuite(func(c *setup) { c.copyMinEvents = -1 })
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal { return open(t, dir) }, suiteOptions())
}

func TestSnapshotConformance(t *testing.T) {
	open := openForSuite(nil)
	journaltest.RunSnapshotSuite(t, func(t *testing.T, dir string) persistence.SnapshotStore { return open(t, dir) }, suiteOptions())
}
