package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// RunJournalSuite runs the conformance tests for journals as subtests of t.
// Each subtest opens its own journal in a fresh directory and closes it.
// The subtests run in parallel.
func RunJournalSuite(t *testing.T, open OpenJournal, opts Options) {
	s := &journalSuite{open: open, opts: opts}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Ordering", s.testOrdering},
		{"AtomicWrites", s.testAtomicWrites},
		{"ReplayBounds", s.testReplayBounds},
		{"ReplayStops", s.testReplayStops},
		{"HighestSurvivesDeletes", s.testHighestSurvivesDeletes},
		{"DeleteBeyondHighest", s.testDeleteBeyondHighest},
		{"PersistenceIDs", s.testPersistenceIDs},
		{"ConcurrentWriters", s.testConcurrentWriters},
		{"LargePayloads", s.testLargePayloads},
		{"Reopen", s.testReopen},
		{"CorruptRecord", s.testCorruptRecord},
		{"Closed", s.testClosed},
		{"CancelledContext", s.testCancelledContext},
		{"Conflicts", s.testConflicts},
		{"RacingWriters", s.testRacingWriters},
		{"WriteIntoAGap", s.testWriteIntoAGap},
		{"TwoIncarnations", s.testTwoIncarnations},
		// Optional: journals that implement persistence.TagQuerier.
		{"TagOrder", s.testTagOrder},
		{"TagResume", s.testTagResume},
		{"TagDeletes", s.testTagDeletes},
		{"TagReopen", s.testTagReopen},
		{"TagConcurrent", s.testTagConcurrent},
		{"TagClosed", s.testTagClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type journalSuite struct {
	open OpenJournal
	opts Options
}

// openFresh opens a journal in a new directory and closes it when the test
// ends.
func (s *journalSuite) openFresh(t *testing.T) (persistence.Journal, string) {
	dir := t.TempDir()
	j := s.open(t, dir)
	t.Cleanup(func() {
		if err := j.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return j, dir
}

// openSecond returns a second journal on the storage of j, open in dir,
// closed when the test ends, when the plug-in's storage is shared; else j.
func (s *journalSuite) openSecond(t *testing.T, j persistence.Journal, dir string) persistence.Journal {
	if !s.opts.SharedStorage {
		return j
	}
	j2 := s.open(t, dir)
	t.Cleanup(func() {
		if err := j2.Close(); err != nil {
			t.Errorf("Close of the second journal: %v", err)
		}
	})
	return j2
}

// mustWrite writes and fails the test on any error.
func mustWrite(t *testing.T, ctx context.Context, j persistence.Journal, writes ...persistence.AtomicWrite) {
	t.Helper()
	results, err := j.WriteMessages(ctx, writes)
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	if len(results) != len(writes) {
		t.Fatalf("WriteMessages returned %d results for %d writes", len(results), len(writes))
	}
	for i, err := range results {
		if err != nil {
			t.Fatalf("WriteMessages: write %d (%q): %v", i, writes[i].PersistenceID, err)
		}
	}
}

// replay collects the records a replay delivers.
func replay(t *testing.T, ctx context.Context, j persistence.Journal, pid string, from, to, max uint64) []persistence.Record {
	t.Helper()
	var got []persistence.Record
	if err := j.ReplayMessages(ctx, pid, from, to, max, func(r persistence.Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatalf("ReplayMessages(%q, %d, %d, %d): %v", pid, from, to, max, err)
	}
	return got
}

// expectSeqs replays pid from..to and checks the sequence numbers and
// payloads delivered.
func expectSeqs(t *testing.T, ctx context.Context, j persistence.Journal, pid string, from, to, max uint64, want []uint64) {
	t.Helper()
	got := replay(t, ctx, j, pid, from, to, max)
	var seqs []uint64
	for _, r := range got {
		seqs = append(seqs, r.SequenceNr)
		if r.PersistenceID != pid {
			t.Errorf("replay of %q delivered a record of %q", pid, r.PersistenceID)
		}
		if !bytes.Equal(r.Payload, payloadFor(pid, r.SequenceNr)) {
			t.Errorf("replay of %q #%d: payload %q", pid, r.SequenceNr, r.Payload)
		}
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("replay(%q, %d, %d, max %d) = %v, want %v", pid, from, to, max, seqs, want)
	}
}

func expectHighest(t *testing.T, ctx context.Context, j persistence.Journal, pid string, want uint64) {
	t.Helper()
	got, err := j.HighestSequenceNr(ctx, pid)
	if err != nil {
		t.Fatalf("HighestSequenceNr(%q): %v", pid, err)
	}
	if got != want {
		t.Errorf("HighestSequenceNr(%q) = %d, want %d", pid, got, want)
	}
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// testOrdering: events come back in sequence order with every field intact.
func (s *journalSuite) testOrdering(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	const pid = "ordering"
	stamp := time.Date(2024, 2, 29, 12, 0, 0, 123456789, time.UTC)

	first := event(pid, 1)
	first.Tags = []string{"red", "blue"}
	first.WriterID = "writer-1"
	first.Timestamp = stamp
	empty := event(pid, 2)
	empty.Payload = nil
	empty.Manifest = ""

	before := time.Now()
	mustWrite(t, ctx, j, persistence.AtomicWrite{PersistenceID: pid, Events: []persistence.Record{first}})
	mustWrite(t, ctx, j, persistence.AtomicWrite{PersistenceID: pid, Events: []persistence.Record{empty}}, write(pid, 3, 5))
	for seq := uint64(6); seq <= 10; seq++ {
		mustWrite(t, ctx, j, write(pid, seq, seq))
	}
	after := time.Now()

	got := replay(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0)
	if len(got) != 10 {
		t.Fatalf("replayed %d events, want 10", len(got))
	}
	for i, r := range got {
		if r.SequenceNr != uint64(i+1) {
			t.Fatalf("event %d has sequence number %d", i, r.SequenceNr)
		}
	}
	r := got[0]
	if r.PersistenceID != pid || r.Manifest != first.Manifest || !bytes.Equal(r.Payload, first.Payload) ||
		!slices.Equal(r.Tags, first.Tags) || r.WriterID != "writer-1" || !r.Timestamp.Equal(stamp) {
		t.Errorf("event 1 came back as %+v, want %+v", r, first)
	}
	r = got[1]
	if len(r.Payload) != 0 || r.Manifest != "" || len(r.Tags) != 0 || r.WriterID != "" {
		t.Errorf("empty event 2 came back as %+v", r)
	}
	for _, r := range got[1:] {
		// The journal stamps events written without a timestamp; allow a
		// second of slack for clocks that step.
		if r.Timestamp.Before(before.Add(-time.Second)) || r.Timestamp.After(after.Add(time.Second)) {
			t.Errorf("event %d stamped %v, written between %v and %v", r.SequenceNr, r.Timestamp, before, after)
		}
	}
	expectHighest(t, ctx, j, pid, 10)

	// A replayed record belongs to the caller.
	got[2].Payload[0] ^= 0xff
	expectSeqs(t, ctx, j, pid, 3, 3, 0, []uint64{3})
}

// testAtomicWrites: each atomic write is stored whole or not at all, and a
// rejected write does not affect the others in the call, except that a
// sequence-number conflict rejects the later writes of its persistence id
// (see testConflicts).
func (s *journalSuite) testAtomicWrites(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)

	gap := write("b", 1, 1)
	gap.Events = append(gap.Events, event("b", 3))
	mixed := write("d", 1, 2)
	mixed.Events[1].PersistenceID = "other"
	zero := write("f", 1, 1)
	zero.Events[0].SequenceNr = 0

	writes := []persistence.AtomicWrite{
		write("a", 1, 3),                 // 0: stored
		gap,                              // 1: sequence gap
		write("c", 1, 2),                 // 2: stored
		write("a", 3, 4),                 // 3: reuses #3 of a
		write("a", 4, 5),                 // 4: follows a conflict of a in this call
		mixed,                            // 5: two persistence ids
		{PersistenceID: "", Events: nil}, // 6: empty persistence id
		{PersistenceID: "e"},             // 7: no events
		zero,                             // 8: sequence number 0
		{PersistenceID: "g", Events: write("h", 1, 1).Events}, // 9: event of another id
	}
	want := []error{
		nil, persistence.ErrInvalidWrite, nil, persistence.ErrSequenceConflict, persistence.ErrSequenceConflict,
		persistence.ErrInvalidWrite, persistence.ErrInvalidWrite, persistence.ErrInvalidWrite,
		persistence.ErrInvalidWrite, persistence.ErrInvalidWrite,
	}
	results, err := j.WriteMessages(ctx, writes)
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	if len(results) != len(writes) {
		t.Fatalf("%d results for %d writes", len(results), len(writes))
	}
	for i := range writes {
		switch {
		case want[i] == nil && results[i] != nil:
			t.Errorf("write %d: %v, want success", i, results[i])
		case want[i] != nil && !errors.Is(results[i], want[i]):
			t.Errorf("write %d: %v, want %v", i, results[i], want[i])
		case want[i] == persistence.ErrInvalidWrite && errors.Is(results[i], persistence.ErrSequenceConflict):
			t.Errorf("write %d: an invalid write reported as a conflict (which stops its entity): %v", i, results[i])
		}
	}

	expectSeqs(t, ctx, j, "a", 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
	expectSeqs(t, ctx, j, "b", 1, persistence.MaxSequenceNr, 0, nil)
	expectSeqs(t, ctx, j, "c", 1, persistence.MaxSequenceNr, 0, seqRange(1, 2))
	for _, pid := range []string{"b", "d", "e", "f", "g", "h", "other"} {
		expectHighest(t, ctx, j, pid, 0)
		expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, nil)
	}
	expectHighest(t, ctx, j, "a", 3)

	// Rejected writes can be retried once corrected.
	mustWrite(t, ctx, j, write("b", 1, 3), write("a", 4, 5))
	expectSeqs(t, ctx, j, "a", 1, persistence.MaxSequenceNr, 0, seqRange(1, 5))
	expectSeqs(t, ctx, j, "b", 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))

	// An empty call is not an error.
	results, err = j.WriteMessages(ctx, nil)
	if err != nil || len(results) != 0 {
		t.Errorf("WriteMessages(nil) = %v, %v", results, err)
	}
}

// testReplayBounds: fromSeq, toSeq and max select the right events.
func (s *journalSuite) testReplayBounds(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	const pid = "bounds"
	mustWrite(t, ctx, j, write(pid, 1, 12), write(pid, 13, 20))
	mustWrite(t, ctx, j, write(pid+"-next", 1, 5))

	cases := []struct {
		from, to, max uint64
		want          []uint64
	}{
		{1, persistence.MaxSequenceNr, 0, seqRange(1, 20)},
		{0, persistence.MaxSequenceNr, 0, seqRange(1, 20)},
		{5, 10, 0, seqRange(5, 10)},
		{5, 10, 3, seqRange(5, 7)},
		{5, 10, 6, seqRange(5, 10)},
		{5, 10, 100, seqRange(5, 10)},
		{1, persistence.MaxSequenceNr, 1, []uint64{1}},
		{3, 3, 0, []uint64{3}},
		{0, 3, 0, seqRange(1, 3)},
		{15, 100, 0, seqRange(15, 20)},
		{20, 20, 0, []uint64{20}},
		{10, 5, 0, nil},
		{21, 30, 0, nil},
		{1, 0, 0, nil},
		{persistence.MaxSequenceNr, persistence.MaxSequenceNr, 0, nil},
	}
	for _, c := range cases {
		expectSeqs(t, ctx, j, pid, c.from, c.to, c.max, c.want)
	}
	expectSeqs(t, ctx, j, "unknown", 1, persistence.MaxSequenceNr, 0, nil)
}

// testReplayStops: an error from the callback or the context ends a replay.
func (s *journalSuite) testReplayStops(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	const pid = "stops"
	mustWrite(t, ctx, j, write(pid, 1, 10))

	stop := errors.New("enough")
	var seen []uint64
	err := j.ReplayMessages(ctx, pid, 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		seen = append(seen, r.SequenceNr)
		if r.SequenceNr == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("replay returned %v, want the callback's error", err)
	}
	if !slices.Equal(seen, seqRange(1, 4)) {
		t.Errorf("callback saw %v, want 1..4", seen)
	}

	cctx, cancel := context.WithCancel(ctx)
	seen = nil
	err = j.ReplayMessages(cctx, pid, 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		seen = append(seen, r.SequenceNr)
		if r.SequenceNr == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("replay with a context cancelled midway returned %v", err)
	}
	if len(seen) >= 10 {
		t.Errorf("replay went on to %v after its context was cancelled", seen)
	}
}

// testHighestSurvivesDeletes: deleting events, even all of them, keeps the
// highest sequence number, and it is not reused.
func (s *journalSuite) testHighestSurvivesDeletes(t *testing.T) {
	ctx := s.opts.context(t)
	j, dir := s.openFresh(t)
	const pid = "deletes"
	expectHighest(t, ctx, j, pid, 0)
	mustWrite(t, ctx, j, write(pid, 1, 10))
	expectHighest(t, ctx, j, pid, 10)

	if err := j.DeleteMessagesTo(ctx, pid, 4); err != nil {
		t.Fatalf("DeleteMessagesTo(4): %v", err)
	}
	expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(5, 10))
	expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 2, seqRange(5, 6))
	expectHighest(t, ctx, j, pid, 10)

	// Deleting again, or less, is fine.
	for _, to := range []uint64{4, 2, 0} {
		if err := j.DeleteMessagesTo(ctx, pid, to); err != nil {
			t.Errorf("DeleteMessagesTo(%d) again: %v", to, err)
		}
	}
	if err := j.DeleteMessagesTo(ctx, pid, 10); err != nil {
		t.Fatalf("DeleteMessagesTo(10): %v", err)
	}
	expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, nil)
	expectHighest(t, ctx, j, pid, 10)

	// The next write continues after the highest; reusing a number fails.
	results, err := j.WriteMessages(ctx, []persistence.AtomicWrite{write(pid, 10, 10), write(pid, 5, 6)})
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	for i, r := range results {
		if !errors.Is(r, persistence.ErrSequenceConflict) {
			t.Errorf("write %d reusing a deleted sequence number: %v, want ErrSequenceConflict", i, r)
		}
	}
	mustWrite(t, ctx, j, write(pid, 11, 12))
	expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(11, 12))
	expectHighest(t, ctx, j, pid, 12)

	if s.opts.Durable {
		if err := j.DeleteMessagesTo(ctx, pid, 12); err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		j2 := s.open(t, dir)
		defer j2.Close()
		expectHighest(t, ctx, j2, pid, 12)
		expectSeqs(t, ctx, j2, pid, 1, persistence.MaxSequenceNr, 0, nil)
	}
}

// testDeleteBeyondHighest: deleting above the highest sequence number fails
// and deletes nothing.
func (s *journalSuite) testDeleteBeyondHighest(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	const pid = "beyond"
	mustWrite(t, ctx, j, write(pid, 1, 3))
	for _, to := range []uint64{4, persistence.MaxSequenceNr} {
		if err := j.DeleteMessagesTo(ctx, pid, to); !errors.Is(err, persistence.ErrBeyondHighest) {
			t.Errorf("DeleteMessagesTo(%d) with highest 3: %v, want ErrBeyondHighest", to, err)
		}
	}
	expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
	if err := j.DeleteMessagesTo(ctx, "nothing-here", 1); !errors.Is(err, persistence.ErrBeyondHighest) {
		t.Errorf("DeleteMessagesTo(1) of an unknown id: %v, want ErrBeyondHighest", err)
	}
	if err := j.DeleteMessagesTo(ctx, "nothing-here", 0); err != nil {
		t.Errorf("DeleteMessagesTo(0) of an unknown id: %v", err)
	}
}

// testPersistenceIDs: ids that are prefixes of each other or hold unusual
// bytes never see each other's events.
func (s *journalSuite) testPersistenceIDs(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	var writes []persistence.AtomicWrite
	for i, pid := range peculiarIDs {
		writes = append(writes, write(pid, 1, uint64(i+1)))
	}
	mustWrite(t, ctx, j, writes...)
	for i, pid := range peculiarIDs {
		expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(1, uint64(i+1)))
		expectHighest(t, ctx, j, pid, uint64(i+1))
	}
	// Deleting all events of "p" leaves its neighbours alone.
	if err := j.DeleteMessagesTo(ctx, "p", 1); err != nil {
		t.Fatal(err)
	}
	expectSeqs(t, ctx, j, "p", 1, persistence.MaxSequenceNr, 0, nil)
	for i, pid := range peculiarIDs[1:] {
		expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(1, uint64(i+2)))
		expectHighest(t, ctx, j, pid, uint64(i+2))
	}
}

// testConcurrentWriters: many goroutines, each with its own persistence id,
// write concurrently; every event lands once, in order.
func (s *journalSuite) testConcurrentWriters(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	n := s.opts.writers()
	const rounds = 20
	errs := make(chan error, n+1)
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := fmt.Sprintf("writer-%d", g)
			seq := uint64(1)
			for r := 0; r < rounds; r++ {
				size := uint64(1 + r%3) // one, two or three events per write
				results, err := j.WriteMessages(ctx, []persistence.AtomicWrite{write(pid, seq, seq+size-1)})
				if err == nil {
					err = results[0]
				}
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", pid, r, err)
					return
				}
				seq += size
			}
		}()
	}
	// One goroutine writes a batch spanning many ids at the same time.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var writes []persistence.AtomicWrite
		for g := 0; g < n; g++ {
			writes = append(writes, write(fmt.Sprintf("batch-%d", g), 1, 3))
		}
		results, err := j.WriteMessages(ctx, writes)
		if err == nil {
			err = errors.Join(results...)
		}
		if err != nil {
			errs <- fmt.Errorf("multi-id batch: %w", err)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	var total uint64
	for r := 0; r < rounds; r++ {
		total += uint64(1 + r%3)
	}
	for g := 0; g < n; g++ {
		pid := fmt.Sprintf("writer-%d", g)
		expectSeqs(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0, seqRange(1, total))
		expectHighest(t, ctx, j, pid, total)
		expectSeqs(t, ctx, j, fmt.Sprintf("batch-%d", g), 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
	}
}

// testLargePayloads: large events are stored and replayed intact.
func (s *journalSuite) testLargePayloads(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	size := s.opts.largePayload()
	big := event("large", 1)
	big.Payload = randomBytes(size, 1)
	w := persistence.AtomicWrite{PersistenceID: "large", Events: []persistence.Record{big}}
	three := write("large", 2, 4)
	for i := range three.Events {
		three.Events[i].Payload = randomBytes(size/4, uint64(i+2))
	}
	mustWrite(t, ctx, j, w, three)
	got := replay(t, ctx, j, "large", 1, persistence.MaxSequenceNr, 0)
	if len(got) != 4 {
		t.Fatalf("replayed %d events, want 4", len(got))
	}
	if !bytes.Equal(got[0].Payload, big.Payload) {
		t.Errorf("payload of %d bytes changed", size)
	}
	for i, r := range got[1:] {
		if !bytes.Equal(r.Payload, three.Events[i].Payload) {
			t.Errorf("event %d: payload of %d bytes changed", r.SequenceNr, size/4)
		}
	}
}

// testReopen: a durable journal keeps events, deletions and highest sequence
// numbers across Close and reopen.
func (s *journalSuite) testReopen(t *testing.T) {
	if !s.opts.Durable {
		t.Skip("the plug-in is not durable")
	}
	ctx := s.opts.context(t)
	dir := t.TempDir()
	j := s.open(t, dir)
	mustWrite(t, ctx, j, write("a", 1, 5), write("b", 1, 3))
	if err := j.DeleteMessagesTo(ctx, "a", 2); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	j = s.open(t, dir)
	defer j.Close()
	expectSeqs(t, ctx, j, "a", 1, persistence.MaxSequenceNr, 0, seqRange(3, 5))
	expectSeqs(t, ctx, j, "b", 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
	expectHighest(t, ctx, j, "a", 5)
	results, err := j.WriteMessages(ctx, []persistence.AtomicWrite{write("a", 5, 5), write("b", 4, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(results[0], persistence.ErrSequenceConflict) || results[1] != nil {
		t.Errorf("writes after reopen: %v, want [ErrSequenceConflict, nil]", results)
	}
	mustWrite(t, ctx, j, write("a", 6, 7))
	expectSeqs(t, ctx, j, "a", 1, persistence.MaxSequenceNr, 0, seqRange(3, 7))
	expectSeqs(t, ctx, j, "b", 1, persistence.MaxSequenceNr, 0, seqRange(1, 4))
}

// testCorruptRecord: a damaged record stops the replay with an error naming
// it, after the records before it; other records and ids are unaffected.
func (s *journalSuite) testCorruptRecord(t *testing.T) {
	if s.opts.CorruptEvent == nil {
		t.Fatal("Options.CorruptEvent is nil: every plug-in must show that it detects corrupt records")
	}
	ctx := s.opts.context(t)
	dir := t.TempDir()
	j := s.open(t, dir)
	defer func() { j.Close() }()
	mustWrite(t, ctx, j, write("victim", 1, 5), write("bystander", 1, 3))

	j = s.opts.CorruptEvent(t, j, dir, "victim", 3)

	var seen []uint64
	err := j.ReplayMessages(ctx, "victim", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		seen = append(seen, r.SequenceNr)
		return nil
	})
	var corrupt *persistence.CorruptRecordError
	if !errors.As(err, &corrupt) || !errors.Is(err, persistence.ErrCorrupt) {
		t.Fatalf("replay over a corrupt record returned %v, want a *CorruptRecordError", err)
	}
	if corrupt.PersistenceID != "victim" || corrupt.SequenceNr != 3 || corrupt.Snapshot {
		t.Errorf("the error names %q #%d (snapshot %v), want \"victim\" #3", corrupt.PersistenceID, corrupt.SequenceNr, corrupt.Snapshot)
	}
	if !slices.Equal(seen, seqRange(1, 2)) {
		t.Errorf("before the corrupt record, replay delivered %v, want [1 2]", seen)
	}
	expectSeqs(t, ctx, j, "victim", 4, persistence.MaxSequenceNr, 0, seqRange(4, 5))
	expectSeqs(t, ctx, j, "bystander", 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
	expectHighest(t, ctx, j, "victim", 5)
	mustWrite(t, ctx, j, write("victim", 6, 6), write("bystander", 4, 4))
	expectSeqs(t, ctx, j, "bystander", 1, persistence.MaxSequenceNr, 0, seqRange(1, 4))
}

// testClosed: every method fails with ErrClosed after Close; Close again
// succeeds.
func (s *journalSuite) testClosed(t *testing.T) {
	ctx := s.opts.context(t)
	j := s.open(t, t.TempDir())
	mustWrite(t, ctx, j, write("closed", 1, 1))
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := j.WriteMessages(ctx, []persistence.AtomicWrite{write("closed", 2, 2)}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("WriteMessages after Close: %v", err)
	}
	if err := j.ReplayMessages(ctx, "closed", 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error { return nil }); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("ReplayMessages after Close: %v", err)
	}
	if _, err := j.HighestSequenceNr(ctx, "closed"); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("HighestSequenceNr after Close: %v", err)
	}
	if err := j.DeleteMessagesTo(ctx, "closed", 1); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("DeleteMessagesTo after Close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// testCancelledContext: a call with a cancelled context fails and a write
// made with one is not stored.
func (s *journalSuite) testCancelledContext(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := j.WriteMessages(cancelled, []persistence.AtomicWrite{write("ctx", 1, 1)}); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteMessages with a cancelled context: %v", err)
	}
	expectHighest(t, ctx, j, "ctx", 0)
	if err := j.ReplayMessages(cancelled, "ctx", 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("ReplayMessages with a cancelled context: %v", err)
	}
	if _, err := j.HighestSequenceNr(cancelled, "ctx"); !errors.Is(err, context.Canceled) {
		t.Errorf("HighestSequenceNr with a cancelled context: %v", err)
	}
	if err := j.DeleteMessagesTo(cancelled, "ctx", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteMessagesTo with a cancelled context: %v", err)
	}
}
