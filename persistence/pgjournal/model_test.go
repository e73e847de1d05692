package pgjournal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/persistence"
)

// journalModel is what the journal's contract says one store holds: per
// persistence id, the events stored and the highest sequence number ever
// written, which deletes keep.
type journalModel struct {
	events  map[string][]uint64
	highest map[string]uint64
}

// write applies one atomic write as the contract says, and returns whether
// it is accepted: its first sequence number must be above the highest. (A
// write that follows a rejected one of its persistence id in the same call
// is rejected too; the caller keeps track of that.)
func (m *journalModel) write(pid string, first, last uint64) bool {
	if first <= m.highest[pid] {
		return false
	}
	m.events[pid] = append(m.events[pid], span(first, last)...)
	m.highest[pid] = last
	return true
}

// TestWritesMatchTheModel drives one store, or two on one schema (two
// nodes), with random batches of writes (following the highest, reusing
// numbers below it, leaving gaps, several writes of one id in a batch) and
// deletes, on both ways of sending events, and checks every result, every
// history and every highest sequence number against journalModel. With two
// stores, a write of one into a gap the other left, below the other's
// higher events, used to be stored when it followed its store's own last
// write of the id.
func TestWritesMatchTheModel(t *testing.T) {
	for _, stores := range []int{1, 2} {
		for _, seed := range []uint64{1, 2, 3, 11, 22, 36} { // seeds 11, 22 and 36 met the hole with two stores
			for _, copyMin := range []int{-1, 1} {
				t.Run(fmt.Sprintf("stores=%d/seed=%d/copyMin=%d", stores, seed, copyMin), func(t *testing.T) {
					testWritesMatchTheModel(t, stores, seed, copyMin)
				})
			}
		}
	}
}

func testWritesMatchTheModel(t *testing.T, stores int, seed uint64, copyMin int) {
	first, cfg := openFresh(t, func(c *setup) { c.copyMinEvents = copyMin })
	nodes := []*Store{first}
	for len(nodes) < stores {
		nodes = append(nodes, openIn(t, cfg))
	}
	ctx := testContext(t)
	rng := rand.New(rand.NewPCG(seed, 99))
	m := &journalModel{events: map[string][]uint64{}, highest: map[string]uint64{}}
	pids := []string{"a", "b", "c", "d"}
	own := make([]map[string]uint64, len(nodes)) // per store, its last write stored of each id
	for i := range own {
		own[i] = map[string]uint64{}
	}
	for step := range 60 {
		n := rng.IntN(len(nodes))
		s := nodes[n]
		if rng.IntN(5) == 0 { // a delete, at most up to the highest
			pid := pids[rng.IntN(len(pids))]
			if m.highest[pid] == 0 {
				continue
			}
			to := 1 + rng.Uint64N(m.highest[pid])
			if err := s.DeleteMessagesTo(ctx, pid, to); err != nil {
				t.Fatalf("step %d: delete %s to %d: %v", step, pid, to, err)
			}
			m.events[pid] = slices.DeleteFunc(m.events[pid], func(seq uint64) bool { return seq <= to })
			continue
		}
		// A batch of 1 to 6 writes; the model takes them in call order.
		var writes []persistence.AtomicWrite
		var want []bool
		planned := map[string]uint64{}  // the highest the batch's earlier writes reach
		conflicted := map[string]bool{} // ids with a rejected write in the batch
		for range 1 + rng.IntN(6) {
			pid := pids[rng.IntN(len(pids))]
			top := max(m.highest[pid], planned[pid])
			var first uint64
			switch r := rng.IntN(10); {
			case r < 5:
				first = top + 1 // follows
			case r < 6 && own[n][pid] > 0:
				first = max(own[n][pid], planned[pid]) + 1 // follows this store's last write, as a stale node does
			case r < 8 && top > 0:
				first = 1 + rng.Uint64N(top) // reuses a number
			default:
				first = top + 2 + rng.Uint64N(3) // leaves a gap
			}
			last := first + rng.Uint64N(3)
			writes = append(writes, aw(pid, first, last))
			ok := !conflicted[pid] && m.write(pid, first, last)
			want = append(want, ok)
			if ok {
				planned[pid] = last
			} else {
				conflicted[pid] = true
			}
		}
		res, err := s.WriteMessages(ctx, writes)
		if err != nil {
			t.Fatalf("step %d: WriteMessages: %v", step, err)
		}
		for i, r := range res {
			switch {
			case want[i] && r != nil:
				t.Fatalf("step %d: write %d (%s %d..): %v, want it stored", step, i, writes[i].PersistenceID, writes[i].Events[0].SequenceNr, r)
			case !want[i] && !errors.Is(r, persistence.ErrSequenceConflict):
				t.Fatalf("step %d: write %d (%s %d..): %v, want ErrSequenceConflict", step, i, writes[i].PersistenceID, writes[i].Events[0].SequenceNr, r)
			case r == nil:
				own[n][writes[i].PersistenceID] = writes[i].Events[len(writes[i].Events)-1].SequenceNr
			}
		}
		for _, pid := range pids {
			if got := seqsOf(t, s, pid); !slices.Equal(got, m.events[pid]) {
				t.Fatalf("step %d: %s holds %v, want %v", step, pid, got, m.events[pid])
			}
			if h, err := s.HighestSequenceNr(ctx, pid); err != nil || h != m.highest[pid] {
				t.Fatalf("step %d: highest of %s %d, %v; want %d", step, pid, h, err, m.highest[pid])
			}
		}
	}
}
