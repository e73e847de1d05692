package ddata

import (
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
)

// Defaults of delta propagation (Akka's); see replication.
const defaultMaxDeltaSize = replication.DefaultMaxDeltaSize

// deltaPropagation is the sending side of delta propagation, the replication
// core's for cluster nodes and this package's deltas.
type deltaPropagation = replication.DeltaPropagation[cluster.UniqueAddress, Delta]

func newDeltaPropagation(maxDeltaSize int) *deltaPropagation {
	return replication.NewDeltaPropagation[cluster.UniqueAddress, Delta](maxDeltaSize, compareNodes)
}

// checkDelta decides about deltas fromSeq..toSeq of key from origin, given the
// receiver's envelope for the key (nil when absent), with the core's rules
// (replication.CheckDelta). A nil d is a missing delta: the full value is needed.
func checkDelta(e *envelope, origin cluster.UniqueAddress, d Delta, fromSeq, toSeq uint64) replication.DeltaVerdict {
	r := replication.Received{HasDelta: d != nil, FromSeq: fromSeq, ToSeq: toSeq}
	if d != nil {
		r.Causal = d.Causal()
	}
	if e != nil {
		r.Deleted = e.deleted
		r.Current = e.deltaVersions[origin]
	}
	return replication.CheckDelta(r)
}

// applyDelta applies a delta that checkDelta accepted to e (nil when the key is
// absent: a new envelope is made) and records toSeq for origin. It returns the
// envelope.
func applyDelta(e *envelope, origin cluster.UniqueAddress, d Delta, toSeq uint64) (*envelope, error) {
	if e == nil {
		e = newEnvelope(d.NewData())
	}
	dd, ok := e.data.(DeltaData)
	if !ok {
		return e, mismatch("DeltaData", e.data)
	}
	if err := dd.MergeDelta(d); err != nil {
		return e, err
	}
	cleanup(e.data, e.pruning)
	if toSeq > e.deltaVersions[origin] {
		if e.deltaVersions == nil {
			e.deltaVersions = make(map[cluster.UniqueAddress]uint64)
		}
		e.deltaVersions[origin] = toSeq
	}
	return e, nil
}
