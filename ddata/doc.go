// Package ddata is Troupe's distributed data: replicated values (CRDTs) that every
// node of a cluster can change locally, without coordination, and that converge
// when the nodes exchange them. It holds the values, their merges and deltas, and
// the replicator: one actor per node that keeps the node's replicas and
// exchanges them with the replicators of the other Up members.
//
// # Starting the replicator
//
// Start starts it once per actor system, at /system/ddataReplicator, after remote
// and cluster; Get finds it:
//
//	repl, err := ddata.Start(context.Background(), sys, ddata.Config{
//		Cluster:  c,   // from cluster.Start
//		Registry: reg, // the registry of remote.Config: messages and values cross the wire through it
//	})
//
// Zero Config fields mean Akka's defaults: gossip every 2s, subscribers notified
// every 500ms, deltas on (max 50 per composed delta), 500 keys per gossip chunk,
// pruning every 120s after 300s of dissemination, no durable keys. Start registers
// the package's types and the replicator's messages in the registry; a user CRDT
// (or another instantiation of a generic one) must be registered by the
// application, or updates of it fail with serialization.ErrUnregistered.
//
// # Two ways to call
//
// From plain Go code the calls block, take a context first and return sentinel
// errors:
//
//	cart := ddata.NewKey[*ddata.ORSet[string]]("cart-42")
//	self := repl.SelfUniqueAddress()
//	err := ddata.Update(ctx, repl, cart, ddata.WriteMajority(3*time.Second, 0), nil,
//		func(s *ddata.ORSet[string]) (*ddata.ORSet[string], error) { s.Add(self, "apples"); return s, nil })
//	items, err := ddata.Read(ctx, repl, cart, ddata.ReadMajority(3*time.Second, 0))
//
// From inside an actor the Send forms (SendRead, SendUpdate, SendDelete, SendKeys)
// return at once and the reply arrives as a typed message (ReadResponse[T],
// UpdateResponse[T], DeleteResponse[T], KeysResponse) carrying a request context
// of the caller's choice. Both report the same outcomes: nil, or an error
// wrapping ErrNotFound, ErrTimeout, ErrNotEnoughReplicas, ErrDeleted,
// ErrModifyFailed, ErrStoreFailed, ErrTypeMismatch (a key id used with two types),
// ErrInvalidConsistency or serialization.ErrUnregistered. Subscribe sends an actor Changed[T] when the
// value changes (and Deleted[T]). (Akka's Get is Read here: Get is the extension's
// lookup, as in every Troupe extension.)
//
// An update is applied to the local replica first, so a node always reads its own
// writes, and then sent as its consistency level asks; a timeout does not undo
// it. A deleted key stays deleted for ever, on every node.
//
// # Consistency levels
//
// Local, From(n) (exactly n replicas, the local one included), Majority
// (min(N, max(N/2+1, minCap)) of the N Up members), MajorityPlus and All. Only Up
// members with the Role count; All and MajorityPlus leave Exiting members out. A
// downed member stops counting at once, and a node restarted on the same address
// counts once: its new incarnation, from its MemberUp.
// With no other member, Majority and All act as Local. A read or write goes first
// to the fewest nodes needed (reachable ones first, shuffled) and, if they have not
// answered after a fifth of the timeout, to up to 10 more. A read merges the
// replies and writes the merge into the local replica before it answers (read
// repair).
//
// # How values spread
//
// Besides the writes of non-local levels: deltas of local changes go every
// max(GossipInterval/5, 200ms) to a few members in turn, and each GossipInterval
// the replicator sends one random member the digests of its keys (anti-entropy;
// in chunks when there are many keys), which answers with the values that differ.
// An idle cluster sends digests only. When a member is removed, pruning folds the
// data it contributed into the oldest member's entries, so a counter's value
// stays and its state stops growing with dead nodes.
//
// Keys matching Config.DurableKeys are stored in badger in Config.DurableDir (a
// synced write, batched when many arrive; an update of one succeeds once stored)
// and loaded before the replicator serves anything, so they survive a restart of
// the whole cluster.
//
// # Which type for what
//
//   - GCounter: a count that only grows (events seen). PNCounter: one that also
//     shrinks (stock, sessions).
//   - GSet: a set that only grows (ids ever seen). ORSet: a set with removes, where
//     an add concurrent with a remove wins (a cart, a group's members).
//   - Flag: a boolean that, once on, stays on. LWWRegister: one value, replaced
//     whole, the latest timestamp winning (configuration, a coordinator's state).
//   - ORMap: a map of CRDTs; LWWMap (values replaced whole), PNCounterMap (a counter
//     per key) and ORMultiMap (a set per key) are ready-made ones.
//   - VersionVector: a vector clock, also a CRDT.
//
// A user-defined type joins them by implementing ReplicatedData (and DeltaData and
// PrunableData when it can) and being registered with serialization.Register in the
// replicator's registry.
//
// # Keys
//
// A Key[T] names a value and carries its type: NewKey[*ORSet[string]]("cart-42")
// cannot be read as a counter. AnyKey is a key of any type, for the replicator's
// tables.
//
// # Ownership
//
// Values are mutable and owned by their holder; operations change them in place and
// record a delta, so that an Add to a set of 100,000 elements costs O(1) and its
// delta is a few dozen bytes, not a copy. MergeData reads its argument and keeps no
// reference to it; CloneData gives an independent copy. ReplicatedData states the
// rules exactly. Nothing here is safe for concurrent use: one replicator owns each
// value, and hands clones to readers.
//
// # Deltas
//
// The types with deltas (GCounter, PNCounter, GSet, ORSet and the ORMap family)
// implement DeltaData: after an operation the holder takes the delta (TakeDelta)
// and sends it; a receiver applies it (MergeDelta). ORSet and the ORMap family need
// each node's deltas in order (Delta.Causal): the replicator numbers them per key,
// and a receiver that finds a gap asks for the full value.
//
// # Element types and encodings
//
// Every value and delta is encoded with msgpack through a serialization.Registry,
// under names given by RegisterTypes (built-in types and common instantiations) or
// the Register* functions (other instantiations, such as
// RegisterORSet[MyType](reg, "myapp.ORSet.MyType")). Encodings are deterministic
// (equal values give equal bytes: sets, maps and nodes are written in sorted order,
// and maps inside user values in the order of their encoded keys), so that
// replicas compare Digests instead of values. Element and key types must be values
// whose encoding is a function of their value (no pointers, no NaN). Decoding
// checks every invariant of the type and rejects a value that breaks one with an
// error, never a panic: values come from peers.
//
// # Known limits, as in Akka
//
// An ORMap key that one replica removes while another updates it stays, and its
// value merges what each side still holds, which may include state from before the
// remove; a value re-created after a remove may merge with a stale copy of the old
// one. Use fresh keys where that matters. Convergence of ORSet deltas across
// originators can need the replicator's full-state gossip: an add that reaches a
// replica after a concurrent remove from another node shows until gossip merges
// the remover's state.
//
// # Metrics
//
// With actor.Config.MeterProvider set, the replicator records the duration of reads
// and of writes (Update, Delete) and counts their failures by consistency level, and
// reports the keys it holds, the bytes of values and deltas it sends to others, and
// the counters of Stats (troupe.ddata.*, listed in docs/operations.md).
//
// # What can be lost, and when
//
// Values merge; nothing is dropped silently. What can be lost:
//   - Everything but durable keys, when every node holding a value stops: the
//     replicas live in memory. A durable key's acknowledged changes survive.
//   - An update acknowledged with WriteLocal (or one that timed out) lives only on
//     its node until deltas or gossip carry it on; if that node crashes first, it
//     is gone. Majority writes and reads together see every acknowledged write.
//   - A durable update whose store failed (ErrStoreFailed, counted in
//     Stats.StoreFailures and logged) is in memory only; a restart of its node
//     before the value is stored again (any later change stores it) loses it.
//   - A value or delta from another node that does not decode, breaks its type's
//     invariants or holds another type than the key's is refused (counted in
//     Stats.InvalidData, logged at a bounded rate); the rest of its message is used
//     and gossip brings the key again. Messages claiming another sender, and gossip
//     from non-members, are refused whole (Stats.Ignored).
//   - A message to another replicator the transport refuses (queue full, larger
//     than its frame, peer gone) is counted in Stats.SendFailures and logged;
//     gossip repeats what it carried. A single value larger than the transport's
//     frame size cannot be replicated (Stats.TooLarge).
//   - Replies to an actor that stopped become dead letters, counted and published but
//     not logged (the operation itself was carried out); requests queued when
//     the replicator stops get no reply (blocking calls return ErrStopped).
//   - A value that records more than 1024 operations between two propagation
//     ticks drops its delta and travels as full state (nothing is lost, it costs
//     bandwidth). Data of a removed node is folded into another node's entry by
//     pruning, never dropped; a replica that was away longer than the pruning
//     marker's time to live (Config.PruningMarkerTimeToLive, 6h) may bring a removed
//     node's state back and count it twice.
package ddata
