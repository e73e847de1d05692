package pgjournal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
)

// What an Ask of an entity written as documented gets when its persist fails on
// PostgreSQL: the error, at once, rather than a timeout at the Ask's deadline.

// unregistered is an event type the registry does not know.
type unregistered struct{ Amount int }

// tagged deposits with a tag; depositUnregistered persists an unregistered event.
type (
	tagged struct {
		amount int
		tag    string
	}
	depositUnregistered struct{}
)

// till follows the documented pattern: it answers from the handler once the event is
// stored, and answers the error Persist returns; it has no case for PersistRejected.
type till struct{ balance int }

func (a *till) PersistenceID() string { return "till-1" }

func (a *till) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(Deposited); ok {
		a.balance += ev.Amount
	}
}

func (a *till) Receive(ctx persistence.Context) {
	var err error
	switch m := ctx.Message().(type) {
	case tagged:
		var opts []persistence.PersistOption
		if m.tag != "" {
			opts = append(opts, persistence.WithTags(m.tag))
		}
		err = persistence.Persist(ctx, Deposited{Amount: m.amount}, func(ev Deposited) {
			a.balance += ev.Amount
			_ = ctx.Respond(a.balance)
		}, opts...)
	case depositUnregistered:
		err = persistence.Persist(ctx, unregistered{Amount: 1}, func(unregistered) { _ = ctx.Respond(a.balance) })
	}
	if err != nil {
		_ = ctx.Respond(actor.Failure{Err: err})
	}
}

// askPromptly asks ref with msg, with a deadline of 30 s, and fails the test unless
// the answer (a reply or an error) comes within 2 s.
func askPromptly(t *testing.T, ref actor.Ref, msg any) (any, error) {
	t.Helper()
	const deadline, promptly = 30 * time.Second, 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	f := ref.Ask(ctx, msg)
	bound := time.NewTimer(testkit.Dilated(promptly))
	defer bound.Stop()
	select {
	case <-f.Done():
	case <-bound.C:
		t.Fatalf("%T: no answer within %v (the Ask's deadline is %v)", msg, testkit.Dilated(promptly), deadline)
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

// spawnTill starts the till on sys and checks that it persists.
func spawnTill(t *testing.T, sys *actor.System) actor.Ref {
	t.Helper()
	ref, err := sys.Spawn(persistence.Props(func() persistence.Entity { return &till{} }), "till")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := askPromptly(t, ref, tagged{amount: 1}); err != nil || got != 1 {
		t.Fatalf("first deposit: %v, %v; want 1", got, err)
	}
	return ref
}

// An unregistered event (Persist's own error, which the entity answers) and a write
// the journal rejects (a tag longer than it stores; the runtime answers, as the
// entity does not handle PersistRejected) reach the Ask within 2 s while its
// deadline is 30 s, and the entity keeps running; a write the server fails (its
// table is gone) stops the entity, and the runtime answers the Ask with the error.
// The rejected write used to leave the Ask waiting until its deadline.
func TestAskGetsPersistErrors(t *testing.T) {
	store, cfg := openFresh(t, nil)
	sys := testkit.NewSystem(t)
	startPersistence(t, sys, store)
	ref := spawnTill(t, sys)

	_, err := askPromptly(t, ref, depositUnregistered{})
	expectError(t, err, persistence.ErrRejected)

	_, err = askPromptly(t, ref, tagged{amount: 10, tag: strings.Repeat("t", MaxTagLen+1)})
	expectError(t, err, persistence.ErrRejected, persistence.ErrInvalidWrite)

	if got, err := askPromptly(t, ref, tagged{amount: 2}); err != nil || got != 3 {
		t.Fatalf("deposit after the rejections: %v, %v; want 3 (the entity keeps running)", got, err)
	}

	execIn(t, cfg.Schema, "DROP TABLE troupe_event CASCADE")
	if _, err = askPromptly(t, ref, tagged{amount: 4}); err == nil || !strings.Contains(err.Error(), "troupe_event") {
		t.Fatalf("deposit without the event table: %v; want the server's error", err)
	}
}

// With PostgreSQL down (halted: connections break, new ones are refused), a deposit's
// Ask gets ErrUnavailable within 2 s while its deadline is 30 s.
func TestAskGetsPersistErrorWhilePostgresIsDown(t *testing.T) {
	srv := target.Server
	if srv == nil {
		t.Skip("needs the throwaway server, which it stops: TROUPE_TEST_POSTGRES names an outside one")
	}
	store, _ := openFresh(t, nil)
	// Not testkit.NewSystem: its leak check would count the goroutines of the server,
	// which Resume starts; the package's TestMain checks for leaks at the end.
	sys := startNode(t, "down", store)
	ref := spawnTill(t, sys)

	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Resume(ctx); err != nil {
			t.Errorf("resume: %v", err)
		}
		admin.Reset() // its connections broke with the server
	})
	_, err := askPromptly(t, ref, tagged{amount: 2})
	expectError(t, err, ErrUnavailable)
}
