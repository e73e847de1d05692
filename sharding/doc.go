// Package sharding is Troupe's cluster sharding: entities (actors with an identity)
// spread over the cluster's nodes, reached by their ID wherever they live, moved when
// nodes join and leave. It follows Akka's cluster sharding.
//
// This is the first part of the package: the allocation strategy, which users may
// replace, and the protocols of sharding as pure state machines. The actors that run
// them (a region per node and entity type, shards as its children, entities as the
// shards' children, a coordinator as a cluster singleton) come next; so do Start,
// Config and typed entity references.
//
// # How it works
//
// Each message for an entity names its entity ID and its shard ID; a shard is a group of
// entities that live and move together, and an entity's shard must never change while
// the cluster runs. A message goes to the region on the sender's node. The region
// delivers it to the shard if it hosts it, forwards it to the region that does, or, when
// it does not know, buffers it and asks the coordinator. The coordinator decides where
// each shard lives (through an AllocationStrategy), remembers it in replicated or
// persistent storage, and moves shards to even out the load (rebalancing) or away from
// a node that leaves.
//
// Moving a shard is a hand-off: every region stops routing to the old home and buffers;
// the old home stops the shard's entities; the coordinator places the shard again and
// the buffered messages follow. Troupe's hand-off loses nothing Akka's would drop: what
// the old home held back, and what the stopping shard had not delivered, reaches the new
// home first, so each sender's messages arrive in the order sent.
//
// # Allocation
//
// AllocationStrategy decides where a shard without a home goes and which shards to move.
// LeastShardStrategy, the default, puts a new shard on the region with the fewest shards
// (preferring members that are not leaving, newer app versions, then older members) and
// moves shards from the fullest regions to the emptiest, with Akka's classic algorithm or
// its newer one that reaches an even spread in one or two rounds (LeastShardConfig). It
// does not move shards during a rolling upgrade (app versions differ), while a member
// is unreachable or joining, or while earlier moves still run (newer algorithm).
//
// # The protocol cores
//
// The coordinator, the region and the shard are plain state machines: they take inputs
// (messages, timers firing, the current time where it matters, store results) and
// return decisions (messages to send, state to store, timers to start), with no
// goroutine, clock or I/O of their own. They are tested on their own, and together in a
// seeded simulation that delivers their messages in random order and checks that no
// message is lost, none arrives twice, each sender's messages reach an entity in order,
// and an entity never runs in two places.
//
// # What can be lost, and when
//
// Every drop is reported (the message goes to dead letters, is counted and logged), never
// silent:
//   - A region buffers at most buffer-size (100 000) messages in all while shard homes
//     are unknown; beyond that new messages are dropped with ErrBufferFull. A shard
//     holds at most as many for entities that are stopping or starting.
//   - A region that must stop before its buffered messages could go anywhere (its
//     graceful shutdown timed out) drops them.
//   - An entity that ignores the hand-off stop message is stopped hard after
//     max(handoff-timeout - 5 s, 1 s); messages already in its mailbox are lost with it.
//   - A node that crashes loses what its regions and shards held and what was in flight
//     to it.
//
// Order across a hand-off is guaranteed when the hand-off completes within its timeout
// and the coordinator does not move meanwhile; otherwise messages are still delivered,
// in the best order the regions know.
package sharding
