package persistence_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
)

// Added is the example counter's event.
type Added struct{ N int }

type (
	add   struct{ n int }
	total struct{}
)

// tally is an event-sourced counter.
type tally struct{ sum int }

func (c *tally) PersistenceID() string { return "tally-1" }

// Recover rebuilds the sum from the events, then reports.
func (c *tally) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case Added:
		c.sum += m.N
	case persistence.RecoveryCompleted:
		fmt.Printf("recovered sum %d from %d events\n", c.sum, m.HighestSequenceNr)
	}
}

// Receive persists an event per command and applies it once it is stored. It
// answers the command from the handler, or with the error Persist returns (an Ask
// fails with it); if the journal then rejects or fails the write, the runtime
// answers with the error.
func (c *tally) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case add:
		err := persistence.Persist(ctx, Added{N: m.n}, func(ev Added) {
			c.sum += ev.N // runs once the event is in the journal
			ctx.Respond(c.sum)
		})
		if err != nil {
			ctx.Respond(actor.Failure{Err: err}) // not serialisable: nothing written
		}
	case total:
		ctx.Respond(c.sum)
	}
}

// An event-sourced counter persists two events, and a new system on the same
// journal (a restart) recovers its sum.
func Example() {
	reg := serialization.NewRegistry()
	_ = serialization.Register[Added](reg, "example.Added")
	store := memjournal.New() // outlives both systems, as a journal on disk would
	defer store.Close()

	run := func(name string, adds ...int) {
		sys, _ := actor.New(name, actor.Config{})
		defer func() { _ = sys.Shutdown(context.Background()) }()
		if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: reg}); err != nil {
			fmt.Println(err)
			return
		}
		ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity { return &tally{} }), "tally")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, n := range adds {
			sum, err := actor.Ask[int](ctx, ref, add{n: n})
			fmt.Println("sum", sum, err)
		}
		sum, _ := actor.Ask[int](ctx, ref, total{})
		fmt.Println("total", sum)
	}
	run("first", 1, 2)
	run("restarted")
	// Output:
	// recovered sum 0 from 0 events
	// sum 1 <nil>
	// sum 3 <nil>
	// total 3
	// recovered sum 3 from 2 events
	// total 3
}
