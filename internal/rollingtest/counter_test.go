package rollingtest

import (
	"errors"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
)

// The entity under load: a persistent counter that answers every increment with the
// count after it, so that the client can check that no acknowledged increment is lost
// and none is applied twice.

type (
	increment struct{}
	get       struct{}
	stop      struct{}
	changed   struct{}
	count     struct {
		Value int
		Node  string
	}
)

const (
	typeName = "Counter"
	role     = "counter"
)

func registry() (*serialization.Registry, error) {
	reg := serialization.NewRegistry()
	return reg, errors.Join(
		serialization.Register[increment](reg, "rolling.increment"),
		serialization.Register[get](reg, "rolling.get"),
		serialization.Register[stop](reg, "rolling.stop"),
		serialization.Register[changed](reg, "rolling.changed"),
		serialization.Register[count](reg, "rolling.count"),
	)
}

type counter struct {
	id    string
	value int
}

func counterProps(id sharding.EntityID) *actor.Props {
	return persistence.Props(func() persistence.Entity { return &counter{id: string(id)} })
}

func (c *counter) PersistenceID() string { return typeName + "-" + c.id }

func (c *counter) Recover(ctx persistence.Context) {
	if _, ok := ctx.Message().(changed); ok {
		c.value++
	}
}

func (c *counter) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case increment:
		err := persistence.Persist(ctx, changed{}, func(changed) {
			c.value++
			_ = ctx.Respond(count{Value: c.value, Node: ctx.System().Name()})
		})
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
		}
	case get:
		_ = ctx.Respond(count{Value: c.value, Node: ctx.System().Name()})
	case stop:
		_ = ctx.Stop(ctx.Self())
	}
}
