package routing

import "github.com/troupe-go/troupe/actor"

// Broadcast wraps a message that a router sends to every routee, whatever its logic.
// Through Router.Send the copies go out on the sender's goroutine; sent to Router.Ref,
// the router actor sends them. Each routee gets Msg itself, with the original sender.
type Broadcast struct{ Msg any }

// UserMessage returns Msg, so that a Broadcast lost as a dead letter is reported as the
// message inside it (see actor.MessageWrapper).
func (b Broadcast) UserMessage() any { return b.Msg }

// The management messages. Send them to Router.Ref, or through the Router's Send,
// Tell and Ask, which pass them to the router actor; they are handled in the order
// they arrive, among the messages sent to Router.Ref.

// GetRoutees asks a router for its routees; it answers Routees.
type GetRoutees struct{}

// Routees answers GetRoutees with the router's routees at that moment, in routing
// order.
type Routees struct{ Refs []actor.Ref }

// AddRoutee adds Ref to a router's routees (a no-op when it is one already). The
// router watches it and drops it when it stops. For a pool, Ref need not be a child:
// the pool routes to it but does not supervise it.
type AddRoutee struct{ Ref actor.Ref }

// RemoveRoutee removes Ref from a router's routees. A pool stops a routee it spawned
// once the routee has handled what is queued for it (with actor.PoisonPill).
type RemoveRoutee struct{ Ref actor.Ref }

// AdjustPoolSize changes a pool's size by Change: a positive Change spawns that many
// routees, a negative one removes that many (the most recently added first), as
// RemoveRoutee does. A group ignores it, with a log line.
type AdjustPoolSize struct{ Change int }

// UpdateRoutees replaces all of a router's routees with Refs (duplicates and zero
// Refs are left out): the routees that are not in Refs are removed as by RemoveRoutee,
// the new ones added as by AddRoutee. It is how a source of listings (a cluster's
// membership, a receptionist) keeps a group up to date.
type UpdateRoutees struct{ Refs []actor.Ref }
