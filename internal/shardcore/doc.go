// Package shardcore holds cluster sharding's three protocols as pure state machines:
//
//   - the coordinator (Coordinator): which region hosts each shard (through the
//     placement.AllocationStrategy it is given; LeastShard is the default), the
//     hand-off of a shard that moves, registration and departure of regions, and the
//     coordinator's durable state (CoordState and its events, which it asks to store
//     before it acts on them);
//   - the region (RegionCore): where each shard lives, the messages that wait for a
//     shard's home, the hand-over by which a shard's old home gives the messages it
//     holds to the new one, in each sender's order, and a graceful leave;
//   - the shard (ShardCore): its entities' lifecycle, passivation (explicit, idle, and
//     least-recently-used beyond a limit), the messages that wait for an entity's next
//     incarnation, remembered entities and their restart, and the shard's hand-off.
//
// The messages between regions and the coordinator (Register, GetShardHome,
// HostShard, BeginHandOff, ...) and the coordinator's stored state and events are
// defined here, with their wire names (troupe.sharding.*.v1) and their encoding.
//
// Each core takes inputs (a message, a member view, a timer's fire, a store's result)
// and, where time matters, the current time as an argument, and returns decisions for
// its shell in package sharding to carry out: messages to send or deliver, actors to
// start or stop, timers to start or cancel (TimerOp, keyed by TimerKey), state to
// store, messages to give to dead letters, problems to log. A message type M stands for
// the shell's envelope; the cores never look inside it.
//
// Nothing here starts a goroutine, reads a clock or does I/O. The lock-and-atomics
// fast path by which a region and EntityRefs reach running entities directly stays
// with the actors in package sharding (fastpath.go, simulated by
// sharding/sim_fast_test.go); the shard core only says when it may be used
// (ShardCore.FastPathAllowed, ShardCore.Direct).
//
// # Rules it keeps
//
//   - A shard has at most one home; it moves only through a hand-off that every
//     region has acknowledged (BeginHandOff), so that no region sends it messages
//     while it stops.
//   - The coordinator stores each change of homes before it tells anyone; while a
//     store is pending it holds its other inputs back, in order.
//   - No message is dropped silently: a message a core cannot keep is returned as
//     Dropped, with the reason, for dead letters.
//   - A shard's next home delivers what its previous home held (the hand-over) before
//     anything newer.
//
//troupe:core
package shardcore
