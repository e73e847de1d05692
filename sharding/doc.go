// Package sharding is Troupe's cluster sharding: entities (actors with an identity)
// spread over the cluster's nodes, reached by their ID wherever they live, moved when
// nodes join and leave, each alive in one place at a time. It follows Akka's cluster
// sharding, and goes further in one respect: a shard that moves gracefully loses no
// message.
//
// # Starting
//
// Start the extension once per actor system, then each entity type on every node that
// runs it:
//
//	s, err := sharding.Start(sys, sharding.Config{Registry: reg})
//	region, err := s.Start("Counter", sharding.EntityConfig{
//		EntityFactory: func(id sharding.EntityID) *actor.Props { return counterProps(id) },
//	})
//	counter, err := sharding.EntityRefFor[CounterCommand](sys, "Counter", "42")
//	err = counter.Tell(Increment{})
//	n, err := sharding.Ask[int](ctx, counter, Get{})
//
// Get(sys) finds the extension, Sharding.Region a type's region. A node without the
// type's role (EntityConfig.Role) gets a proxy-only region, as StartProxy gives: it
// routes to the entities and hosts none. Regions live at /system/sharding/<type> (or
// <type>Proxy), shards at /system/sharding/<type>/<shard>, entities below their shard,
// named by their (escaped) IDs; an entity learns its ID from EntityIDOf(ctx) or from
// its factory.
//
// Messages reach an entity through its type's region on the sender's node: as an
// Envelope (or through an EntityRef, which sends Envelopes), or as any message the
// type's Extractor places. The default extractor places Envelopes in 1000 shards by a
// hash of the ID. Replies and asks work as with any actor: the entity's ctx.Respond
// reaches the original sender.
//
// With tracing on (actor.Config.TracerProvider), a message keeps the trace context it
// was sent in through the region, the shard and other nodes to its entity: an ask from
// a context with a span, EntityRef.TellContext and SendContext, and what an actor
// handling a traced message sends to a region. Such a message goes through the region
// rather than straight to a local entity, and to another node alone, not in a batch.
//
// # How it works
//
// Each message for an entity names its entity ID and, through the extractor, its shard;
// a shard is a group of entities that live and move together. The region delivers a
// message to the shard if it hosts it, forwards it to the region that does, or, when it
// does not know, buffers it and asks the coordinator. The coordinator, which runs on
// the oldest member with the type's role, decides where each shard lives (through an
// AllocationStrategy, whose types package sharding/placement defines;
// LeastShardStrategy by default), keeps it in its state store, and
// moves shards to even out the load (every RebalanceInterval) or away from a node that
// leaves.
//
// Moving a shard is a hand-off: every region stops routing to the old home and buffers;
// the old home stops the shard's entities with the hand-off stop message; the
// coordinator places the shard again and the buffered messages follow. What the old
// home held back and what the stopping shard had not delivered reach the new home
// first, so each sender's messages arrive in the order sent. Entities do not carry
// their state across: persistent entities (persistence.Props) recover it from their
// journal at the new home.
//
// A region sends what it forwards to a region on another node in batches: it gathers
// the forwards for each such region and sends them as one wire message when the flush
// it sent itself comes back through its mailbox, when a batch holds about 16 KiB, and before
// it handles any message that is not a delivery, so that nothing it does later
// overtakes a forward. A lone message waits for one mailbox step at most; a message
// too large for a batch, a traced one, a StartEntity and the messages of a hand-over
// travel alone.
// The receiving region handles a batch's deliveries in order, each with its sender.
//
// # State stores
//
// The coordinator's state (where shards live) is kept in distributed data
// (StateStoreDistributedData, the default) or in the event journal
// (StateStorePersistence: an event-sourced coordinator, persistence id
// "/sharding/<type>Coordinator"). Remembered entities (RememberEntities) are kept in
// distributed data with durable keys, or in the journal (RememberStoreJournal, one
// history per shard, "/sharding/<type>Shard/<shard>"). RemoveInternalData removes both
// histories for a cluster that is down.
//
// The distributed-data stores use the node's replicator (ddata.Start, before the entity
// types start); for remembered entities to survive a restart of the whole cluster its
// DurableKeys must include "shard-*". On a system without a cluster the coordinator's
// state lives in the coordinator (it never moves) and remembered entities in the
// system's memory: they survive a restart of their shard or region, not of the system.
//
// # Passivation and remembered entities
//
// An entity stops itself for good with Passivate(ctx, StopMessage); messages that come
// meanwhile wait for its next incarnation. Passivation.IdleTimeout and
// Passivation.ActiveEntityLimit (least recently used first) passivate automatically.
// With RememberEntities the running entities of each shard are stored and start again
// without a message wherever the shard starts (after a rebalance, a crash, a restart
// of the whole cluster); an entity that stops without Passivate starts again after
// EntityRestartBackoff.
//
// # Shutting down
//
// Coordinated shutdown hands every shard of the node's regions off (phase
// cluster-sharding-shutdown-region) before the node leaves the cluster; GracefulShutdown
// does it for one region. A hand-off that does not finish in the phase's time is cut
// short: the node stops its regions, shards and entities before it leaves (or, if they
// do not stop either, downs itself, so that the others wait the removal margin). A node
// whose membership ends (downed by the split-brain
// resolver, or crashed) stops its regions, shards and entities at once: the rest of the
// cluster takes them over after the removal margin.
//
// # Observing
//
// Queries, as messages to a region: GetCurrentRegions, GetShardRegionState,
// GetShardRegionStats, GetClusterShardingStats. Rebalance events (ShardAllocated,
// ShardHandOffStarted, ShardHandOffCompleted, ShardHandOffFailed) go to the event
// stream of the coordinator's node; Sharding.Stats counts them and every drop.
//
// # Metrics
//
// With actor.Config.MeterProvider set, each node reports per entity type the shards
// and entities it hosts, entities started, passivations, buffered and dropped messages,
// and, where the coordinator runs, allocations, hand-offs started, completed and failed
// and their durations (troupe.sharding.*, listed in docs/operations.md). No series is
// per shard or per entity.
//
// # The protocol cores
//
// The coordinator, the region and the shard are plain state machines: they take inputs
// (messages, timers firing, the current time where it matters, store results) and
// return decisions (messages to send, state to store, timers to start), with no
// goroutine, clock or I/O of their own. They are tested on their own, and together in a
// seeded simulation that delivers their messages in random order and checks that no
// message is lost, none arrives twice, each sender's messages reach an entity in order,
// and an entity never runs in two places. The actors are thin shells around them.
//
// # What is guaranteed
//
//   - At most one live incarnation of an entity, while the split-brain resolver (and
//     its removal margin) is in charge, or with a lease per shard (EntityConfig.Lease).
//   - A sender's messages to an entity, through one region, arrive in the order sent,
//     also across graceful hand-offs (a hand-off that completes within its timeout,
//     while the coordinator does not move). The same holds for a sender's messages
//     through EntityRefs of the entity. Between the two paths it does not: a message
//     told to the region may be overtaken by the same sender's later EntityRef
//     message, since EntityRefs skip the region when it would route the message
//     straight on: to the entity running on this node, or into the batch for the
//     region of the entity's node (as two different recipients, the region and the
//     entity or the batch, are not ordered against each other).
//   - Delivery is at most once, as between any two actors: end-to-end reliability
//     needs acknowledgements (persistence.AtLeastOnceDelivery).
//
// # What can be lost, and when
//
// Every drop is reported (the message goes to dead letters, is counted in Stats and
// logged at a bounded rate), never silent. A region's or shard's drop is a dead letter
// addressed to it, with the reason as its Reason, and names what the user sent (the
// Envelope of the entity and its message, once placed); a batch of deliveries that
// becomes a dead letter is one per delivery, each with its own sender:
//   - A message the extractor cannot place (an empty ID, an extractor that panics):
//     Stats.Unplaceable.
//   - A region buffers at most BufferSize (100 000) messages in all while shard homes
//     are unknown; beyond that new messages are dropped with ErrBufferFull
//     (Stats.BufferDropped). A shard holds at most as many for entities that are
//     stopping or starting.
//   - A message that cannot be serialized for the node that hosts its entity (its type
//     is not registered), and a region or shard that stops with messages it could not
//     deliver (a graceful shutdown that did not finish in time, a shard that failed):
//     Stats.Undelivered.
//   - A region (or proxy) that leaves while it holds messages for a shard that no
//     region can host (the allocation strategy gives the shard no home, or no other
//     region is left): the coordinator tells it so, and it drops them (ErrNoRegion,
//     Stats.Undelivered) instead of waiting for a home until its shutdown phase times
//     out. This includes what a shard's last home buffered during its hand-off.
//   - A message for another node that the transport refuses (its queue to that node is
//     full, the node is gone): Stats.Undelivered, every message of a refused batch.
//   - A message from another node that does not decode here (its type is not
//     registered on this node): Stats.Undelivered. A whole batch of deliveries that
//     does not decode (a sender in it that this node's transport will not resolve, an
//     actor of a third node beyond remote.Config.MaxUnverifiedPeers): the transport's
//     dead letters, counted in remote's Stats and logged there.
//   - An entity that ignores the hand-off stop message is stopped hard after
//     max(HandOffTimeout - 5 s, 1 s); messages already in its mailbox are lost with it.
//     A persistent entity stopped by actor.PoisonPill (the default stop message) also
//     loses the commands it had stashed while persisting: give persistent entities a
//     stop command of their own (HandOffStopMessage, and the Passivate stop message)
//     that calls ctx.Stop(ctx.Self()); it waits in the stash behind those commands.
//   - A node that crashes loses what its regions and shards held and what was in flight
//     to it; asks to its entities fail at their deadline.
//   - A shard that loses its lease (EntityConfig.Lease) stops at once with its
//     entities: what was in their mailboxes and the shard's goes to dead letters.
//   - An entity that stops by itself (not by Passivate) loses what reaches it before
//     its shard has seen it stop, whether sent through the shard or directly by the
//     region or an EntityRef (the direct routes): dead letters.
//   - A region that leaves waits until the coordinator says it hosts nothing and every
//     hand-over it sent is taken by the next home; when that does not happen before
//     its shutdown phase ends (the coordinator or the next home unreachable), it stops
//     with what it still holds: Stats.Undelivered, as for any shutdown out of time. A
//     region whose registration no coordinator answered stops after twice
//     RetryInterval; should a coordinator register it after all (its registration
//     that late), what other regions forward to it for a shard given to it meanwhile
//     is lost. So it is for a region that never registered and stopped on one
//     coordinator's word while its registration was on its way to the next (the
//     coordinator moving or crashing as the region leaves).
//   - A batch that reaches a node whose region of the type has stopped (the node stays
//     up): on that node, a dead letter per delivery, addressed to the region's path,
//     counted in that system's dead letters (not in the sender's Stats).
//   - A message sent through a region that has stopped: a dead letter to the region.
//     An EntityRef's message is published as the Envelope the region would have placed
//     (the entity's ID and the message), as a message sent to the region as an
//     Envelope is; so is a message the region handed to a shard that stopped before it
//     arrived (the shard failed, or lost its lease).
//
// Expected dead letters are counted but not logged: a region's registration sent to a
// member where the coordinator does not run, and a region's reports to a coordinator
// that stopped meanwhile (the next coordinator learns the same from the regions).
package sharding
