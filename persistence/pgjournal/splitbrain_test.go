package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/troupe-go/troupe/persistence"
)

// Two stores with two pools on one schema are two nodes: these tests are
// what happens when both write the same persistence id, as after a split
// brain the resolver did not stop.

// forEachPath runs a test on each way the fast path may send its events:
// INSERT statements, and COPY.
func forEachPath(t *testing.T, test func(t *testing.T, edit func(*setup))) {
	t.Run("insert", func(t *testing.T) { test(t, func(c *setup) { c.copyMinEvents = -1 }) })
	t.Run("copy", func(t *testing.T) { test(t, func(c *setup) { c.copyMinEvents = 1 }) })
}

// TestSplitBrainConflict: the second node's write of sequence numbers the
// first one used fails with ErrSequenceConflict, and stores nothing.
func TestSplitBrainConflict(t *testing.T) { forEachPath(t, testSplitBrainConflict) }

func testSplitBrainConflict(t *testing.T, edit func(*setup)) {
	node1, cfg := openFresh(t, edit)
	node2 := openIn(t, cfg)
	ctx := testContext(t)

	if res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 3)}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	// node2 started the entity before node1's events existed and believes
	// it is at 0.
	res, err := node2.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 2), aw("other", 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0], persistence.ErrSequenceConflict) || res[1] != nil {
		t.Errorf("node2's writes: %v, want [ErrSequenceConflict, nil]", res)
	}
	if got := seqsOf(t, node2, "cart"); !slices.Equal(got, span(1, 3)) {
		t.Errorf("cart: %v, want node1's 1..3", got)
	}
	if h, err := node2.HighestSequenceNr(ctx, "cart"); err != nil || h != 3 {
		t.Errorf("node2 sees highest %d, %v, want 3", h, err)
	}
}

// TestWriteBelowTheHighest: a write whose sequence numbers are free but
// below the highest stored (the events above it came from a writer that
// left a gap) is rejected too, as the journal's contract says.
func TestWriteBelowTheHighest(t *testing.T) { forEachPath(t, testWriteBelowTheHighest) }

func testWriteBelowTheHighest(t *testing.T, edit func(*setup)) {
	node1, cfg := openFresh(t, edit)
	node2 := openIn(t, cfg)
	ctx := testContext(t)
	if res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 5, 6)}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	for i, s := range []*Store{node1, node2} {
		res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 2), aw(fmt.Sprint("other", i), 1, 1)})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[0], persistence.ErrSequenceConflict) || res[1] != nil {
			t.Errorf("writes below the highest, and of another id: %v, want [ErrSequenceConflict, nil]", res)
		}
	}
	if got := seqsOf(t, node1, "cart"); !slices.Equal(got, []uint64{5, 6}) {
		t.Errorf("cart: %v, want [5 6]", got)
	}
}

// TestSplitBrainWriteIntoAGap: a node's write of a number that another
// node left free, below that node's higher event, is rejected, also when it
// follows the writing node's own last write of the persistence id. Node 1
// wrote #1..3; node 2, a newer incarnation that recovered them, had its #4
// rejected as too large (the number is used up) and wrote #5, in the same
// call or the next; node 1, stale, now writes #4. The store used to skip
// the look for events above a write that follows its own last one, and
// stored #4 under node 2's #5: two histories.
func TestSplitBrainWriteIntoAGap(t *testing.T) { forEachPath(t, testSplitBrainWriteIntoAGap) }

func testSplitBrainWriteIntoAGap(t *testing.T, edit func(*setup)) {
	tooLarge := aw("cart", 4, 4)
	tooLarge.Events[0].Payload = make([]byte, 2<<10)
	for _, tc := range []struct {
		name  string
		calls [][]persistence.AtomicWrite // node2's
	}{
		{"same call", [][]persistence.AtomicWrite{{tooLarge, aw("cart", 5, 5)}}},
		{"next call", [][]persistence.AtomicWrite{{tooLarge}, {aw("cart", 5, 5)}}},
		// Two writes of cart in one batch: the careful path.
		{"careful path", [][]persistence.AtomicWrite{{tooLarge, aw("cart", 5, 5), aw("cart", 6, 6)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node1, cfg := openFresh(t, edit)
			cfg.MaxWriteBytes = 1 << 10
			node2 := openIn(t, cfg)
			ctx := testContext(t)
			if res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 3)}); err != nil || res[0] != nil {
				t.Fatal(res, err)
			}
			var results []error
			for _, call := range tc.calls {
				res, err := node2.WriteMessages(ctx, call)
				if err != nil {
					t.Fatal(err)
				}
				results = append(results, res...)
			}
			if !errors.Is(results[0], persistence.ErrTooLarge) || slices.ContainsFunc(results[1:], func(err error) bool { return err != nil }) {
				t.Fatalf("node2's writes of #4 and up: %v, want ErrTooLarge, then success", results)
			}
			want := append([]uint64{1, 2, 3}, span(5, uint64(3+len(results)))...)
			res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 4, 4), aw("other", 1, 1)})
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(res[0], persistence.ErrSequenceConflict) || res[1] != nil {
				t.Errorf("node1's write of #4 under node2's #5, and of another id: %v, want [ErrSequenceConflict, nil]", res)
			}
			if got := seqsOf(t, node1, "cart"); !slices.Equal(got, want) {
				t.Errorf("cart: %v, want %v", got, want)
			}
		})
	}
}

// TestSplitBrainRace: two nodes race to extend the same persistence ids,
// in opposite orders, for many rounds. Every sequence number is won by
// exactly one write, histories never interleave (each successful write's
// events are its own, contiguously), no call fails as a whole (no
// deadlock), and each node learns of every write it lost.
func TestSplitBrainRace(t *testing.T) { forEachPath(t, testSplitBrainRace) }

func testSplitBrainRace(t *testing.T, edit func(*setup)) {
	node1, cfg := openFresh(t, edit)
	node2 := openIn(t, cfg)
	ctx := testContext(t)
	const pids, rounds = 12, 25

	type won struct {
		pid         string
		first, last uint64
	}
	var mu sync.Mutex
	wins := map[string][]won{} // by node name
	lost := 0
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for n, node := range []*Store{node1, node2} {
		name := fmt.Sprintf("node%d", n+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			believed := map[string]uint64{}
			for r := range rounds {
				order := rng.Perm(pids)
				if n == 1 {
					slices.Reverse(order)
				}
				var writes []persistence.AtomicWrite
				for _, i := range order {
					pid := fmt.Sprintf("p%d", i)
					size := uint64(1 + (r+i)%3)
					w := aw(pid, believed[pid]+1, believed[pid]+size)
					for k := range w.Events {
						w.Events[k].WriterID = name
					}
					writes = append(writes, w)
				}
				res, err := node.WriteMessages(ctx, writes)
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", name, r, err)
					return
				}
				for i, w := range writes {
					first, last := w.Events[0].SequenceNr, w.Events[len(w.Events)-1].SequenceNr
					switch {
					case res[i] == nil:
						believed[w.PersistenceID] = last
						mu.Lock()
						wins[name] = append(wins[name], won{w.PersistenceID, first, last})
						mu.Unlock()
					case errors.Is(res[i], persistence.ErrSequenceConflict):
						// The entity would stop; a new incarnation reads
						// the highest and goes on from there.
						h, err := node.HighestSequenceNr(ctx, w.PersistenceID)
						if err != nil {
							errs <- err
							return
						}
						if h < first {
							errs <- fmt.Errorf("%s: %q #%d rejected while the highest is %d", name, w.PersistenceID, first, h)
							return
						}
						believed[w.PersistenceID] = h
						mu.Lock()
						lost++
						mu.Unlock()
					default:
						errs <- fmt.Errorf("%s: %w", name, res[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every stored event belongs to exactly one won write, of the node
	// named in it.
	owner := map[string]map[uint64]string{}
	for name, ws := range wins {
		for _, w := range ws {
			if owner[w.pid] == nil {
				owner[w.pid] = map[uint64]string{}
			}
			for seq := w.first; seq <= w.last; seq++ {
				if prev, dup := owner[w.pid][seq]; dup {
					t.Fatalf("%q #%d won by %s and %s", w.pid, seq, prev, name)
				}
				owner[w.pid][seq] = name
			}
		}
	}
	for i := range pids {
		pid := fmt.Sprintf("p%d", i)
		var seqs []uint64
		err := node1.ReplayMessages(ctx, pid, 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
			seqs = append(seqs, r.SequenceNr)
			if owner[pid][r.SequenceNr] != r.WriterID {
				return fmt.Errorf("%q #%d written by %q, won by %q", pid, r.SequenceNr, r.WriterID, owner[pid][r.SequenceNr])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seqs) == 0 || !slices.Equal(seqs, span(1, uint64(len(seqs)))) || len(seqs) != len(owner[pid]) {
			t.Errorf("%q: stored %v, %d won", pid, seqs, len(owner[pid]))
		}
	}
	st1, st2 := node1.Stats(), node2.Stats()
	if st1.FailedCommits+st2.FailedCommits != 0 || int(st1.Conflicts+st2.Conflicts) != lost {
		t.Errorf("stats %+v and %+v, %d writes lost", st1, st2, lost)
	}
	t.Logf("%d writes won by node1, %d by node2, %d lost", len(wins["node1"]), len(wins["node2"]), lost)
}

// TestTagOffsetsAcrossNodes: while two nodes write tagged events, a reader
// that polls from the last offset it saw plus one misses nothing: offsets
// appear in commit order across nodes.
func TestTagOffsetsAcrossNodes(t *testing.T) {
	node1, cfg := openFresh(t, nil)
	node2 := openIn(t, cfg)
	reader := openIn(t, cfg)
	ctx := testContext(t)
	const writers, each = 8, 25

	written := make(chan struct{}, 2*writers*each)
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for n, node := range []*Store{node1, node2} {
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pid := fmt.Sprintf("n%d-w%d", n, g)
				for seq := uint64(1); seq <= each; seq++ {
					res, err := node.WriteMessages(ctx, []persistence.AtomicWrite{{PersistenceID: pid, Events: []persistence.Record{ev(pid, seq, "all")}}})
					if err == nil {
						err = res[0]
					}
					if err != nil {
						errs <- err
						return
					}
					written <- struct{}{}
				}
			}()
		}
	}
	go func() {
		wg.Wait()
		close(written)
	}()

	// Poll after each acknowledged write, and once more at the end.
	seen := map[string]uint64{}
	var next uint64
	total := 0
	poll := func() error {
		return reader.EventsByTag(ctx, "all", next, 0, func(tr persistence.TaggedRecord) error {
			r := tr.Record
			if seen[r.PersistenceID]+1 != r.SequenceNr {
				return fmt.Errorf("%s #%d after #%d: an event was missed", r.PersistenceID, r.SequenceNr, seen[r.PersistenceID])
			}
			seen[r.PersistenceID] = r.SequenceNr
			next = tr.Offset + 1
			total++
			return nil
		})
	}
	for range written {
		if err := poll(); err != nil {
			t.Fatal(err)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := poll(); err != nil {
		t.Fatal(err)
	}
	if total != 2*writers*each {
		t.Errorf("the polling reader saw %d events, want %d", total, 2*writers*each)
	}
}

// TestSplitBrainAfterDelete: a node that believes it is behind the other
// writes sequence numbers whose events the other already deleted; its
// writes fail as if the events were there, from wherever it starts.
func TestSplitBrainAfterDelete(t *testing.T) { forEachPath(t, testSplitBrainAfterDelete) }

func testSplitBrainAfterDelete(t *testing.T, edit func(*setup)) {
	node1, cfg := openFresh(t, edit)
	node2 := openIn(t, cfg)
	ctx := testContext(t)
	if res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 10)}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	for _, to := range []uint64{4, 10} {
		if err := node1.DeleteMessagesTo(ctx, "cart", to); err != nil {
			t.Fatal(err)
		}
		for _, first := range []uint64{1, 3, 5, 10} {
			res, err := node2.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", first, first+1)})
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(res[0], persistence.ErrSequenceConflict) {
				t.Errorf("after a delete to %d, node2's write from %d: %v, want ErrSequenceConflict", to, first, res[0])
			}
		}
	}
	if got := seqsOf(t, node2, "cart"); len(got) != 0 {
		t.Errorf("cart holds %v after the delete to 10", got)
	}
	if res, err := node2.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 11, 11)}); err != nil || res[0] != nil {
		t.Errorf("the write after the highest: %v, %v", res, err)
	}
}

// TestSplitBrainInFlight: a node's batch meets a write of the other node
// that is not committed yet. Its insert waits for that transaction, fails
// on the primary key once it commits, and the batch runs again: the write
// that lost is rejected alone, the others of its batch are stored.
func TestSplitBrainInFlight(t *testing.T) { forEachPath(t, testSplitBrainInFlight) }

func testSplitBrainInFlight(t *testing.T, edit func(*setup)) {
	node1, cfg := openFresh(t, edit)
	ctx := testContext(t)
	// The other node's transaction, held open: it has written cart #1.
	other, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{cfg.Schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `INSERT INTO troupe_event (persistence_id, sequence_nr, written_at, manifest, writer_id, checksum, payload)
		VALUES ('cart', 1, 0, '', 'other', 0, '')`); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res []error
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 2), aw("other", 1, 1)})
		done <- outcome{res, err}
	}()
	// Commit only once node1's insert waits for the held transaction.
	for waiting := false; !waiting; {
		err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%troupe_event (%')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil {
		t.Fatalf("node1's batch failed as a whole: %v", out.err)
	}
	if !errors.Is(out.res[0], persistence.ErrSequenceConflict) || out.res[1] != nil {
		t.Errorf("node1's writes: %v, want [ErrSequenceConflict, nil]", out.res)
	}
	if got := seqsOf(t, node1, "other"); !slices.Equal(got, span(1, 1)) {
		t.Errorf("other: %v, want [1]", got)
	}
	if st := node1.Stats(); st.Reruns != 1 || st.FailedCommits != 0 || st.Conflicts != 1 {
		t.Errorf("stats %+v, want one rerun and one conflict", st)
	}
}

// TestSplitBrainWriteAndDeleteDuringInsert: a stale node's insert starts
// (its statement's view taken), then the other node writes the same
// sequence numbers and deletes them, and only then does the stale insert
// reach the primary key, which no longer holds them. The check after the
// inserts finds the delete, and the stale write is rejected: on the fast
// path (one write of the persistence id in the batch) and on the careful
// one (two).
func TestSplitBrainWriteAndDeleteDuringInsert(t *testing.T) {
	forEachPath(t, func(t *testing.T, edit func(*setup)) {
		testWriteAndDeleteDuringInsert(t, edit, aw("cart", 1, 2))
	})
	t.Run("careful", func(t *testing.T) { testWriteAndDeleteDuringInsert(t, nil, aw("cart", 1, 1), aw("cart", 2, 2)) })
}

func testWriteAndDeleteDuringInsert(t *testing.T, edit func(*setup), stale ...persistence.AtomicWrite) {
	node1, cfg := openFresh(t, edit)
	node2 := openIn(t, cfg)
	ctx := testContext(t)
	// The stale node's inserts wait for an advisory lock the test holds.
	execIn(t, cfg.Schema, `CREATE FUNCTION hold_stale() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.writer_id = 'stale' THEN PERFORM pg_advisory_xact_lock_shared(4242); END IF;
			RETURN NEW;
		END $$`)
	execIn(t, cfg.Schema, `CREATE TRIGGER hold_stale BEFORE INSERT ON troupe_event FOR EACH ROW EXECUTE FUNCTION hold_stale()`)
	holder, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	unlocked := false
	defer func() {
		if !unlocked {
			_, _ = holder.Exec(context.Background(), `SELECT pg_advisory_unlock(4242)`)
		}
	}()

	for i := range stale {
		for k := range stale[i].Events {
			stale[i].Events[k].WriterID = "stale"
		}
	}
	type outcome struct {
		res []error
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := node2.WriteMessages(ctx, stale)
		done <- outcome{res, err}
	}()
	for waiting := false; !waiting; {
		err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted)`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
	}
	if res, err := node1.WriteMessages(ctx, []persistence.AtomicWrite{aw("cart", 1, 10)}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	if err := node1.DeleteMessagesTo(ctx, "cart", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(4242)`); err != nil {
		t.Fatal(err)
	}
	unlocked = true
	out := <-done
	if out.err != nil {
		t.Fatalf("the stale node's call failed as a whole: %v", out.err)
	}
	for i, r := range out.res {
		if !errors.Is(r, persistence.ErrSequenceConflict) {
			t.Errorf("stale write %d: %v, want ErrSequenceConflict", i, r)
		}
	}
	if got := seqsOf(t, node1, "cart"); len(got) != 0 {
		t.Errorf("cart holds %v after the delete to 10", got)
	}
	if h, err := node1.HighestSequenceNr(ctx, "cart"); err != nil || h != 10 {
		t.Errorf("highest %d, %v; want 10", h, err)
	}
}

// TestSplitBrainSameBatchDeadlockFree: two nodes commit batches that touch
// the same persistence ids in opposite orders at the same time, each with
// sequence numbers of its own; neither call fails.
func TestSplitBrainSameBatchDeadlockFree(t *testing.T) {
	node1, cfg := openFresh(t, nil)
	node2 := openIn(t, cfg)
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	// Deleted ids of other entities, which the writes look up.
	execIn(t, cfg.Schema, `INSERT INTO troupe_persistence_id (persistence_id, highest_sequence_nr)
		SELECT ('filler' || i)::bytea, 1 FROM generate_series(1, 20000) i`)
	execIn(t, cfg.Schema, `ANALYZE troupe_persistence_id`)
	const pids = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for n, node := range []*Store{node1, node2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 10 {
				var writes []persistence.AtomicWrite
				for i := range pids {
					if n == 1 {
						i = pids - 1 - i
					}
					writes = append(writes, aw(fmt.Sprintf("d%d", i), uint64(100*r+n*50+1), uint64(100*r+n*50+1)))
				}
				if _, err := node.WriteMessages(ctx, writes); err != nil {
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
}
