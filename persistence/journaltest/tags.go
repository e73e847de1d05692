package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/troupe-go/troupe/persistence"
)

// The tag part of the journal suite runs for journals that implement
// persistence.TagQuerier, and is skipped for the others.

// querier returns j as a TagQuerier, or skips the test.
func querier(t *testing.T, j persistence.Journal) persistence.TagQuerier {
	t.Helper()
	q, ok := j.(persistence.TagQuerier)
	if !ok {
		t.Skip("the journal does not implement persistence.TagQuerier")
	}
	return q
}

// tagged returns an event of pid and seq with tags.
func tagged(pid string, seq uint64, tags ...string) persistence.Record {
	e := event(pid, seq)
	e.Tags = tags
	return e
}

// one returns an atomic write of the given events of one persistence id.
func one(events ...persistence.Record) persistence.AtomicWrite {
	return persistence.AtomicWrite{PersistenceID: events[0].PersistenceID, Events: events}
}

// byTag collects what EventsByTag delivers, checking that offsets grow and
// that payloads are intact.
func byTag(t *testing.T, ctx context.Context, q persistence.TagQuerier, tag string, from, max uint64) []persistence.TaggedRecord {
	t.Helper()
	var got []persistence.TaggedRecord
	err := q.EventsByTag(ctx, tag, from, max, func(tr persistence.TaggedRecord) error {
		if len(got) > 0 && tr.Offset <= got[len(got)-1].Offset {
			return fmt.Errorf("offset %d after %d", tr.Offset, got[len(got)-1].Offset)
		}
		if tr.Offset < from {
			return fmt.Errorf("offset %d below fromOffset %d", tr.Offset, from)
		}
		if !bytes.Equal(tr.Record.Payload, payloadFor(tr.Record.PersistenceID, tr.Record.SequenceNr)) {
			return fmt.Errorf("%q #%d: payload %q", tr.Record.PersistenceID, tr.Record.SequenceNr, tr.Record.Payload)
		}
		if !slices.Contains(tr.Record.Tags, tag) {
			return fmt.Errorf("%q #%d has tags %q, not %q", tr.Record.PersistenceID, tr.Record.SequenceNr, tr.Record.Tags, tag)
		}
		got = append(got, tr)
		return nil
	})
	if err != nil {
		t.Fatalf("EventsByTag(%q, %d, %d): %v", tag, from, max, err)
	}
	return got
}

// names renders tagged records as "pid#seq" for comparisons.
func names(trs []persistence.TaggedRecord) []string {
	var s []string
	for _, tr := range trs {
		s = append(s, fmt.Sprintf("%s#%d", tr.Record.PersistenceID, tr.Record.SequenceNr))
	}
	return s
}

func expectTag(t *testing.T, ctx context.Context, q persistence.TagQuerier, tag string, want ...string) []persistence.TaggedRecord {
	t.Helper()
	got := byTag(t, ctx, q, tag, 0, 0)
	if !slices.Equal(names(got), want) {
		t.Errorf("EventsByTag(%q) = %v, want %v", tag, names(got), want)
	}
	return got
}

// writeTagged writes the history the tag tests query: tagged and untagged
// events of three persistence ids, over several calls.
func writeTagged(t *testing.T, ctx context.Context, j persistence.Journal) {
	t.Helper()
	mustWrite(t, ctx, j, one(tagged("a", 1, "red"), event("a", 2), tagged("a", 3, "red", "blue")))
	mustWrite(t, ctx, j, one(tagged("b", 1, "blue")), one(tagged("c", 1, "red")))
	mustWrite(t, ctx, j, one(tagged("b", 2, "red")), one(tagged("a", 4, "red")))
}

// testTagOrder: events come back by tag in the order they were written,
// across persistence ids and calls; an event with two tags is found under
// both; untagged events and unknown tags yield nothing.
func (s *journalSuite) testTagOrder(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	q := querier(t, j)
	writeTagged(t, ctx, j)
	expectTag(t, ctx, q, "red", "a#1", "a#3", "c#1", "b#2", "a#4")
	expectTag(t, ctx, q, "blue", "a#3", "b#1")
	expectTag(t, ctx, q, "green")
	expectTag(t, ctx, q, "")
}

// testTagResume: reading a few at a time, from the last offset plus one,
// gives the same events as reading them all; later writes come after.
func (s *journalSuite) testTagResume(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	q := querier(t, j)
	writeTagged(t, ctx, j)
	all := byTag(t, ctx, q, "red", 0, 0)
	var pieces []persistence.TaggedRecord
	from := uint64(0)
	for {
		got := byTag(t, ctx, q, "red", from, 2)
		if len(got) > 2 {
			t.Fatalf("max 2 delivered %d events", len(got))
		}
		if len(got) == 0 {
			break
		}
		pieces = append(pieces, got...)
		from = got[len(got)-1].Offset + 1
	}
	if !slices.Equal(names(pieces), names(all)) {
		t.Errorf("read two at a time: %v, at once: %v", names(pieces), names(all))
	}
	mustWrite(t, ctx, j, one(tagged("c", 2, "red")))
	if got := byTag(t, ctx, q, "red", from, 0); !slices.Equal(names(got), []string{"c#2"}) {
		t.Errorf("after the last offset: %v, want [c#2]", names(got))
	}
}

// testTagDeletes: deleted events are skipped; the others stay.
func (s *journalSuite) testTagDeletes(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	q := querier(t, j)
	writeTagged(t, ctx, j)
	if err := j.DeleteMessagesTo(ctx, "a", 3); err != nil {
		t.Fatal(err)
	}
	expectTag(t, ctx, q, "red", "c#1", "b#2", "a#4")
	expectTag(t, ctx, q, "blue", "b#1")
}

// testTagReopen: the tag index survives a reopen, and events written after
// it come after the earlier ones.
func (s *journalSuite) testTagReopen(t *testing.T) {
	if !s.opts.Durable {
		t.Skip("the plug-in is not durable")
	}
	ctx := s.opts.context(t)
	dir := t.TempDir()
	j := s.open(t, dir)
	querier(t, j)
	writeTagged(t, ctx, j)
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	j = s.open(t, dir)
	defer j.Close()
	q := querier(t, j)
	mustWrite(t, ctx, j, one(tagged("d", 1, "red")), one(tagged("a", 5, "red")))
	expectTag(t, ctx, q, "red", "a#1", "a#3", "c#1", "b#2", "a#4", "d#1", "a#5")
}

// testTagConcurrent: concurrent writers of tagged events; each persistence
// id's events come back in sequence order and none is missing.
func (s *journalSuite) testTagConcurrent(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	q := querier(t, j)
	writers := s.opts.writers()
	const each = 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := fmt.Sprintf("w%d", g)
			for seq := uint64(1); seq <= each; seq++ {
				results, err := j.WriteMessages(ctx, []persistence.AtomicWrite{one(tagged(pid, seq, "all"))})
				if err == nil {
					err = results[0]
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	next := map[string]uint64{}
	got := byTag(t, ctx, q, "all", 0, 0)
	for _, tr := range got {
		pid := tr.Record.PersistenceID
		if next[pid]++; tr.Record.SequenceNr != next[pid] {
			t.Fatalf("%s: #%d after #%d", pid, tr.Record.SequenceNr, next[pid]-1)
		}
	}
	if len(got) != writers*each {
		t.Errorf("%d events by tag, want %d", len(got), writers*each)
	}
}

// testTagClosed: EventsByTag after Close fails with ErrClosed, and with a
// cancelled context it fails with the context's error.
func (s *journalSuite) testTagClosed(t *testing.T) {
	ctx := s.opts.context(t)
	j := s.open(t, t.TempDir())
	q := querier(t, j)
	writeTagged(t, ctx, j)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.EventsByTag(cancelled, "red", 0, 0, func(persistence.TaggedRecord) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("EventsByTag with a cancelled context: %v", err)
	}
	stop := errors.New("stop")
	if err := q.EventsByTag(ctx, "red", 0, 0, func(persistence.TaggedRecord) error { return stop }); err != stop {
		t.Errorf("EventsByTag returned %v, want fn's error", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.EventsByTag(ctx, "red", 0, 0, func(persistence.TaggedRecord) error { return nil }); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("EventsByTag after Close: %v, want ErrClosed", err)
	}
}
