// Package pglease is a lease.Lease on PostgreSQL: a distributed lock with an owner and
// a time to live, kept in a table of the database the nodes already share (the one
// pgjournal uses, for example). The cluster's lease-majority downing, the singleton
// and sharding's per-shard lease take it.
//
//	l, err := pglease.New(ctx,
//	    lease.Settings{LeaseName: "shop-singleton", OwnerName: node.Address()},
//	    pglease.Config{ConnString: "postgres://app@db/app"})
//
// New connects (or uses the pool given in Config.Pool, which many leases can share)
// and creates the table; Close stops the lease's heartbeat and closes its own pool.
//
// # The table
//
// troupe_lease holds one row per lease: its name, the owner holding it (NULL when
// released), its expiry, and a fencing number. Every time in it is the database
// server's (now()): clients never send one, so a client whose clock is wrong can
// neither extend a lease nor take one early. New migrates the table from SQL embedded
// in the package (migrations/*.sql), recording each version in
// troupe_lease_schema_version, apart from pgjournal's tables; teams that migrate
// themselves set Config.ManualMigration and run Migrate, or the SQL of Migrations.
// Config.Schema puts the tables in a schema of their own.
//
// # Acquire, renew, release
//
// Acquire is one statement: it takes the row when it is free, expired or already the
// owner's, and returns its fencing number, so two owners that race cannot both win.
// A holder renews its row every HeartbeatInterval, only while the row is still the
// tenure it acquired (same owner, same fencing number, not expired). Release frees the
// row, when the owner holds it, and keeps its fencing number; no loss callback follows.
//
// # Losing the lease before anyone else can take it
//
// A holder that cannot renew gives the lease up, and calls the loss callback given to
// Acquire with lease.ErrUnavailable, HeartbeatTimeout minus Config.SafetyMargin after
// it sent its last successful renewal, on its own monotonic clock. The database lets
// another owner take the row no sooner than HeartbeatTimeout after it ran that
// renewal, which was after it was sent. So the holder stops at least SafetyMargin
// before another owner can start, whatever the network does; the margin (a tenth of
// the timeout by default) absorbs the difference in rate between the two clocks and
// the time the callback needs to stop the holder's work. A renewal that finds the row
// taken (changed by hand, or released by another value of the same owner name) ends
// the tenure at once with lease.ErrLost. The database server's clock must not be
// stepped while leases are held. CheckLease turns false at the deadline exactly; the
// callback runs on a goroutine of its own when the scheduler gets to it, which on an
// overloaded machine can be later than the margin, so work that must never outlive
// the lease checks CheckLease, or carries Fence, at each step.
//
// # Fencing
//
// Fence returns the holder's fencing number, which grows on every change of owner.
// A resource that refuses writes carrying a number below the highest it has seen is
// safe even from a holder that lost its lease without knowing it yet (a long pause);
// a write to the same database can check the lease row in its own statement. See
// Lease.Fence.
//
// # Failures
//
// New's setup (connecting, and migrating or checking the table) is one-time work with a
// budget of its own, Config.SetupTimeout: OperationTimeout, often short so that a
// partition shows soon, does not bound it, so a loaded server or another node's
// migration does not fail New. New fails within its context and SetupTimeout, with
// lease.ErrUnavailable, when the server cannot be reached, and with ErrInvalidConfig
// for invalid settings, config or connection string. Acquire and Release fail with
// lease.ErrUnavailable when the database did not answer within OperationTimeout; the
// caller cannot know then whether the statement ran. A held lease survives failed
// renewals (they are retried every half interval, and logged) until its deadline, and
// so a database restart shorter than that.
//
// # What can be lost, and when
//
// Nothing is sent through a lease, so nothing can be dropped. Each tenure's loss is
// reported to its callback exactly once, unless Release or Close ended it first. A
// row held by a process that died without releasing stays taken until it expires,
// HeartbeatTimeout after its last renewal.
package pglease
