// Package badgerjournal is Troupe's default persistence plug-in: a
// persistence.Journal and persistence.SnapshotStore in one embedded badger
// (github.com/dgraph-io/badger/v4) database.
//
// Open one Store per directory and give it to persistence.Config as both
// journal and snapshot store. Open fails with ErrLocked when another open
// store, in this process or another, holds the directory. Close stops the
// writer, waits for the writes queued, and closes the database.
//
// # After a crash
//
// A crash (kill -9, power loss) can leave an empty memtable or value-log file
// that badger refuses to open (badger issue 2207). Such a file holds no data,
// so Open removes it and logs a warning naming it. Open never repairs a file
// that may hold acknowledged events: an empty table or manifest, or any other
// file badger refuses, fails Open with ErrDamaged, naming the file and the fix.
//
// # Group commit
//
// Concurrent WriteMessages calls from many entities are queued to one
// writer goroutine, which packs everything waiting into one badger
// transaction; badger writes and, with SyncEachBatch, syncs it before every
// caller in it is answered. Batch sizes
// follow the load, so one entity writing alone pays one sync per write while
// a thousand share each sync. Each atomic write lies entirely inside one
// transaction, so it is stored all or none; a write too large for one badger
// transaction is rejected with persistence.ErrTooLarge. A write whose first
// sequence number is not above the highest of its persistence id (another
// writer has used it) is rejected with persistence.ErrSequenceConflict, and so
// are the later writes of that persistence id in the same call.
//
// Durability is Config.Durability: SyncEachBatch (the default) answers a
// writer only after its events are on disk; NoSync answers once they are in
// badger's memory-mapped log, which survives a crash of the process but not
// of the machine.
//
// # Storage layout
//
// The layout is documented next to the code, in records.go; it is format
// version 2, and Open refuses a database of another version with
// ErrIncompatibleFormat. Each persistence id gets a numeric id when its
// first event is written, stored in the same transaction in both
// directions; event keys are a kind byte, that id and the sequence number,
// 17 bytes in big-endian order, so inserts are cheap and a replay is one
// forward scan. Snapshots, the highest sequence numbers kept by deletes, the
// id mappings and the tag index live under separate key prefixes. Each
// event's record keeps its writer id (persistence.Record.WriterID: the
// writing entity's full actor path with node address and incarnation uid),
// which a replay returns. Every stored value carries a CRC-32C over its key
// and bytes: a damaged record surfaces as a *persistence.CorruptRecordError
// that names its persistence id and sequence number. The highest sequence number of an id is that of
// its last event, or the one recorded when events were deleted, whichever
// is higher, so it survives deleting every event.
//
// Tagged events are also entered in a tag index under an offset that grows
// in commit order, which EventsByTag reads.
//
// The store, and badger with it (its informational messages at debug level),
// logs through Config.Logger; by default through the logger of the actor system
// persistence.Start attaches the store to, and until then warnings and errors go
// to standard error.
package badgerjournal
