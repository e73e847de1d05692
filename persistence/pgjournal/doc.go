// Package pgjournal is a persistence plug-in on PostgreSQL: a
// persistence.Journal, persistence.SnapshotStore and persistence.TagQuerier
// in one Store, through a pgx (github.com/jackc/pgx/v5) connection pool.
// Every node of a cluster opens its own Store on the same database, so a
// persistent entity keeps its state when it moves between machines.
//
//	store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: "postgres://app@db/app"})
//
// Give the store to persistence as both journal and snapshot store, and
// close it after the actor system has shut down.
//
// # Schema
//
// Open creates the tables, and migrates them when a newer version of this
// package needs it, from SQL embedded in the package (migrations/*.sql),
// recording each version in troupe_schema_version. Teams that migrate
// themselves set Config.ManualMigration and run Migrate, or the SQL of
// Migrations, with their own tools; Open then only checks the version. A
// database migrated by a newer version of this package is refused with
// ErrSchemaTooNew. Config.Schema puts the tables in a PostgreSQL schema of
// their own. The tables and indexes are described in docs/persistence.md
// and in the migration files.
//
// # Group commit
//
// Concurrent writes of many entities share one transaction: whatever is
// queued while earlier commits run goes to the server as one transaction
// (array-valued statements, or COPY for a large batch) in one round trip,
// and commits once; every writer is answered after the commit.
// Config.WriteConcurrency commits may be in flight at once. Each atomic
// write is stored all or none, and a write rejected on its own (an invalid or
// too large write, a sequence-number conflict with the later writes of its
// persistence id in its call) does not affect the others in the transaction.
//
// # Two writers of one persistence id
//
// (persistence id, sequence number) is the events' primary key, and a
// write whose persistence id already holds an event at or above the write's
// first sequence number, or a higher one that a delete kept, is rejected;
// so is a write into a gap (numbers another writer skipped, as after a
// write the journal rejected) below a higher event: the write that left
// the gap recorded its highest sequence number, where every write looks.
// (A write into a gap that commits while the write that leaves the gap is
// in flight goes unseen: neither transaction sees the other's rows. The
// persistence runtime leaves a gap only when a write of an entity is
// rejected and a later one of the same journal call is stored.)
// If two nodes ever run the same entity (a split brain the resolver did not
// stop), both write the same next sequence number: the second write fails
// with persistence.ErrSequenceConflict, and so do the later writes of that
// persistence id in the same call, so nothing of the second writer lands on
// top of the first's events; the persistence runtime then stops that
// entity, and the two histories never interleave. When the two transactions
// run at the same time, the second waits for the first on the primary key
// and fails once it commits; the store then runs its batch again, and only
// the writes that lost are rejected (Stats.Reruns counts these). Writes
// check by reading, and lock no row per persistence id, so writers of
// different entities never wait for each other. Every event row keeps its
// writer's id (writer_id: the writing entity's full actor path with node
// address and incarnation uid), so the rows of two writers can be told
// apart.
//
// # Reading
//
// Replays and EventsByTag read in pages of Config.ReplayPageSize events,
// one query each, so no history is held in memory whole. Deleting events
// removes their rows but keeps the highest sequence number (in
// troupe_persistence_id, a row written by deletes and by writes that leave
// a gap below them), so a restarted
// entity never reuses one, and a write below it fails like a write over a
// stored event. Every row carries a CRC-32C over its columns: a
// damaged or hand-edited row fails the replay with a
// *persistence.CorruptRecordError naming its persistence id and sequence
// number. Tag offsets are handed out in commit order across all nodes, so a
// reader resuming from the last offset it saw plus one misses nothing.
//
// The records handed out are the caller's: nothing in them refers to the
// connection's buffers. Payloads of up to 512 bytes are copied into 8 KiB
// blocks that consecutive records share, one allocation per block rather
// than per event; a caller that keeps a record keeps its block alive.
//
// # Failures
//
// Open fails within Config.ConnectTimeout, with ErrUnavailable, when the
// server cannot be reached, and with ErrInvalidConfig for a connection
// string that does not parse. When the connection breaks or the server
// stops, the calls in progress fail with ErrUnavailable: the writers of the
// group commit in flight cannot know whether it committed, and their
// entities stop, as persistence's rules say. The first call that finds
// its connection broken makes the pool drop all its connections (those in use
// when they come back), which are likely broken too: pgx checks only
// connections idle for more than a second before it hands them out, so after a
// quicker restart each would otherwise fail a call of its own. Later calls open
// new connections, and succeed again once the server is back.
//
// # Metrics
//
// Config.MeterProvider, when set, receives the counters of Stats: group commits by
// outcome, writes, events, sequence conflicts and reruns (troupe.pgjournal.*, listed
// in docs/operations.md).
//
// # What can be lost, and when
//
// Nothing acknowledged: a write is answered only after its transaction
// committed, as durably as the server's synchronous_commit setting makes a
// commit. A write whose call fails as a whole (ErrUnavailable, a timeout, a
// server error) may or may not have been stored; the entity stops and its
// next incarnation replays what the database holds. A batch that keeps
// meeting other writers of its persistence ids is run at most five times;
// after that its call fails as a whole, with nothing of it stored. A write
// rejected with persistence.ErrSequenceConflict is not stored, nor are the
// later writes of its persistence id in its call. A WriteMessages call whose
// context ends before its batch is sent is not written.
package pgjournal
