package persistence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// The documented entity pattern, and what an Ask of it gets when its persist fails:
// the error, at once, rather than a timeout at the Ask's deadline.

// Credited is the account's event; unregisteredEvent is a type the registry does not
// know, so persisting it fails before the journal.
type (
	Credited          struct{ Amount int }
	unregisteredEvent struct{ Amount int }
)

// credit persists Credited (with tag, when set); creditUnregistered persists an
// unregisteredEvent.
type (
	credit struct {
		amount int
		tag    string
	}
	creditUnregistered struct{ amount int }
)

// account follows the documented pattern (docs/persistence.md): it answers from the
// handler once the event is stored, and answers the error Persist returns. It has no
// case for PersistRejected: the runtime answers the command's sender then.
type account struct {
	id      string
	balance int
}

func (a *account) PersistenceID() string { return a.id }

func (a *account) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(Credited); ok {
		a.balance += ev.Amount
	}
}

func (a *account) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case credit:
		var opts []persistence.PersistOption
		if m.tag != "" {
			opts = append(opts, persistence.WithTags(m.tag))
		}
		err := persistence.Persist(ctx, Credited{Amount: m.amount}, func(ev Credited) {
			a.balance += ev.Amount
			_ = ctx.Respond(a.balance)
		}, opts...)
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	case creditUnregistered:
		err := persistence.Persist(ctx, unregisteredEvent{Amount: m.amount}, func(ev unregisteredEvent) {
			a.balance += ev.Amount
			_ = ctx.Respond(a.balance)
		})
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	}
}

func accountRegistry(t *testing.T) *serialization.Registry {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := serialization.Register[Credited](reg, "test.Credited"); err != nil {
		t.Fatal(err)
	}
	return reg
}

// askDeadline is the deadline of the Asks below, and promptly the bound within which
// they must have their answer: a failed persist is answered at once, not at the
// deadline.
const (
	askDeadline = 30 * time.Second
	promptly    = 2 * time.Second
)

// askPromptly asks ref with msg, with a deadline of askDeadline, and fails the test
// unless the answer (a reply or an error) comes within promptly.
func askPromptly(t *testing.T, ref actor.Ref, msg any) (any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), askDeadline)
	defer cancel()
	f := ref.Ask(ctx, msg)
	bound := time.NewTimer(testkit.Dilated(promptly))
	defer bound.Stop()
	select {
	case <-f.Done():
	case <-bound.C:
		t.Fatalf("%T: no answer within %v (the Ask's deadline is %v)", msg, testkit.Dilated(promptly), askDeadline)
	}
	return f.Result(ctx)
}

// expectError fails the test unless err matches each of want.
func expectError(t *testing.T, err error, want ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one matching %v", want)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Fatalf("error %q does not match %v", err, w)
		}
	}
}

// For each way a persist fails on the badger journal, an Ask of an entity written as
// documented gets the error within promptly, while its deadline is 30 s: an event of
// an unregistered type (Persist's own error, which the entity answers), a write the
// journal rejects (a tag longer than it stores; the runtime answers, as the entity
// does not handle PersistRejected) and a journal that fails (closed; the entity
// stops and the runtime answers). The entity keeps running after the first two. A
// rejected write used to leave the Ask waiting until its deadline, and so did the
// unregistered event, as the documented pattern ignored Persist's error.
func TestAskGetsPersistErrorsBadger(t *testing.T) {
	sys := testkit.NewSystem(t)
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: accountRegistry(t)}); err != nil {
		t.Fatal(err)
	}
	ref, err := sys.Spawn(persistence.Props(func() persistence.Entity { return &account{id: "account-1"} }), "account-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := askPromptly(t, ref, credit{amount: 1}); err != nil || got != 1 {
		t.Fatalf("first credit: %v, %v; want 1", got, err)
	}

	_, err = askPromptly(t, ref, creditUnregistered{amount: 10})
	expectError(t, err, persistence.ErrRejected)

	_, err = askPromptly(t, ref, credit{amount: 100, tag: strings.Repeat("t", badgerjournal.MaxTagLen+1)})
	expectError(t, err, persistence.ErrRejected, persistence.ErrInvalidWrite)

	if got, err := askPromptly(t, ref, credit{amount: 2}); err != nil || got != 3 {
		t.Fatalf("credit after the rejections: %v, %v; want 3 (the entity keeps running)", got, err)
	}

	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = askPromptly(t, ref, credit{amount: 4})
	expectError(t, err, persistence.ErrClosed)
}

// scribe persists one Noted per line (all of a scribble's lines atomically) and
// answers with the last sequence number once they are stored. On PersistRejected it
// does what its mode says: nothing ("", the documented pattern), answer the sender
// itself ("answer" with Respond, "send" with Send to Sender), or persist a shorter
// note instead ("retry"), whose handler answers.
type scribe struct {
	mode string
}

type scribble struct{ lines []string }

func (s *scribe) PersistenceID() string       { return "scribe" }
func (s *scribe) Recover(persistence.Context) {}

func (s *scribe) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case scribble:
		evs := make([]Noted, len(m.lines))
		for i, l := range m.lines {
			evs[i] = Noted{S: l}
		}
		err := persistence.PersistAll(ctx, evs, func(Noted) {
			_ = ctx.Respond(ctx.LastSequenceNr())
		})
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	case persistence.PersistRejected:
		switch s.mode {
		case "answer":
			_ = ctx.Respond(m)
		case "send":
			_ = ctx.Send(ctx.Sender(), m)
		case "retry":
			_ = persistence.Persist(ctx, Noted{S: "short"}, func(Noted) {
				_ = ctx.Respond(ctx.LastSequenceNr())
			})
		}
	}
}

// A write the journal rejects is answered to its command's sender: by the runtime,
// once, with actor.Failure (wrapping ErrRejected and the journal's error) when the
// entity does not answer while handling PersistRejected; by the entity alone when it
// does; and by the handler of the event the entity persists instead when it retries.
// The next command's reply comes right after, so no other answer came between. The
// runtime used to send nothing, and an Ask of an entity without a PersistRejected
// case waited until its deadline.
func TestRejectedWriteAnsweredOnce(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, mode := range []string{"", "answer", "send", "retry"} {
		t.Run("mode="+mode, func(t *testing.T) {
			sys := testkit.NewSystem(t)
			store := memjournal.New()
			t.Cleanup(func() { _ = store.Close() })
			j := sizeLimited{Store: store, max: 64}
			if _, err := persistence.Start(sys, persistence.Config{Journal: j, Snapshots: store, Registry: notebookRegistry(t)}); err != nil {
				t.Fatal(err)
			}
			ref, err := sys.Spawn(persistence.Props(func() persistence.Entity { return &scribe{mode: mode} }), "scribe")
			if err != nil {
				t.Fatal(err)
			}
			probe := testkit.NewProbe(t, sys)
			// Two events in one atomic write, both rejected: two PersistRejected, one answer.
			if err := ref.Send(scribble{lines: []string{long, long}}, probe.Ref()); err != nil {
				t.Fatal(err)
			}
			if err := ref.Send(scribble{lines: []string{"next"}}, probe.Ref()); err != nil {
				t.Fatal(err)
			}
			switch got := probe.ReceiveN(1)[0]; mode {
			case "":
				f, ok := got.(actor.Failure)
				if !ok {
					t.Fatalf("got %#v, want actor.Failure", got)
				}
				expectError(t, f.Err, persistence.ErrRejected, persistence.ErrTooLarge)
			case "answer", "send": // the entity answers each of its two PersistRejected itself
				for i, got := range append([]any{got}, probe.ReceiveN(1)[0]) {
					if r, ok := got.(persistence.PersistRejected); !ok || !errors.Is(r.Err, persistence.ErrTooLarge) || r.SequenceNr != uint64(i+1) {
						t.Fatalf("got %#v, want the entity's own answer, PersistRejected #%d", got, i+1)
					}
				}
			case "retry":
				if got != uint64(1) {
					t.Fatalf("got %#v, want 1, the retry's sequence number", got)
				}
			}
			want := uint64(1) // the rejected write's numbers were free again
			if mode == "retry" {
				want = 2
			}
			probe.ExpectMsg(want)
		})
	}
}
