package main

import (
	"errors"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
)

// Commands to an account. They cross the wire, so they are registered.
type (
	Open       struct{ Owner string }
	Deposit    struct{ Amount int64 }
	Withdraw   struct{ Amount int64 }
	GetBalance struct{}
	// Stop stops an account (on a hand-off) or the allocator (on a hand-over). It is
	// a command, so it waits behind the commands stashed while an event is written;
	// actor.PoisonPill would drop them.
	Stop struct{}
)

// Events of an account: what happened, written to the journal before it counts.
type (
	Opened    struct{ Owner string }
	Deposited struct{ Amount int64 }
	Withdrawn struct{ Amount int64 }
)

// Receipt answers every command to an account.
type Receipt struct {
	Account  string
	Owner    string
	Balance  int64
	Node     string // the node the account runs on
	Rejected string // why the command was refused; empty when it was carried out
}

// account is the sharded, persistent entity: one per account number.
type account struct {
	id      string
	owner   string // empty until the account is opened
	balance int64
}

func (a *account) PersistenceID() string { return "Account-" + a.id }

// Recover replays the account's events when it starts, on any node.
func (a *account) Recover(ctx persistence.Context) { a.apply(ctx.Message()) }

func (a *account) apply(event any) {
	switch ev := event.(type) {
	case Opened:
		a.owner = ev.Owner
	case Deposited:
		a.balance += ev.Amount
	case Withdrawn:
		a.balance -= ev.Amount
	}
}

// Receive checks each command against the state, then persists its event; the
// reply leaves once the event is in the journal.
func (a *account) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Open:
		if a.owner != "" {
			a.reject(ctx, "already open")
			return
		}
		persist(ctx, a, Opened(m)) // the event has the command's fields
	case Deposit:
		if a.owner == "" || m.Amount <= 0 {
			a.reject(ctx, "no such account, or not a positive amount")
			return
		}
		persist(ctx, a, Deposited(m))
	case Withdraw:
		if a.owner == "" || m.Amount <= 0 || m.Amount > a.balance {
			a.reject(ctx, "insufficient funds")
			return
		}
		persist(ctx, a, Withdrawn(m))
	case GetBalance:
		_ = ctx.Respond(a.receipt(ctx, ""))
	case Stop:
		_ = ctx.Stop(ctx.Self())
	}
}

// persist writes event, applies it and answers; a refused write is answered too.
func persist[E any](ctx persistence.Context, a *account, event E) {
	err := persistence.Persist(ctx, event, func(ev E) {
		a.apply(ev)
		_ = ctx.Respond(a.receipt(ctx, ""))
	})
	if err != nil {
		a.reject(ctx, err.Error())
	}
}

func (a *account) reject(ctx persistence.Context, why string) {
	_ = ctx.Respond(a.receipt(ctx, why))
}

func (a *account) receipt(ctx persistence.Context, rejected string) Receipt {
	return Receipt{Account: a.id, Owner: a.owner, Balance: a.balance, Node: ctx.System().Name(), Rejected: rejected}
}

// registerMessages registers every type that crosses the wire or goes to the journal.
func registerMessages(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[Open](reg, "bank.Open"),
		serialization.Register[Deposit](reg, "bank.Deposit"),
		serialization.Register[Withdraw](reg, "bank.Withdraw"),
		serialization.Register[GetBalance](reg, "bank.GetBalance"),
		serialization.Register[Stop](reg, "bank.Stop"),
		serialization.Register[Opened](reg, "bank.Opened"),
		serialization.Register[Deposited](reg, "bank.Deposited"),
		serialization.Register[Withdrawn](reg, "bank.Withdrawn"),
		serialization.Register[Receipt](reg, "bank.Receipt"),
		serialization.Register[NextNumber](reg, "bank.NextNumber"),
		serialization.Register[NumberTaken](reg, "bank.NumberTaken"),
		serialization.Register[Number](reg, "bank.Number"),
	)
}
