package sharding

import (
	"context"
	"time"
)

// Lease is a distributed lock with an owner, as Akka's coordination lease: at most one
// owner holds a lease of a given name at a time. It has the shape of lease.Lease (the
// cluster's lease package), which satisfies it.
//
// With EntityConfig.Lease set, a shard acquires the lease named
// "shard-<type>-<shard>" before it starts any entity, and releases it when it
// stops (after a hand-off too, so that the shard's next home can take it). A shard that
// loses its lease stops at once, with its entities; the region starts it again when a
// message comes for it (with RememberEntities, after the shard failure backoff), and it
// waits for the lease again. A lease is a last line of defence against two homes of one
// shard (a partition without a split-brain resolver, two clusters by mistake).
type Lease interface {
	// Acquire tries to acquire the lease: true when the owner holds it, false when
	// another owner does, an error when the store could not be asked. After it returns
	// true, onLost is called (once, from another goroutine) if the lease is lost.
	Acquire(ctx context.Context, onLost func(error)) (bool, error)
	// Release gives the lease up.
	Release(ctx context.Context) (bool, error)
	// CheckLease reports whether the owner holds the lease, without asking the store.
	CheckLease() bool
}

// LeaseFactory returns the lease of leaseName for ownerName (the node's address,
// host:port). Sharding calls it once per shard start. Lease names are
// "shard-<type>-<shard>"; a store shared by several clusters needs a prefix per cluster,
// which the factory adds.
type LeaseFactory func(leaseName, ownerName string) (Lease, error)

// Lease timings.
const (
	// leaseRetryInterval is how long a shard waits before it tries again to acquire a
	// lease it could not get.
	leaseRetryInterval = time.Second
	// leaseCallTimeout bounds one Acquire or Release.
	leaseCallTimeout = 10 * time.Second
)

// leaseName is the name of a shard's lease. It is the same on every node (a factory
// that serves several clusters from one store adds a prefix of its own).
func leaseName(typeName string, shard ShardID) string {
	return "shard-" + typeName + "-" + string(shard)
}

// Messages of the lease to its shard.
type (
	leaseAcquired struct {
		lease Lease
		ok    bool
		err   error
	}
	leaseLost  struct{ err error }
	leaseRetry struct{}
)
