package ddata

import (
	"errors"

	"github.com/troupe-go/troupe/cluster"
)

// Sentinel errors. Every error this package returns wraps one of them (or one of
// package serialization's), so callers classify failures with errors.Is.
var (
	// ErrTypeMismatch reports a merge, delta or key used with a value of another
	// type: merging a *GCounter into an *ORSet, applying an ORSet delta to a counter,
	// or reading a key's value as the wrong type.
	ErrTypeMismatch = errors.New("ddata: type mismatch")

	// ErrInvalidData reports decoded data that breaks its type's invariants
	// (unsorted or duplicate entries, a dot the version vector does not cover, a
	// node without an address, ...). Such data comes from a buggy or hostile peer
	// and is rejected whole.
	ErrInvalidData = errors.New("ddata: invalid data")

	// ErrInvalidConsistency reports a consistency level that cannot be used, such
	// as ReadFrom(1) or a majority with a negative timeout.
	ErrInvalidConsistency = errors.New("ddata: invalid consistency level")
)

// ReplicatedData is a value that replicas can change independently and merge: a
// CRDT (conflict-free replicated data type). Every type in this package implements
// it, and so must a user-defined type that the replicator is to hold.
//
// # Merge laws
//
// MergeData must be commutative, associative and idempotent on the value's state:
// merging the same set of values in any order, any grouping, any number of times,
// gives the same state. That is what lets replicas exchange values in any order and
// converge.
//
// # Ownership
//
// Values are mutable and owned by whoever holds them; they are not safe for
// concurrent use. The rules, for every type in this package and for user types:
//   - An operation (Increment, Add, Put, ...) and MergeData change the receiver in
//     place.
//   - MergeData(other) only reads other and keeps no reference into it; the caller
//     still owns other and may change it afterwards.
//   - CloneData returns a deep copy that shares nothing mutable with the receiver
//     (the pending delta of a DeltaData is not copied). The replicator hands clones
//     to readers, so a reader may change what it got without affecting anyone.
//   - Accessors that return a nested CRDT (ORMap.Get) return the holder's own value:
//     read it, clone it to keep it, and change it only through the holder
//     (ORMap.Update), so that the holder records the change.
type ReplicatedData interface {
	// MergeData merges other into the receiver. other must have the receiver's
	// dynamic type; otherwise MergeData returns an error wrapping ErrTypeMismatch
	// and leaves the receiver unchanged. For values of the same type it must not
	// fail.
	MergeData(other ReplicatedData) error

	// CloneData returns an independent deep copy of the receiver's state, of
	// the receiver's dynamic type.
	CloneData() ReplicatedData
}

// DeltaData is ReplicatedData whose operations record a delta: a small value that
// carries only the change, so that replicas can exchange it instead of the whole
// state. The holder takes the delta after a change (TakeDelta) and sends it; a
// receiver applies it with MergeDelta.
//
// The law: if a replica R has merged the state S0 that the originating replica had
// before its operations, then R.MergeDelta(delta) gives the same state as
// R.MergeData(S1), S1 being the originator's state after the operations. For types
// whose Delta reports Causal, the replicator delivers each originator's deltas in
// order (a gap falls back to a full-state merge) to keep that precondition.
type DeltaData interface {
	ReplicatedData

	// TakeDelta returns the delta of the operations since the last TakeDelta and
	// forgets it. changed is false when there was no operation. A value that
	// changed but could not keep a delta (it grew past the type's bound) returns
	// a nil delta with changed true: the change must travel as full state.
	TakeDelta() (d Delta, changed bool)

	// MergeDelta applies a delta taken from another replica of the same type. A
	// delta of another type is an error wrapping ErrTypeMismatch and leaves the
	// receiver unchanged.
	MergeDelta(d Delta) error

	// NewDelta returns an empty delta of the type's delta type. Decoders use it
	// to learn the concrete delta type of a nested value.
	NewDelta() Delta
}

// Delta is a change recorded by a DeltaData operation. A delta is immutable once
// TakeDelta returned it, so it can sit in a send buffer and be shared.
type Delta interface {
	// Compose returns a delta with the effect of the receiver followed by later
	// (a later delta from the same originator). Neither input changes; the
	// result may share their immutable parts. A delta of another type is an
	// error wrapping ErrTypeMismatch.
	Compose(later Delta) (Delta, error)

	// NewData returns a new, empty full-state value that this delta applies to;
	// a replica that does not hold the key yet starts from it.
	NewData() DeltaData

	// Causal reports whether deltas of this type must be applied in order per
	// originating node (ORSet and the maps built on ORMap). Deltas that are not
	// causal may be applied in any order, and more than once.
	Causal() bool

	// Size is a measure of the delta's size: the number of entries or
	// operations in it. The replicator sends a full state instead of a delta
	// bigger than its max-delta-size.
	Size() int
}

// PrunableData is ReplicatedData that keeps state per node (the counters, the
// version vector, ORSet and the maps). When a node leaves the cluster for good, its
// entries are folded into another node's so that the value does not grow for ever
// (pruning, run by the replicator in two leader-driven steps).
type PrunableData interface {
	ReplicatedData

	// ModifiedByNodes returns the nodes that hold state in the value, in
	// (Addr, UID) order.
	ModifiedByNodes() []cluster.UniqueAddress

	// NeedPruningFrom reports whether removed holds state in the value.
	NeedPruningFrom(removed cluster.UniqueAddress) bool

	// Prune moves removed's state into into's, keeping what the value means (a
	// counter's value does not change), and drops removed. It records no delta:
	// a pruned value travels as full state.
	Prune(removed, into cluster.UniqueAddress)

	// PruningCleanup drops removed's state without moving it. A replica applies
	// it to its own value and to values it receives once the pruning has been
	// performed elsewhere, so that removed's state is counted once, in the
	// pruned node's entry.
	PruningCleanup(removed cluster.UniqueAddress)
}
