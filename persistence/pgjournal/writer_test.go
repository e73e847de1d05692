package pgjournal

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/troupe-go/troupe/persistence"
)

func ev(pid string, seq uint64, tags ...string) persistence.Record {
	return persistence.Record{PersistenceID: pid, SequenceNr: seq, Manifest: "test.Event",
		Payload: fmt.Appendf(nil, "%s#%d", pid, seq), Tags: tags}
}

func aw(pid string, from, to uint64) persistence.AtomicWrite {
	w := persistence.AtomicWrite{PersistenceID: pid}
	for seq := from; seq <= to; seq++ {
		w.Events = append(w.Events, ev(pid, seq))
	}
	return w
}

func seqsOf(t *testing.T, s *Store, pid string) []uint64 {
	t.Helper()
	var seqs []uint64
	err := s.ReplayMessages(testContext(t), pid, 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		if string(r.Payload) != fmt.Sprintf("%s#%d", pid, r.SequenceNr) {
			return fmt.Errorf("%q #%d: payload %q", pid, r.SequenceNr, r.Payload)
		}
		seqs = append(seqs, r.SequenceNr)
		return nil
	})
	if err != nil {
		t.Fatalf("replay %q: %v", pid, err)
	}
	return seqs
}

func span(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// TestGroupCommit: the writes of many concurrent callers, queued while the
// writer is busy, share one transaction.
func TestGroupCommit(t *testing.T) {
	const callers = 100
	s, _ := openFresh(t, func(c *setup) { c.WriteConcurrency = 1 })
	ctx := testContext(t)
	// Occupy the one commit slot until every caller has queued.
	s.w.slots <- struct{}{}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw(fmt.Sprintf("g%d", i), 1, 2)})
			if err == nil {
				err = res[0]
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	for {
		s.w.mu.Lock()
		n := len(s.w.queue)
		s.w.mu.Unlock()
		if n == callers {
			break
		}
		runtime.Gosched()
	}
	<-s.w.slots
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Commits != 1 || st.Writes != callers || st.Events != 2*callers {
		t.Errorf("stats %+v, want 1 commit of %d writes and %d events", st, callers, 2*callers)
	}
	for i := range callers {
		if got := seqsOf(t, s, fmt.Sprintf("g%d", i)); !slices.Equal(got, span(1, 2)) {
			t.Errorf("g%d: %v", i, got)
		}
	}
}

// TestBatchAllOrNothing: when a statement of a group commit fails, the
// whole transaction rolls back, the statements before it included, and
// every writer of the batch learns that the outcome is unknown.
func TestBatchAllOrNothing(t *testing.T) {
	s, cfg := openFresh(t, func(c *setup) { c.chunkEvents = 1 })
	ctx := testContext(t)
	// A trigger rejects the events of "poison", which sort after "a" and
	// "b" and so go to the last statement.
	execIn(t, cfg.Schema, `CREATE FUNCTION reject_poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.persistence_id = 'poison'::bytea THEN RAISE EXCEPTION 'poisoned'; END IF;
			RETURN NEW;
		END $$`)
	execIn(t, cfg.Schema, `CREATE TRIGGER reject_poison BEFORE INSERT ON troupe_event FOR EACH ROW EXECUTE FUNCTION reject_poison()`)

	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw("poison", 1, 1), aw("a", 1, 1), aw("b", 1, 2)})
	if err == nil || results != nil {
		t.Fatalf("WriteMessages = %v, %v; want a failure of the call", results, err)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a statement error is reported as %v", err)
	}
	for _, pid := range []string{"a", "b", "poison"} {
		if h, err := s.HighestSequenceNr(ctx, pid); err != nil || h != 0 {
			t.Errorf("HighestSequenceNr(%q) = %d, %v after a failed batch, want 0", pid, h, err)
		}
		if got := seqsOf(t, s, pid); len(got) != 0 {
			t.Errorf("%q kept %v after a failed batch", pid, got)
		}
	}
	if st := s.Stats(); st.FailedCommits != 1 || st.Commits != 0 {
		t.Errorf("stats %+v, want one failed commit", st)
	}
	// The store goes on.
	results, err = s.WriteMessages(ctx, []persistence.AtomicWrite{aw("a", 1, 1)})
	if err != nil || results[0] != nil {
		t.Fatalf("write after a failed batch: %v, %v", results, err)
	}
}

// TestRounds: several writes of one persistence id in one call are applied
// in order, across statements; a conflict rejects the write and the later
// writes of its persistence id in the call, whose rows the store removes
// before it commits.
func TestRounds(t *testing.T) {
	for _, chunk := range []int{1, 3, 0} {
		t.Run(fmt.Sprintf("chunkEvents=%d", chunk), func(t *testing.T) {
			s, _ := openFresh(t, func(c *setup) { c.chunkEvents = chunk })
			ctx := testContext(t)
			writes := []persistence.AtomicWrite{
				aw("x", 1, 2), aw("y", 1, 1), aw("x", 3, 3), aw("x", 2, 3), aw("z", 5, 6),
				aw("x", 4, 6), aw("y", 2, 2), aw("z", 6, 6), aw("z", 7, 7),
			}
			for i := range writes {
				for k := range writes[i].Events {
					writes[i].Events[k].Tags = []string{"rounds"}
				}
			}
			c := persistence.ErrSequenceConflict
			want := []error{nil, nil, nil, c, nil, c, nil, c, c}
			results, err := s.WriteMessages(ctx, writes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range writes {
				if !errors.Is(results[i], want[i]) || (want[i] == nil) != (results[i] == nil) {
					t.Errorf("write %d (%q %d..): %v, want %v", i, writes[i].PersistenceID, writes[i].Events[0].SequenceNr, results[i], want[i])
				}
			}
			for pid, want := range map[string][]uint64{"x": span(1, 3), "y": span(1, 2), "z": {5, 6}} {
				if got := seqsOf(t, s, pid); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", pid, got, want)
				}
			}
			if st := s.Stats(); st.Conflicts != 4 || st.Writes != 5 {
				t.Errorf("stats %+v, want 5 writes and 4 conflicts", st)
			}
			// The tag rows of the writes after a conflict are gone too.
			var tagged []string
			if err := s.EventsByTag(ctx, "rounds", 0, 0, func(tr persistence.TaggedRecord) error {
				tagged = append(tagged, fmt.Sprintf("%s%d", tr.Record.PersistenceID, tr.Record.SequenceNr))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(tagged)
			if want := []string{"x1", "x2", "x3", "y1", "y2", "z5", "z6"}; !slices.Equal(tagged, want) {
				t.Errorf("events by tag %v, want %v", tagged, want)
			}
		})
	}
}

// TestLimits: writes the store cannot hold are rejected alone.
func TestLimits(t *testing.T) {
	s, _ := openFresh(t, func(c *setup) { c.MaxWriteBytes = 1 << 10 })
	ctx := testContext(t)
	big := aw("big", 1, 1)
	big.Events[0].Payload = make([]byte, 2<<10)
	longTag := aw("tagged", 1, 1)
	longTag.Events[0].Tags = []string{string(make([]byte, MaxTagLen+1))}
	longID := string(make([]byte, MaxPersistenceIDLen+1))
	huge := aw("huge", 1<<63, 1<<63)
	writes := []persistence.AtomicWrite{big, aw("ok", 1, 1), longTag, aw(longID, 1, 1), huge}
	want := []error{persistence.ErrTooLarge, nil, persistence.ErrInvalidWrite, persistence.ErrInvalidWrite, persistence.ErrInvalidWrite}
	results, err := s.WriteMessages(ctx, writes)
	if err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		if !errors.Is(results[i], want[i]) || (want[i] == nil) != (results[i] == nil) {
			t.Errorf("write %d: %v, want %v", i, results[i], want[i])
		}
	}
	if err := s.SaveSnapshot(ctx, persistence.Snapshot{Metadata: persistence.SnapshotMetadata{PersistenceID: "big", SequenceNr: 1},
		Payload: make([]byte, 2<<10)}); !errors.Is(err, persistence.ErrTooLarge) {
		t.Errorf("SaveSnapshot of 2 KiB with a limit of 1 KiB: %v", err)
	}
}

// TestTags: tags come back as written, a tag repeated on one event is
// indexed once, and events with no tags have none.
func TestTags(t *testing.T) {
	s, _ := openFresh(t, nil)
	ctx := testContext(t)
	w := persistence.AtomicWrite{PersistenceID: "t", Events: []persistence.Record{
		ev("t", 1, "red", "red", ""), ev("t", 2), ev("t", 3, "blue\x00\xff"),
	}}
	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w})
	if err != nil || results[0] != nil {
		t.Fatalf("WriteMessages: %v, %v", results, err)
	}
	var tags [][]string
	err = s.ReplayMessages(ctx, "t", 0, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		tags = append(tags, r.Tags)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 3 || !slices.Equal(tags[0], []string{"red", "red", ""}) || tags[1] != nil || !slices.Equal(tags[2], []string{"blue\x00\xff"}) {
		t.Errorf("replayed tags %q", tags)
	}
	for tag, want := range map[string][]uint64{"red": {1}, "": {1}, "blue\x00\xff": {3}} {
		var got []uint64
		if err := s.EventsByTag(ctx, tag, 0, 0, func(tr persistence.TaggedRecord) error {
			got = append(got, tr.Record.SequenceNr)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("EventsByTag(%q) = %v, want %v", tag, got, want)
		}
	}
}

// TestCorruptTags: a damaged tags column fails the replay like a damaged
// payload does, naming the event.
func TestCorruptTags(t *testing.T) {
	s, cfg := openFresh(t, nil)
	ctx := testContext(t)
	w := persistence.AtomicWrite{PersistenceID: "ct", Events: []persistence.Record{ev("ct", 1, "a"), ev("ct", 2, "b")}}
	if res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	execIn(t, cfg.Schema, `UPDATE troupe_event SET tags = '\x05'::bytea WHERE sequence_nr = 2`)
	var seen []uint64
	err := s.ReplayMessages(ctx, "ct", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		seen = append(seen, r.SequenceNr)
		return nil
	})
	var corrupt *persistence.CorruptRecordError
	if !errors.As(err, &corrupt) || corrupt.PersistenceID != "ct" || corrupt.SequenceNr != 2 {
		t.Fatalf("replay over a damaged tags column: %v", err)
	}
	if !slices.Equal(seen, []uint64{1}) {
		t.Errorf("delivered %v before the damaged event", seen)
	}
	err = s.EventsByTag(ctx, "b", 0, 0, func(persistence.TaggedRecord) error { return nil })
	if !errors.As(err, &corrupt) || corrupt.SequenceNr != 2 {
		t.Errorf("EventsByTag over a damaged event: %v", err)
	}
}
