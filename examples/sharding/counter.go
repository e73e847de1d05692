package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
)

// The seeds' Counter: a persistent entity that counts, reached by its ID from any node.

// Commands. They cross the wire, so they are registered.
type (
	Increment struct{}
	Decrement struct{}
	Get       struct{}
	// Stop is the Counter's own stop message, for hand-offs and passivation: a command,
	// so it waits behind the commands the entity stashed while persisting (PoisonPill
	// would drop them).
	Stop struct{}
)

// CounterChanged is the event.
type CounterChanged struct{ Delta int }

// Count is the answer to Get and to every change.
type Count struct {
	ID    string
	Value int
	Node  string
}

func registerCounter(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[Increment](reg, "counter.Increment"),
		serialization.Register[Decrement](reg, "counter.Decrement"),
		serialization.Register[Get](reg, "counter.Get"),
		serialization.Register[Stop](reg, "counter.Stop"),
		serialization.Register[CounterChanged](reg, "counter.CounterChanged"),
		serialization.Register[Count](reg, "counter.Count"),
	)
}

// counter is the entity.
type counter struct {
	id    string
	count int
	idle  time.Duration
}

func counterProps(idle time.Duration) func(sharding.EntityID) *actor.Props {
	return func(id sharding.EntityID) *actor.Props {
		return persistence.Props(func() persistence.Entity { return &counter{id: string(id), idle: idle} })
	}
}

func (c *counter) PersistenceID() string { return "Counter-" + c.id }

func (c *counter) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case CounterChanged:
		c.count += m.Delta
	case persistence.RecoveryCompleted:
		ctx.SetReceiveTimeout(c.idle)
	}
}

func (c *counter) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case Increment:
		c.change(ctx, +1)
	case Decrement:
		c.change(ctx, -1)
	case Get:
		_ = ctx.Respond(c.reply(ctx))
	case actor.ReceiveTimeout:
		// Idle: ask the shard to stop this entity; messages that come meanwhile wait for
		// the next incarnation, which recovers the count from the journal.
		_ = sharding.Passivate(ctx, Stop{})
	case Stop:
		_ = ctx.Stop(ctx.Self())
	}
}

// change persists the change and answers the command: from the handler once the event
// is stored, or with the error Persist returns (an event type not registered: nothing
// written). If the journal rejects or fails the write, the persistence runtime answers
// with the error. Either way the caller's Ask, on any node, fails at once rather than
// at its deadline.
func (c *counter) change(ctx persistence.Context, delta int) {
	err := persistence.Persist(ctx, CounterChanged{Delta: delta}, func(ev CounterChanged) {
		c.count += ev.Delta
		_ = ctx.Respond(c.reply(ctx))
	})
	if err != nil {
		_ = ctx.Respond(actor.Failure{Err: err})
	}
}

func (c *counter) reply(ctx persistence.Context) Count {
	return Count{ID: c.id, Value: c.count, Node: fmt.Sprint(ctx.System().Name())}
}
