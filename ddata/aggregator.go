package ddata

import (
	"math/rand/v2"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
)

// The replication core's aggregators, for cluster nodes: the replicator keeps
// one per read or write in progress and does what it decides.
type (
	peer            = replication.Peer[cluster.UniqueAddress]
	writeAggregator = replication.WriteAggregator[cluster.UniqueAddress]
	readAggregator  = replication.ReadAggregator[cluster.UniqueAddress]
)

// The outcomes of writes and reads.
const (
	writePending     = replication.WritePending
	writeSucceeded   = replication.WriteSucceeded
	writeStoreFailed = replication.WriteStoreFailed
	writeTooFew      = replication.WriteTooFew
	readPending      = replication.ReadPending
	readTimedOut     = replication.ReadTimedOut
	readTooFew       = replication.ReadTooFew
)

// newWriteAggregator plans a write with c among peers (see
// replication.NewWriteAggregator).
func newWriteAggregator(c WriteConsistency, peers []peer, ordered bool, rng *rand.Rand, durable bool, now time.Time) *writeAggregator {
	return replication.NewWriteAggregator(c.l, peers, compareNodes, ordered, rng, durable, now)
}

// newReadAggregator plans a read with c among peers (see
// replication.NewReadAggregator).
func newReadAggregator(c ReadConsistency, peers []peer, rng *rand.Rand, now time.Time) *readAggregator {
	return replication.NewReadAggregator(c.l, peers, compareNodes, rng, now)
}
