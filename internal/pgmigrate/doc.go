// Package pgmigrate runs versioned schema migrations on PostgreSQL for Troupe's
// PostgreSQL plug-ins (persistence/pgjournal, lease/pglease), so that both migrate the
// same way.
//
// A Set is a plug-in's migrations: files NNNN_name.sql, the migration to version
// NNNN, numbered 1, 2, 3... without gaps (Load checks it), a version table of its own
// holding one row per applied migration, and an advisory lock key of its own. Two
// sets may share one schema.
//
// Migrate applies the missing migrations in order, in one transaction, holding the
// set's transaction-scoped advisory lock, so that nodes starting together migrate
// once (the others wait for the lock, then find the schema current) and a failed
// migration leaves the schema as it was. A schema already current is only read: no
// lock, no privileges beyond reading. It creates the target schema when it is
// missing (and only then, so a role without CREATE on the database can migrate a
// schema that exists), and refuses a database whose version is above the set's last
// migration with a *TooNewError, changing nothing. A failed statement is reported as
// an *OpError naming the step, which the plug-in turns into its own errors.
package pgmigrate
