// Package lease is a distributed lock with an owner and a time to live, after Akka's
// coordination lease. The cluster's lease-majority split-brain strategy uses one to
// decide which side of a partition survives (the side that acquires it); a singleton
// or a shard can use one to make sure at most one instance runs even when the
// split-brain resolver's timing assumptions fail.
//
// Lease is the interface a store implements. It is shaped for a store behind the
// network (a database table, a Kubernetes object): Acquire and Release take a context
// and may take time or fail, and losing a lease that was held (the store could not be
// reached for the heartbeat timeout, or the lease expired there) is reported later,
// through the callback given to Acquire.
//
// MemoryStore is an in-memory store for tests, shared by the nodes of one process,
// which can be made unavailable and can take a lease away.
package lease
