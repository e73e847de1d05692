package main

import "github.com/troupe-go/troupe/persistence"

// NextNumber asks the allocator for a fresh account number.
type NextNumber struct{}

// Number answers NextNumber.
type Number struct {
	N        int64
	Rejected string // why no number was given; empty when N is valid
}

// NumberTaken is the allocator's event.
type NumberTaken struct{ N int64 }

// allocator hands out account numbers, each once, cluster-wide. It runs as a cluster
// singleton, and it is persistent: a singleton's in-memory state does not move with
// it, so its state lives in the journal and the next instance recovers it.
type allocator struct{ last int64 }

func (a *allocator) PersistenceID() string { return "account-numbers" }

func (a *allocator) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(NumberTaken); ok {
		a.last = ev.N
	}
}

func (a *allocator) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case NextNumber:
		next := max(a.last, 1000) + 1
		err := persistence.Persist(ctx, NumberTaken{N: next}, func(ev NumberTaken) {
			a.last = ev.N
			_ = ctx.Respond(Number{N: ev.N})
		})
		if err != nil {
			_ = ctx.Respond(Number{Rejected: err.Error()})
		}
	case Stop: // the singleton's termination message: a hand-over
		_ = ctx.Stop(ctx.Self())
	}
}
