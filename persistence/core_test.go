package persistence

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// A coreOp drives the entity core one input at a time and checks its decision. H is a
// label naming the handler.
type coreOp struct {
	name string
	run  func(c *entityCore[string]) error
}

func recovered(highest uint64, wantUnstash bool) coreOp {
	return coreOp{fmt.Sprintf("Recovered(%d)", highest), func(c *entityCore[string]) error {
		if got := c.Recovered(highest); got != wantUnstash {
			return fmt.Errorf("unstash %v, want %v", got, wantUnstash)
		}
		return nil
	}}
}

func replayed(seq uint64) coreOp {
	return coreOp{fmt.Sprintf("Replayed(%d)", seq), func(c *entityCore[string]) error { c.Replayed(seq); return nil }}
}

func command(want commandAction) coreOp {
	return coreOp{"Command", func(c *entityCore[string]) error {
		if got := c.Command(); got != want {
			return fmt.Errorf("action %d, want %d", got, want)
		}
		return nil
	}}
}

// persistOp persists one event per label; wantSeqs are the numbers it must assign.
func persistOp(stashing bool, labels []string, wantSeqs ...uint64) coreOp {
	return coreOp{fmt.Sprintf("Persist(%v, stashing=%v)", labels, stashing), func(c *entityCore[string]) error {
		recs := make([]Record, len(labels))
		if err := c.Persist(recs, labels, stashing); err != nil {
			return err
		}
		var got []uint64
		for _, r := range recs {
			if r.PersistenceID != c.pid {
				return fmt.Errorf("persistence id %q", r.PersistenceID)
			}
			got = append(got, r.SequenceNr)
		}
		if !slices.Equal(got, wantSeqs) {
			return fmt.Errorf("assigned %v, want %v", got, wantSeqs)
		}
		return nil
	}}
}

func persistFails(target error, labels ...string) coreOp {
	return coreOp{fmt.Sprintf("Persist(%v) fails", labels), func(c *entityCore[string]) error {
		if err := c.Persist(make([]Record, len(labels)), labels, true); !errors.Is(err, target) {
			return fmt.Errorf("error %v, want %v", err, target)
		}
		return nil
	}}
}

func deferOp(label string, wantRunNow bool) coreOp {
	return coreOp{fmt.Sprintf("Defer(%s)", label), func(c *entityCore[string]) error {
		if got := c.Defer(label); got != wantRunNow {
			return fmt.Errorf("runNow %v, want %v", got, wantRunNow)
		}
		return nil
	}}
}

// flush expects a call with id whose atomic writes hold the sequence numbers given
// (one slice per atomic write), or no call when writes is empty.
func flush(id uint64, writes ...[]uint64) coreOp {
	return coreOp{fmt.Sprintf("Flush -> %d %v", id, writes), func(c *entityCore[string]) error {
		got, ok := c.Flush()
		if len(writes) == 0 {
			if ok {
				return fmt.Errorf("unexpected call %+v", got)
			}
			return nil
		}
		if !ok {
			return errors.New("no call")
		}
		if got.id != id {
			return fmt.Errorf("call id %d, want %d", got.id, id)
		}
		var seqs [][]uint64
		for _, w := range got.writes {
			var s []uint64
			for _, r := range w.Events {
				s = append(s, r.SequenceNr)
			}
			seqs = append(seqs, s)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(writes) {
			return fmt.Errorf("writes %v, want %v", seqs, writes)
		}
		return nil
	}}
}

func written(id uint64, results []error, err error, wantErr bool) coreOp {
	return coreOp{fmt.Sprintf("Written(%d, %v, %v)", id, results, err), func(c *entityCore[string]) error {
		if got := c.Written(id, results, err); (got != nil) != wantErr {
			return fmt.Errorf("error %v, want error %v", got, wantErr)
		}
		return nil
	}}
}

// next expects the next step: kind, sequence number, label, and LastSequenceNr while
// it runs. The optional also runs while the step "runs" (a handler persisting).
func next(kind stepKind, seq uint64, label string, also ...coreOp) coreOp {
	return coreOp{fmt.Sprintf("Next -> %d #%d %s", kind, seq, label), func(c *entityCore[string]) error {
		st, ok := c.Next()
		if !ok {
			return errors.New("no step")
		}
		if st.kind != kind || st.seq != seq || st.h != label {
			return fmt.Errorf("step %d #%d %q", st.kind, st.seq, st.h)
		}
		if kind != runDeferred && kind != stopConflict && c.LastSequenceNr() != seq {
			return fmt.Errorf("LastSequenceNr %d while running #%d", c.LastSequenceNr(), seq)
		}
		for _, op := range also {
			if err := op.run(c); err != nil {
				return fmt.Errorf("%s: %w", op.name, err)
			}
		}
		return nil
	}}
}

// nextFreed expects the report of a rejected write whose number was freed for a later
// event: LastSequenceNr stays last while it runs.
func nextFreed(seq uint64, label string, last uint64, also ...coreOp) coreOp {
	return coreOp{fmt.Sprintf("Next -> rejected #%d %s, freed", seq, label), func(c *entityCore[string]) error {
		st, ok := c.Next()
		if !ok {
			return errors.New("no step")
		}
		if st.kind != reportRejected || st.seq != seq || st.h != label {
			return fmt.Errorf("step %d #%d %q", st.kind, st.seq, st.h)
		}
		if c.LastSequenceNr() != last {
			return fmt.Errorf("LastSequenceNr %d while reporting #%d, want %d", c.LastSequenceNr(), seq, last)
		}
		for _, op := range also {
			if err := op.run(c); err != nil {
				return fmt.Errorf("%s: %w", op.name, err)
			}
		}
		return nil
	}}
}

func noNext() coreOp {
	return coreOp{"Next -> none", func(c *entityCore[string]) error {
		if st, ok := c.Next(); ok {
			return fmt.Errorf("unexpected step %+v", st)
		}
		return nil
	}}
}

func settle(wantUnstash bool) coreOp {
	return coreOp{"Settle", func(c *entityCore[string]) error {
		if got := c.Settle(); got != wantUnstash {
			return fmt.Errorf("unstash %v, want %v", got, wantUnstash)
		}
		return nil
	}}
}

func lastSeq(want uint64) coreOp {
	return coreOp{fmt.Sprintf("LastSequenceNr == %d", want), func(c *entityCore[string]) error {
		if got := c.LastSequenceNr(); got != want {
			return fmt.Errorf("%d", got)
		}
		return nil
	}}
}

func waiting(want int, seqs ...uint64) coreOp {
	return coreOp{fmt.Sprintf("Waiting == %d %v", want, seqs), func(c *entityCore[string]) error {
		if got := c.Waiting(); got != want {
			return fmt.Errorf("waiting %d", got)
		}
		if got := c.pendingSeqs(); !slices.Equal(got, seqs) {
			return fmt.Errorf("pending %v", got)
		}
		return nil
	}}
}

func unrun(labels ...string) coreOp {
	return coreOp{fmt.Sprintf("Unrun == %v", labels), func(c *entityCore[string]) error {
		if got := slices.Collect(c.Unrun()); !slices.Equal(got, labels) {
			return fmt.Errorf("unrun %v", got)
		}
		return nil
	}}
}

var (
	errRejectedByJournal = fmt.Errorf("%w: test", ErrTooLarge)
	errConflict          = fmt.Errorf("%w: test", ErrSequenceConflict)
)

func TestEntityCore(t *testing.T) {
	ok3 := []error{nil, nil, nil}
	tests := []struct {
		name string
		ops  []coreOp
	}{
		{"each handler of a PersistAll sees its own sequence number", []coreOp{
			recovered(0, false),
			command(handleCommand),
			persistOp(true, []string{"a", "b", "c"}, 1, 2, 3),
			lastSeq(0), // persisted, not handled
			flush(1, []uint64{1, 2, 3}),
			written(1, []error{nil}, nil, false),
			next(runHandler, 1, "a", lastSeq(1)),
			next(runHandler, 2, "b"),
			next(runHandler, 3, "c"),
			noNext(),
			settle(false),
			lastSeq(3),
		}},
		{"async persists of one command: one atomic write each, one call, own numbers", []coreOp{
			recovered(10, false),
			persistOp(false, []string{"a"}, 11),
			persistOp(false, []string{"b"}, 12),
			persistOp(false, []string{"c"}, 13),
			flush(1, []uint64{11}, []uint64{12}, []uint64{13}),
			command(handleCommand), // async: not stashed
			lastSeq(10),            // a command sees only handled events
			written(1, ok3, nil, false),
			next(runHandler, 11, "a"),
			next(runHandler, 12, "b"),
			next(runHandler, 13, "c"),
			noNext(),
		}},
		{"a deferred call runs after the handlers before it and sees the last handled number", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			deferOp("snapshot", false),
			persistOp(false, []string{"b"}, 2),
			flush(1, []uint64{1}, []uint64{2}),
			command(stashCommand), // the deferred call holds commands back
			written(1, []error{nil, nil}, nil, false),
			next(runHandler, 1, "a"),
			next(runDeferred, 1, "snapshot", lastSeq(1)),
			next(runHandler, 2, "b"),
			noNext(),
			settle(true),
		}},
		{"defer with nothing pending runs at once", []coreOp{
			recovered(0, false),
			deferOp("now", true),
			waiting(0),
		}},
		{"commands stash while a stashing persist waits and unstash after its handlers", []coreOp{
			recovered(0, false),
			command(handleCommand),
			persistOp(true, []string{"a", "b"}, 1, 2),
			flush(1, []uint64{1, 2}),
			command(stashCommand),
			command(stashCommand),
			written(1, []error{nil}, nil, false),
			next(runHandler, 1, "a"),
			settle(false), // b still holds commands back
			next(runHandler, 2, "b"),
			settle(true),
			settle(false), // once
			command(handleCommand),
			lastSeq(2), // what an unstashed command sees
		}},
		{"a handler that persists again keeps commands stashed; its events go in the next call", []coreOp{
			recovered(0, false),
			persistOp(true, []string{"a"}, 1),
			flush(1, []uint64{1}),
			command(stashCommand),
			written(1, []error{nil}, nil, false),
			next(runHandler, 1, "a", persistOp(true, []string{"a2"}, 2)),
			noNext(),
			flush(2, []uint64{2}),
			settle(false),
			written(2, []error{nil}, nil, false),
			next(runHandler, 2, "a2"),
			settle(true),
		}},
		{"writes persisted while a call is in flight merge into the next call", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			flush(1, []uint64{1}),
			persistOp(false, []string{"b"}, 2),
			flush(0), // in flight: queued
			persistOp(false, []string{"c", "d"}, 3, 4),
			flush(0),
			waiting(4, 1, 2, 3, 4),
			written(1, []error{nil}, nil, false),
			next(runHandler, 1, "a"),
			noNext(), // b's write is not answered yet
			flush(2, []uint64{2}, []uint64{3, 4}),
			written(2, []error{nil, nil}, nil, false),
			next(runHandler, 2, "b"),
			next(runHandler, 3, "c"),
			next(runHandler, 4, "d"),
		}},
		{"a rejected write followed by a stored one in its call: the number is used up", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			persistOp(false, []string{"b", "c"}, 2, 3),
			persistOp(false, []string{"d"}, 4),
			flush(1, []uint64{1}, []uint64{2, 3}, []uint64{4}),
			written(1, []error{nil, errRejectedByJournal, nil}, nil, false),
			next(runHandler, 1, "a"),
			next(reportRejected, 2, "b"),
			next(reportRejected, 3, "c"),
			next(runHandler, 4, "d"),
			command(handleCommand),
			persistOp(true, []string{"e"}, 5),
		}},
		{"a rejected write that ends its call frees its number: the events persisted since move down", []coreOp{
			recovered(4, false),
			persistOp(false, []string{"a"}, 5),
			flush(1, []uint64{5}),
			persistOp(false, []string{"b", "c"}, 6, 7),
			flush(0),
			deferOp("after-c", false),
			persistOp(false, []string{"d"}, 8),
			waiting(4, 5, 6, 7, 0, 8),
			written(1, []error{errRejectedByJournal}, nil, false),
			waiting(4, 5, 5, 6, 0, 7),
			// The entity persists a replacement while told of the rejection: it
			// follows the events persisted before.
			nextFreed(5, "a", 4, persistOp(false, []string{"a2"}, 8)),
			noNext(),
			lastSeq(4),
			flush(2, []uint64{5, 6}, []uint64{7}, []uint64{8}),
			written(2, ok3, nil, false),
			next(runHandler, 5, "b"),
			next(runHandler, 6, "c"),
			next(runDeferred, 6, "after-c"),
			next(runHandler, 7, "d"),
			next(runHandler, 8, "a2"),
		}},
		{"rejected writes that end their call after a stored one: their numbers are freed", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			persistOp(false, []string{"b"}, 2),
			persistOp(false, []string{"c"}, 3),
			flush(1, []uint64{1}, []uint64{2}, []uint64{3}),
			written(1, []error{nil, errRejectedByJournal, errRejectedByJournal}, nil, false),
			next(runHandler, 1, "a"),
			nextFreed(2, "b", 1),
			nextFreed(3, "c", 1),
			noNext(),
			command(handleCommand),
			persistOp(true, []string{"e"}, 2),
			flush(2, []uint64{2}),
		}},
		{"a conflict stops the entity at its turn: the handlers before it run, none after", []coreOp{
			recovered(4, false),
			persistOp(false, []string{"a"}, 5),
			persistOp(true, []string{"b", "c"}, 6, 7),
			persistOp(false, []string{"d"}, 8),
			deferOp("after-d", false),
			flush(1, []uint64{5}, []uint64{6, 7}, []uint64{8}),
			written(1, []error{nil, errConflict, errConflict}, nil, false),
			next(runHandler, 5, "a"),
			next(stopConflict, 6, "b"),
			lastSeq(5), // #6 is the other writer's
			noNext(),
			command(dropCommand),
			persistFails(ErrRejected, "e"),
			flush(0),
			settle(false),
			waiting(3, 6, 7, 8, 0),
			unrun("b", "c", "d", "after-d"),
		}},
		{"a conflict after a rejection: the rejection is reported, then the entity stops", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			persistOp(false, []string{"b"}, 2),
			flush(1, []uint64{1}, []uint64{2}),
			written(1, []error{errRejectedByJournal, errConflict}, nil, false),
			next(reportRejected, 1, "a"),
			next(stopConflict, 2, "b"),
			noNext(),
			unrun("b"),
		}},
		{"a failed call stops the entity: no handler runs, commands drop, persists fail", []coreOp{
			recovered(0, false),
			persistOp(true, []string{"a"}, 1),
			flush(1, []uint64{1}),
			written(1, nil, errors.New("disk on fire"), true),
			noNext(),
			command(dropCommand),
			persistFails(ErrRejected, "b"),
			flush(0),
			waiting(1, 1),
			unrun("a"),
		}},
		{"a journal that answers with the wrong number of results fails the call", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			persistOp(false, []string{"b"}, 2),
			flush(1, []uint64{1}, []uint64{2}),
			written(1, []error{nil}, nil, true),
			noNext(),
		}},
		{"an answer to another call is ignored", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			flush(1, []uint64{1}),
			written(7, []error{nil}, nil, false),
			noNext(),
			written(1, []error{nil}, nil, false),
			next(runHandler, 1, "a"),
		}},
		{"recovery: commands stash, persists fail, numbers continue after the highest", []coreOp{
			command(stashCommand),
			persistFails(ErrRejected, "early"),
			replayed(1),
			replayed(2),
			lastSeq(2),
			recovered(5, true), // events 3..5 were deleted or beyond ToSequenceNr
			lastSeq(5),
			command(handleCommand),
			persistOp(true, []string{"a"}, 6),
		}},
		{"a handler that defers behind a later event runs after that event", []coreOp{
			recovered(0, false),
			persistOp(false, []string{"a"}, 1),
			persistOp(false, []string{"b"}, 2),
			flush(1, []uint64{1}, []uint64{2}),
			written(1, []error{nil, nil}, nil, false),
			next(runHandler, 1, "a", deferOp("after-b", false)),
			next(runHandler, 2, "b"),
			next(runDeferred, 2, "after-b"),
			noNext(),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newEntityCore[string]("pid")
			for i, op := range tc.ops {
				if err := op.run(c); err != nil {
					t.Fatalf("step %d, %s: %v", i, op.name, err)
				}
			}
		})
	}
}

// Many invocations go through the queue without it growing without bound.
func TestEntityCoreQueueIsReused(t *testing.T) {
	c := newEntityCore[int]("pid")
	c.Recovered(0)
	var id uint64
	for round := range 1000 {
		// keep one call in flight and one queued, so the queue never empties
		if err := c.Persist(make([]Record, 1), []int{round}, false); err != nil {
			t.Fatal(err)
		}
		if cl, ok := c.Flush(); ok {
			id = cl.id
		}
		if round%2 == 1 {
			if err := c.Written(id, make([]error, len(c.inFlight)), nil); err != nil {
				t.Fatal(err)
			}
			for {
				if _, ok := c.Next(); !ok {
					break
				}
			}
		}
	}
	if cap(c.pending) > 256 {
		t.Fatalf("pending queue grew to %d", cap(c.pending))
	}
}
