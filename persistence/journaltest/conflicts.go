package journaltest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/troupe-go/troupe/persistence"
)

// Two writers of one persistence id: what a journal must report so that the
// runtime stops the writer that lost, and the journal holds one history.

// testConflicts: a write whose first sequence number is not above the
// highest fails with ErrSequenceConflict, and so does every later write of
// its persistence id in the same call, even one above the highest: the
// writer has lost its place, and what it wrote next would land on top of the
// other writer's events. A rejection of another kind is not a conflict and
// leaves the writer's later writes alone.
func (s *journalSuite) testConflicts(t *testing.T) {
	ctx := s.opts.context(t)
	j, _ := s.openFresh(t)

	// Writer 1 stores #1 and #2; writer 2, which recovered when the
	// history was empty, has also written #1 and now writes #2, then #3..4.
	mustWrite(t, ctx, j, write("p", 1, 2))
	gap := write("r", 1, 1) // invalid: a gap inside the write
	gap.Events = append(gap.Events, event("r", 3))
	writes := []persistence.AtomicWrite{
		write("p", 2, 2), // 0: #2 is taken
		write("q", 1, 1), // 1: another id: stored
		write("p", 3, 4), // 2: above the highest, but after a conflict of p in this call
		gap,              // 3: invalid, not a conflict
		write("r", 4, 4), // 4: stored: a rejection is no conflict
		write("p", 5, 5), // 5: still after the conflict
	}
	results, err := j.WriteMessages(ctx, writes)
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	if len(results) != len(writes) {
		t.Fatalf("%d results for %d writes", len(results), len(writes))
	}
	for i, want := range []error{persistence.ErrSequenceConflict, nil, persistence.ErrSequenceConflict,
		persistence.ErrInvalidWrite, nil, persistence.ErrSequenceConflict} {
		switch {
		case want == nil && results[i] != nil:
			t.Errorf("write %d: %v, want success", i, results[i])
		case want != nil && !errors.Is(results[i], want):
			t.Errorf("write %d: %v, want %v", i, results[i], want)
		case want == persistence.ErrInvalidWrite && errors.Is(results[i], persistence.ErrSequenceConflict):
			t.Errorf("write %d: an invalid write reported as a conflict: %v", i, results[i])
		}
	}
	expectSeqs(t, ctx, j, "p", 1, persistence.MaxSequenceNr, 0, seqRange(1, 2))
	expectHighest(t, ctx, j, "p", 2)
	expectSeqs(t, ctx, j, "q", 1, persistence.MaxSequenceNr, 0, []uint64{1})
	expectSeqs(t, ctx, j, "r", 1, persistence.MaxSequenceNr, 0, []uint64{4})

	// A new call starts afresh: the writer that recovered again goes on.
	mustWrite(t, ctx, j, write("p", 3, 3))
	expectSeqs(t, ctx, j, "p", 1, persistence.MaxSequenceNr, 0, seqRange(1, 3))
}

// testWriteIntoAGap: a write of free sequence numbers below a higher event
// of its persistence id is a conflict, also when its writer's last write
// was the number just before. Writer 1 stores #1..3; writer 2, which
// recovered them and had its write of #4 rejected (too large, say: the
// number is used up), stores #5; writer 1, stale, then writes #4, which
// would put its history under writer 2's. The same again with writer 2's
// two writes after the gap in one call. With SharedStorage the writers
// write through two journals, as two nodes do.
func (s *journalSuite) testWriteIntoAGap(t *testing.T) {
	ctx := s.opts.context(t)
	j1, dir := s.openFresh(t)
	j2 := s.openSecond(t, j1, dir)

	mustWrite(t, ctx, j1, write("p", 1, 3), write("r", 1, 2))
	mustWrite(t, ctx, j2, write("p", 5, 5))
	mustWrite(t, ctx, j2, write("r", 4, 4), write("r", 5, 5))
	results, err := j1.WriteMessages(ctx, []persistence.AtomicWrite{write("p", 4, 4), write("r", 3, 3), write("q", 1, 1)})
	if err != nil {
		t.Fatalf("WriteMessages: %v", err)
	}
	if len(results) != 3 || !errors.Is(results[0], persistence.ErrSequenceConflict) ||
		!errors.Is(results[1], persistence.ErrSequenceConflict) || results[2] != nil {
		t.Errorf("writes into the gaps below the other writer's events, and of another id: %v, want [ErrSequenceConflict ErrSequenceConflict <nil>]", results)
	}
	for _, j := range []persistence.Journal{j1, j2} {
		expectSeqs(t, ctx, j, "p", 1, persistence.MaxSequenceNr, 0, []uint64{1, 2, 3, 5})
		expectSeqs(t, ctx, j, "r", 1, persistence.MaxSequenceNr, 0, []uint64{1, 2, 4, 5})
		expectHighest(t, ctx, j, "p", 5)
	}
}

// testRacingWriters: two goroutines write the same persistence ids from the
// same believed positions, round after round, each write with its writer's
// id (through two journals with SharedStorage). Every sequence number is
// won by exactly one write, the writes that lose fail with
// ErrSequenceConflict (never as a whole call), the later writes of a
// persistence id in a call after its conflict fail too, and the journal
// holds exactly the writes that succeeded. A writer that lost a persistence
// id reads its highest sequence number and goes on from there, as a new
// incarnation of the entity would.
func (s *journalSuite) testRacingWriters(t *testing.T) {
	ctx := s.opts.context(t)
	j, dir := s.openFresh(t)
	journals := []persistence.Journal{j, s.openSecond(t, j, dir)}
	const pids, rounds = 4, 20

	type won struct {
		writer string
		w      persistence.AtomicWrite
	}
	var mu sync.Mutex
	var wins []won
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for n := range 2 {
		name := fmt.Sprintf("writer-%d", n+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			believed := make([]uint64, pids)
			for r := range rounds {
				var writes []persistence.AtomicWrite
				for i := range pids {
					pid := fmt.Sprintf("raced-%d", i)
					b := believed[i]
					for _, w := range []persistence.AtomicWrite{write(pid, b+1, b+1), write(pid, b+2, b+1+uint64(1+r%2))} {
						for k := range w.Events {
							w.Events[k].WriterID = name
							w.Events[k].Payload = fmt.Appendf(nil, "%s/%d/%d", name, r, w.Events[k].SequenceNr)
						}
						writes = append(writes, w)
					}
				}
				results, err := journals[n].WriteMessages(ctx, writes)
				if err != nil {
					errs <- fmt.Errorf("%s round %d: the call failed: %w", name, r, err)
					return
				}
				lost := make([]bool, pids)
				for k, w := range writes {
					i := k / 2
					switch res := results[k]; {
					case res == nil && lost[i]:
						errs <- fmt.Errorf("%s round %d: %s #%d stored after a conflict of its id in the same call", name, r, w.PersistenceID, w.Events[0].SequenceNr)
						return
					case res == nil:
						believed[i] = w.Events[len(w.Events)-1].SequenceNr
						mu.Lock()
						wins = append(wins, won{name, w})
						mu.Unlock()
					case errors.Is(res, persistence.ErrSequenceConflict):
						lost[i] = true
					default:
						errs <- fmt.Errorf("%s round %d: %s #%d: %w, want success or ErrSequenceConflict", name, r, w.PersistenceID, w.Events[0].SequenceNr, res)
						return
					}
				}
				for i := range pids {
					if !lost[i] {
						continue
					}
					h, err := journals[n].HighestSequenceNr(ctx, fmt.Sprintf("raced-%d", i))
					if err != nil {
						errs <- err
						return
					}
					believed[i] = h
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// The journal holds exactly the winning writes, each whole, with one
	// history per persistence id.
	want := map[string][]persistence.Record{}
	for _, w := range wins {
		want[w.w.PersistenceID] = append(want[w.w.PersistenceID], w.w.Events...)
	}
	for i := range pids {
		pid := fmt.Sprintf("raced-%d", i)
		exp := want[pid]
		slices.SortFunc(exp, func(a, b persistence.Record) int { return cmp.Compare(a.SequenceNr, b.SequenceNr) })
		got := replay(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0)
		if len(got) != len(exp) {
			t.Errorf("%s: %d events stored, %d acknowledged", pid, len(got), len(exp))
			continue
		}
		for k := range got {
			if got[k].SequenceNr != uint64(k+1) || got[k].SequenceNr != exp[k].SequenceNr ||
				got[k].WriterID != exp[k].WriterID || string(got[k].Payload) != string(exp[k].Payload) {
				t.Errorf("%s #%d: stored %s %q, acknowledged #%d %s %q", pid, k+1, got[k].WriterID, got[k].Payload,
					exp[k].SequenceNr, exp[k].WriterID, exp[k].Payload)
				break
			}
		}
	}
}
