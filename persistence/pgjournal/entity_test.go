package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// An event-sourced account, to move between two systems that stand for
// two machines, each with its own store (its own pool) on one database.

type (
	Deposited    struct{ Amount int }
	AccountState struct{ Balance int }
)

type (
	deposit  struct{ amount int }
	balance  struct{}
	snapshot struct{}
)

type account struct {
	balance int
	probe   actor.Ref
}

func (a *account) PersistenceID() string { return "account-7" }

func (a *account) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		a.balance = m.Snapshot.(AccountState).Balance
	case Deposited:
		a.balance += m.Amount
	case persistence.RecoveryCompleted:
		_ = a.probe.Tell(m)
	}
}

func (a *account) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case deposit:
		_ = persistence.Persist(ctx, Deposited{Amount: m.amount}, func(ev Deposited) {
			a.balance += ev.Amount
			_ = ctx.Respond(a.balance)
		}, persistence.WithTags("deposits"))
	case balance:
		_ = ctx.Respond(a.balance)
	case snapshot:
		ctx.SaveSnapshot(AccountState{Balance: a.balance})
	case persistence.SaveSnapshotSuccess:
		_ = a.probe.Tell(m.Metadata.SequenceNr)
	}
}

// startPersistence starts persistence on sys with store as journal and
// snapshot store. It is the one place these tests call the persistence
// runtime's setup.
func startPersistence(t *testing.T, sys *actor.System, store *Store) {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := serialization.Register[Deposited](reg, "test.Deposited"); err != nil {
		t.Fatal(err)
	}
	if err := serialization.Register[AccountState](reg, "test.AccountState"); err != nil {
		t.Fatal(err)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
}

// TestEntityMovesBetweenMachines: an entity persists on one system, stops,
// and starts on another with its state; after a snapshot on the second,
// the next ones recover from the snapshot and the events after it.
func TestEntityMovesBetweenMachines(t *testing.T) {
	_, cfg := openFresh(t, nil)
	props := func(probe *testkit.Probe) *actor.Props {
		return persistence.Props(func() persistence.Entity { return &account{probe: probe.Ref()} })
	}
	run := func(deposits []int, wantStart int, wantHighest uint64, snapshotAfter bool) int {
		sys := testkit.NewSystem(t)
		startPersistence(t, sys, openIn(t, cfg))
		probe := testkit.NewProbe(t, sys)
		ref, err := sys.Spawn(props(probe), "account")
		if err != nil {
			t.Fatal(err)
		}
		if rc := testkit.ExpectMsgType[persistence.RecoveryCompleted](probe); rc.HighestSequenceNr != wantHighest {
			t.Errorf("recovered at #%d, want #%d", rc.HighestSequenceNr, wantHighest)
		}
		probe.Send(ref, balance{})
		probe.ExpectMsg(wantStart)
		bal := wantStart
		for _, d := range deposits {
			bal += d
			probe.Send(ref, deposit{amount: d})
			probe.ExpectMsg(bal)
		}
		if snapshotAfter {
			probe.Send(ref, snapshot{})
			if seq := testkit.ExpectMsgType[uint64](probe); seq != 4 {
				t.Errorf("snapshot at #%d, want #4", seq)
			}
		}
		probe.Watch(ref)
		sys.Stop(ref)
		probe.ExpectTerminated(ref)
		return bal
	}
	bal := run([]int{10, 20, 30}, 0, 0, false) // machine 1
	bal = run([]int{5}, bal, 3, true)          // machine 2: snapshot at 4
	bal = run([]int{1}, bal, 4, false)         // machine 3: from the snapshot
	bal = run(nil, bal, 5, false)              // machine 4: the snapshot and the event after it
	if bal != 66 {
		t.Errorf("balance %d, want 66", bal)
	}
	// The deposits are readable by tag, across the three incarnations.
	s := openIn(t, cfg)
	n := 0
	if err := s.EventsByTag(testContext(t), "deposits", 0, 0, func(persistence.TaggedRecord) error { n++; return nil }); err != nil || n != 5 {
		t.Errorf("%d deposits by tag, %v; want 5", n, err)
	}
}

// startNode is a system of its own with persistence on store: a machine.
// Two run side by side in one test, which testkit.NewSystem's leak check
// does not allow (TestMain checks leaks).
func startNode(t *testing.T, name string, store *Store) *actor.System {
	t.Helper()
	log, stopLog := testkit.NewLogger(t, zapcore.InfoLevel)
	sys, err := actor.New(name, actor.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown of %s: %v", name, err)
		}
		stopLog()
	})
	startPersistence(t, sys, store)
	return sys
}

// TestTwoNodesRunOneEntity: after a split brain the resolver did not stop,
// two machines, each with its own store, run the same entity, both from the
// same history. The first deposits; the second's deposit conflicts, and the
// second incarnation stops there (its ask fails with the conflict) and
// writes nothing more; the first goes on. The database holds one history,
// every event with the first incarnation's writer id. The second used to
// receive PersistRejected and go on, and its next deposit was stored above
// the first's.
func TestTwoNodesRunOneEntity(t *testing.T) {
	_, cfg := openFresh(t, nil)
	ctx := testContext(t)
	var nodes [2]*actor.System
	var refs [2]actor.Ref
	var probes [2]*testkit.Probe
	for i := range nodes {
		nodes[i] = startNode(t, fmt.Sprintf("machine%d", i+1), openIn(t, cfg))
		probes[i] = testkit.NewProbe(t, nodes[i])
		refs[i], _ = nodes[i].Spawn(persistence.Props(func() persistence.Entity { return &account{probe: probes[i].Ref()} }), "account")
		probes[i].ExpectMsg(persistence.RecoveryCompleted{})
	}
	if bal, err := actor.Ask[int](ctx, refs[0], deposit{amount: 10}); err != nil || bal != 10 {
		t.Fatalf("first machine's deposit: %d, %v", bal, err)
	}
	probes[1].Watch(refs[1])
	if _, err := actor.Ask[int](ctx, refs[1], deposit{amount: 5}); !errors.Is(err, persistence.ErrSequenceConflict) {
		t.Errorf("second machine's deposit: %v, want ErrSequenceConflict", err)
	}
	probes[1].ExpectTerminated(refs[1])
	if _, err := actor.Ask[int](ctx, refs[1], deposit{amount: 7}); err == nil {
		t.Errorf("the stopped incarnation took a deposit")
	}
	if bal, err := actor.Ask[int](ctx, refs[0], deposit{amount: 1}); err != nil || bal != 11 {
		t.Fatalf("first machine's next deposit: %d, %v", bal, err)
	}
	var got []string
	err := openIn(t, cfg).ReplayMessages(ctx, "account-7", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		got = append(got, fmt.Sprintf("#%d %s", r.SequenceNr, r.WriterID))
		return nil
	})
	w := refs[0].URI()
	if want := []string{"#1 " + w, "#2 " + w}; err != nil || !slices.Equal(got, want) {
		t.Errorf("the database holds %v (%v), want %v", got, err, want)
	}
	if n := persistence.Get(nodes[1]).Stats().SequenceConflicts; n != 1 {
		t.Errorf("second machine's SequenceConflicts = %d, want 1", n)
	}
}
