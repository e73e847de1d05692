package sharding

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// What an EntityRef Ask of a persistent entity gets when its persist fails, from the
// entity's node and from another: the error, within 2 s while the Ask's deadline is
// 30 s, rather than a timeout.

// unregisteredIncrement is an event type the registry does not know.
type unregisteredIncrement struct{ By int }

// byUnregistered, as Increment.By, makes strictCounter persist an unregistered event.
const byUnregistered = -1

// strictCounter is the seeds' Counter written as documented: it answers from the
// handler once the event is stored, and answers the error Persist returns. It has no
// case for PersistRejected.
type strictCounter struct {
	id string
	n  int
}

func (c *strictCounter) PersistenceID() string { return "Counter-" + c.id }

func (c *strictCounter) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(Incremented); ok {
		c.n += ev.By
	}
}

func (c *strictCounter) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Increment:
		var err error
		if m.By == byUnregistered {
			err = persistence.Persist(ctx, unregisteredIncrement(m), func(unregisteredIncrement) { _ = ctx.Respond(c.n) })
		} else {
			err = persistence.Persist(ctx, Incremented(m), func(ev Incremented) {
				c.n += ev.By
				_ = ctx.Respond(c.n)
			})
		}
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	case GetCount:
		_ = ctx.Respond(c.n)
	}
}

// The journal's fault modes in the test below.
const (
	journalOK int32 = iota
	journalRejects
	journalFails
)

// errDiskOnFire is the journal's failure in the test below.
var errDiskOnFire = errors.New("disk on fire")

// On two nodes, EntityRef Asks of a persistent counter written as documented, from
// both nodes, get each kind of persist failure within 2 s: an unregistered event
// (ErrRejected from Persist, answered by the entity), writes the journal rejects
// (answered by the runtime, as the entity has no PersistRejected case; the entity
// keeps running) and a journal that fails (the entity stops, the runtime answers;
// sharding starts it again for the next Ask, which fails the same way). The answers
// from the other node cross as remote.ErrRemoteFailure with the error's text. The
// rejected write used to leave the Asks waiting until their deadline.
func TestEntityRefAskGetsPersistErrors(t *testing.T) {
	var mode atomic.Int32
	journal := &gatedJournal{Store: memjournal.New()}
	t.Cleanup(func() { _ = journal.Close() })
	journal.fault = func(writes []persistence.AtomicWrite) ([]error, error, bool) {
		switch mode.Load() {
		case journalRejects:
			results := make([]error, len(writes))
			for i := range results {
				results[i] = persistence.ErrTooLarge
			}
			return results, nil, true
		case journalFails:
			return nil, errDiskOnFire, true
		}
		return nil, nil, false
	}
	// The coordinator and remembered entities live in distributed data: only the
	// counters write to the journal.
	cfg := func(int) EntityConfig {
		c := ddataCounterConfig()
		c.EntityFactory = func(id EntityID) *actor.Props {
			return persistence.Props(func() persistence.Entity { return &strictCounter{id: string(id)} })
		}
		return c
	}
	sc := newShardCluster(t, multinode.Options{Nodes: 2}, cfg, true, journal)
	sc.ddataDir = t.TempDir()
	for i := range 2 {
		sc.startSharding(i)
	}
	const id = "7"
	if n := sc.mustAsk(0, id, Increment{By: 1}); n != 1 {
		t.Fatalf("first increment: %d, want 1", n)
	}
	refs := make([]EntityRef[any], 2)
	for i := range refs {
		ref, err := EntityRefFor[any](sc.nodes[i].System, sc.typeName, id)
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = ref
	}
	// askOne asks from node i, and checks the answer, which must come within 2 s.
	askOne := func(what string, i int, msg any, check func(node int, n int, err error)) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f := refs[i].Ask(ctx, msg)
		bound := time.NewTimer(testkit.Dilated(2 * time.Second))
		defer bound.Stop()
		select {
		case <-f.Done():
		case <-bound.C:
			t.Fatalf("%s, from node %d: no answer within %v (the Ask's deadline is 30s)", what, i, testkit.Dilated(2*time.Second))
		}
		res, err := f.Result(ctx)
		n, _ := res.(int)
		check(i, n, err)
	}
	// askAll asks from each node in turn.
	askAll := func(what string, msg any, check func(node int, n int, err error)) {
		t.Helper()
		for i := range refs {
			askOne(what, i, msg, check)
		}
	}
	// failsWith checks that err is want's, or its text when it crossed from another
	// node (remote.ErrRemoteFailure), and counts those in remoteAnswers.
	remoteAnswers, host := 0, -1
	failsWith := func(what string, want error) func(int, int, error) {
		return func(node, n int, err error) {
			t.Helper()
			switch {
			case err == nil:
				t.Fatalf("%s, from node %d: answered %d, want an error matching %v", what, node, n, want)
			case errors.Is(err, want):
				host = node // a local answer: this node hosts the entity
			case errors.Is(err, remote.ErrRemoteFailure) && strings.Contains(err.Error(), want.Error()):
				remoteAnswers++
			default:
				t.Fatalf("%s, from node %d: error %q, want one matching %v", what, node, err, want)
			}
		}
	}
	askAll("unregistered event", Increment{By: byUnregistered}, failsWith("unregistered event", persistence.ErrRejected))

	mode.Store(journalRejects)
	askAll("rejected write", Increment{By: 1}, failsWith("rejected write", persistence.ErrTooLarge))

	mode.Store(journalOK)
	want := 1
	askAll("after the rejections", Increment{By: 1}, func(node, n int, err error) {
		if want++; err != nil || n != want {
			t.Fatalf("increment from node %d: %d, %v; want %d (the entity keeps running)", node, n, err, want)
		}
	})

	mode.Store(journalFails) // the entity stops at each write, and starts again at the next message
	// A message that reaches the entity after it stopped and before its shard saw it
	// stop is a dead letter, as in Akka: an ask from another node would not learn of it.
	// So each failing write goes to an entity known to run, which a read from the
	// entity's own node tells (a dead letter fails a local ask at once).
	if host < 0 {
		t.Fatal("no node answered locally: the entity's node is unknown")
	}
	alive := func() {
		t.Helper()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := refs[host].Ask(ctx, GetCount{}).Result(ctx)
			cancel()
			if err == nil {
				return
			}
			if !errors.Is(err, actor.ErrDeadLetter) {
				t.Fatalf("reading the count on node %d: %v", host, err)
			}
		}
	}
	for i := range refs {
		alive()
		askOne("failed write", i, Increment{By: 1}, failsWith("failed write", errDiskOnFire))
	}
	if remoteAnswers != 3 { // one node of the two hosts the entity
		t.Fatalf("%d errors came from another node, want 3", remoteAnswers)
	}
}
