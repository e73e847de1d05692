// Package ddata is Troupe's distributed data: replicated values (CRDTs) that every
// node of a cluster can change locally, without coordination, and that converge
// when the nodes exchange them. This package holds the values, their merges and
// deltas, and the pure decision logic of the replicator (consistency levels, read
// and write quorums, gossip, delta propagation, pruning of removed nodes, change
// notification); it starts no goroutine and reads no clock.
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
// PrunableData when it can) and being registered with serialization.Register.
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
// # What can be lost, and when
//
// Values merge; nothing is dropped silently. A value that records more than 1024
// operations between two TakeDelta calls drops its delta and reports a change
// without one, which travels as full state. Data of a removed node is folded into
// another node's entry by pruning, never dropped; a replica that was away longer
// than the pruning marker's time to live may bring a removed node's state back.
package ddata
