// Package replication is the replication protocol of distributed data (package
// ddata) as pure state machines: it decides, and the replicator actor around it
// does the I/O.
//
//   - Quorum counting (Level, Majority): how many replicas a consistency level needs
//     out of the nodes that count.
//   - Read and write aggregation (Fanout, WriteAggregator, ReadAggregator): which
//     nodes a read or write asks first and which later, when enough have answered,
//     when it has failed, and when it has timed out. Times are arguments.
//   - Gossip (BuildStatus, CompareStatus, ChunkOf): the digests one gossip round
//     sends, chunked past a bound, and what a node answers a peer's digests with.
//   - Delta propagation (DeltaPropagation, CheckDelta): the numbering of local
//     deltas, which nodes each tick sends to (round-robin), the composed delta and
//     sequence range each gets, and whether a received delta continues what the
//     receiver holds, repeats it, or leaves a gap that needs the full value.
//
// The package knows nothing of CRDTs, envelopes, actors or the wire: nodes are any
// comparable type with an order (a type parameter and a compare function), digests
// any comparable type, and deltas any type that composes (Composer). It starts no
// goroutine and reads no clock; the caller passes the current time.
//
//troupe:core
package replication
