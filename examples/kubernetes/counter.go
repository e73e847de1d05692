package main

import (
	"errors"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
)

// The Counter entity: one per ID, somewhere in the cluster, reached by its ID from any
// node. It keeps its count in memory only: when its shard moves to another node (a
// rebalance, a node leaving) the count starts again from 0. examples/sharding shows
// the same entity persisted.

// The counter's messages. They cross the wire between nodes, so they are registered.
type (
	// Increment adds one and answers with the Count.
	Increment struct{}
	// Get answers with the Count.
	Get struct{}
)

// Count is the counter's answer: its value, and the node it runs on.
type Count struct {
	ID    string `json:"id"`
	Value int    `json:"value"`
	Node  string `json:"node"`
}

func registerCounter(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[Increment](reg, "demo.Increment"),
		serialization.Register[Get](reg, "demo.Get"),
		serialization.Register[Count](reg, "demo.Count"),
	)
}

// counter is the entity actor.
type counter struct {
	node  string
	value int
}

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case Increment:
		c.value++
		_ = ctx.Respond(c.count(ctx))
	case Get:
		_ = ctx.Respond(c.count(ctx))
	}
}

func (c *counter) count(ctx actor.Context) Count {
	return Count{ID: string(sharding.EntityIDOf(ctx)), Value: c.value, Node: c.node}
}
