// Package pgjournal is a persistence plug-in on PostgreSQL: a
// persistence.Journal, persistence.SnapshotStore and persistence.TagQuerier
// in one Store, through a pgx connection pool. Persistent entities keep
// their state when they move between machines, since every node reads and
// writes the same database.
package pgjournal
