package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/testkit"
)

// sizeLimited is a memjournal that rejects, as too large, every write with an event
// payload above max bytes, as a journal with a size limit does.
type sizeLimited struct {
	*memjournal.Store
	max int
}

func (j sizeLimited) WriteMessages(ctx context.Context, writes []persistence.AtomicWrite) ([]error, error) {
	results := make([]error, len(writes))
	var pass []persistence.AtomicWrite
	var at []int
	for i, w := range writes {
		if slices.ContainsFunc(w.Events, func(r persistence.Record) bool { return len(r.Payload) > j.max }) {
			results[i] = fmt.Errorf("%w: %q #%d", persistence.ErrTooLarge, w.PersistenceID, w.Events[0].SequenceNr)
			continue
		}
		pass, at = append(pass, w), append(at, i)
	}
	if len(pass) == 0 {
		return results, nil
	}
	res, err := j.Store.WriteMessages(ctx, pass)
	if err != nil {
		return nil, err
	}
	for k, i := range at {
		results[i] = res[k]
	}
	return results, nil
}

// jotter persists one Noted per jot and answers with its sequence number, or with
// the rejection as actor.Failure.
type jotter struct {
	id    string
	probe actor.Ref
}

type jot struct{ s string }

func (j *jotter) PersistenceID() string { return j.id }

func (j *jotter) Recover(ctx persistence.Context) {
	if m, ok := ctx.Message().(persistence.RecoveryCompleted); ok {
		_ = j.probe.Tell(m)
	}
}

func (j *jotter) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case jot:
		_ = persistence.Persist(ctx, Noted{m.s}, func(Noted) { ctx.Respond(ctx.LastSequenceNr()) })
	case persistence.PersistRejected:
		ctx.Respond(actor.Failure{Err: m.Err})
	}
}

// Two incarnations of one entity, on two nodes after a split brain, recovered #1.
// The first's next write is rejected as too large; the second then writes #2, the
// number the first skipped, and the first writes again. The first's number was free
// again after the rejection, so that write is #2 too, conflicts, and the first
// stops: the journal holds one history. The number used to be used up: the first
// wrote #3 on top of the second's #2, and went on with a state that lacked it.
func TestRejectedNumberLeavesNoGapForAStaleIncarnation(t *testing.T) {
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	j := sizeLimited{Store: store, max: 64}
	sys1 := startNodeOn(t, "node1", j, store, notebookRegistry(t))
	sys2 := startNodeOn(t, "node2", j, store, notebookRegistry(t))
	p1, p2 := testkit.NewProbe(t, sys1), testkit.NewProbe(t, sys2)
	props := func(p *testkit.Probe) *actor.Props {
		return persistence.Props(func() persistence.Entity { return &jotter{id: "gap", probe: p.Ref()} })
	}
	ctx := context.Background()

	first, _ := sys1.Spawn(props(p1), "j")
	p1.ExpectMsg(persistence.RecoveryCompleted{})
	if seq, err := actor.Ask[uint64](ctx, first, jot{"a1"}); err != nil || seq != 1 {
		t.Fatalf("first's a1: #%d, %v; want #1", seq, err)
	}
	second, _ := sys2.Spawn(props(p2), "j")
	p2.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 1})

	if _, err := actor.Ask[uint64](ctx, first, jot{strings.Repeat("x", 100)}); !errors.Is(err, persistence.ErrTooLarge) {
		t.Fatalf("first's large write: %v, want ErrTooLarge", err)
	}
	if seq, err := actor.Ask[uint64](ctx, second, jot{"b2"}); err != nil || seq != 2 {
		t.Fatalf("second's b2: #%d, %v; want #2", seq, err)
	}
	p1.Watch(first)
	if seq, err := actor.Ask[uint64](ctx, first, jot{"a3"}); !errors.Is(err, persistence.ErrSequenceConflict) {
		t.Errorf("first's write after the second's: #%d, %v; want ErrSequenceConflict", seq, err)
	}
	p1.ExpectTerminated(first)

	var got []string
	if err := store.ReplayMessages(ctx, "gap", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		who := "first"
		if r.WriterID == second.URI() {
			who = "second"
		}
		got = append(got, fmt.Sprintf("#%d %s", r.SequenceNr, who))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"#1 first", "#2 second"}; !slices.Equal(got, want) {
		t.Errorf("the journal holds %v, want %v", got, want)
	}
}
