package main

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// startPersistence starts persistence on an in-memory journal in sys.
func startPersistence(t *testing.T, sys *actor.System) {
	t.Helper()
	reg := serialization.NewRegistry()
	if err := registerMessages(reg); err != nil {
		t.Fatal(err)
	}
	store := memjournal.New()
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
}

// An account refuses what it must, and comes back with its balance after a stop.
func TestAccount(t *testing.T) {
	sys := testkit.NewSystem(t)
	startPersistence(t, sys)
	probe := testkit.NewProbe(t, sys)
	props := persistence.Props(func() persistence.Entity { return &account{id: "1001"} })

	acct, err := sys.Spawn(props, "account-1001")
	if err != nil {
		t.Fatal(err)
	}
	expect := func(cmd any, balance int64, rejected string) {
		t.Helper()
		probe.Send(acct, cmd)
		r := testkit.ExpectMsgType[Receipt](probe)
		if r.Balance != balance || (r.Rejected != "") != (rejected != "") {
			t.Fatalf("%T: receipt %+v, want balance %d, rejected %q", cmd, r, balance, rejected)
		}
	}
	expect(Deposit{Amount: 10}, 0, "no such account")
	expect(Open{Owner: "ann"}, 0, "")
	expect(Deposit{Amount: 100}, 100, "")
	expect(Withdraw{Amount: 130}, 100, "insufficient funds")
	expect(Withdraw{Amount: 30}, 70, "")

	probe.Watch(acct)
	_ = acct.Tell(Stop{})
	probe.ExpectTerminated(acct)

	// A new incarnation (under another name: the old one's is freed a moment after
	// Terminated) has the same persistence id, so it replays the events.
	acct, err = sys.Spawn(props, "account-1001-again")
	if err != nil {
		t.Fatal(err)
	}
	expect(GetBalance{}, 70, "")
}

// The allocator never hands out a number twice, also across a restart.
func TestAllocator(t *testing.T) {
	sys := testkit.NewSystem(t)
	startPersistence(t, sys)
	probe := testkit.NewProbe(t, sys)
	props := persistence.Props(func() persistence.Entity { return &allocator{} })

	numbers, _ := sys.Spawn(props, "numbers")
	probe.Send(numbers, NextNumber{})
	probe.ExpectMsg(Number{N: 1001})
	probe.Send(numbers, NextNumber{})
	probe.ExpectMsg(Number{N: 1002})

	probe.Watch(numbers)
	_ = numbers.Tell(Stop{})
	probe.ExpectTerminated(numbers)

	numbers, _ = sys.Spawn(props, "numbers-again")
	probe.Send(numbers, NextNumber{})
	probe.ExpectMsg(Number{N: 1003})
}
