package pgmigrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Migration is one step of a schema: the SQL that takes a database from Version-1 to
// Version.
type Migration struct {
	// Version is the schema version the migration leads to, from 1.
	Version int
	// Name describes the migration (the file name's part after the number).
	Name string
	// SQL is the migration's statements. They name their tables bare: Migrate runs
	// them with the target schema first in the search_path.
	SQL string
}

// Load reads the files matching pattern in fsys (such as "migrations/*.sql"), named
// NNNN_name.sql, and returns them in version order. It fails when a name does not
// have that form, when the versions do not run 1, 2, 3... without gaps, or when no
// file matches. owner names the plug-in in the errors.
func Load(fsys fs.FS, pattern, owner string) ([]Migration, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", owner, err)
	}
	var ms []Migration
	for _, name := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(path.Base(name), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || rest == "" {
			return nil, fmt.Errorf("%s: migration file %s is not named NNNN_name.sql", owner, name)
		}
		sql, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", owner, err)
		}
		ms = append(ms, Migration{Version: v, Name: rest, SQL: string(sql)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("%s: migration %d (%s) found where %d was expected", owner, m.Version, m.Name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%s: no migration file matches %s", owner, pattern)
	}
	return ms, nil
}

// Set is one plug-in's migrations and where it records them.
type Set struct {
	// Owner names the plug-in in errors ("pgjournal").
	Owner string
	// Table is the name of the version table, created in the target schema.
	Table string
	// LockKey is the key of the advisory lock migrations of this set hold; each set
	// has its own.
	LockKey int64
	// Migrations are the set's migrations in version order, as Load returns them.
	Migrations []Migration
}

// Latest returns the version of the set's last migration, 0 when it has none.
func (s *Set) Latest() int {
	if len(s.Migrations) == 0 {
		return 0
	}
	return s.Migrations[len(s.Migrations)-1].Version
}

// TableSQL returns the statement that creates the version table in the search_path's
// first schema, for the documentation of teams that migrate with their own tools.
func (s *Set) TableSQL() string {
	return s.tableSQL(pgx.Identifier{s.Table}.Sanitize())
}

func (s *Set) tableSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
    version     integer     NOT NULL PRIMARY KEY,
    description text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)`
}

// TooNewError reports a database whose schema is at a version above the set's last
// migration: a newer version of the plug-in migrated it.
type TooNewError struct {
	Owner string
	// Found is the database's version, Known the set's last one.
	Found, Known int
}

func (e *TooNewError) Error() string {
	return fmt.Sprintf("%s: the database is at version %d, this version knows up to %d", e.Owner, e.Found, e.Known)
}

// OpError reports a statement of a migration that failed: Op names the step ("apply
// migration 2 (writes)"), Err is the database's or the context's error.
type OpError struct {
	Op  string
	Err error
}

func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *OpError) Unwrap() error { return e.Err }

// Querier runs a query of one row: a pool, a connection or a transaction.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Beginner begins a transaction: a pool or a connection.
type Beginner interface {
	Querier
	Begin(ctx context.Context) (pgx.Tx, error)
}

// qualified returns the SQL name of table in schema, or the bare name when schema is
// empty (the search_path's first schema).
func qualified(schema, table string) string {
	if schema == "" {
		return pgx.Identifier{table}.Sanitize()
	}
	return pgx.Identifier{schema, table}.Sanitize()
}

// Version returns the version recorded in schema ("" for the search_path's first
// schema), 0 when the version table does not exist. A failure is an *OpError.
func (s *Set) Version(ctx context.Context, q Querier, schema string) (int, error) {
	table := qualified(schema, s.Table)
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, &OpError{Op: "read the schema version", Err: err}
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+table).Scan(&v); err != nil {
		return 0, &OpError{Op: "read the schema version", Err: err}
	}
	return v, nil
}

// Migrate brings schema ("" for the search_path's first schema) up to the set's last
// version and returns how many migrations it applied (0 when the schema was current).
// It fails with a *TooNewError, changing nothing, when the schema is newer than the
// set, and with an *OpError naming the step when a statement fails; the transaction
// is then rolled back, so the schema is as it was.
func (s *Set) Migrate(ctx context.Context, db Beginner, schema string) (int, error) {
	latest := s.Latest()
	v, err := s.Version(ctx, db, schema)
	if err != nil {
		return 0, err
	}
	switch {
	case v == latest:
		return 0, nil // current: no lock, no privileges beyond reading
	case v > latest:
		return 0, &TooNewError{Owner: s.Owner, Found: v, Known: latest}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return 0, &OpError{Op: "begin the migration", Err: err}
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.LockKey); err != nil {
		return 0, &OpError{Op: "lock for the migration", Err: err}
	}
	if schema != "" {
		if err := createSchema(ctx, tx, schema); err != nil {
			return 0, err
		}
		// The migrations name their tables bare: put them in the schema.
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return 0, &OpError{Op: "set the search_path for the migration", Err: err}
		}
	}
	table := qualified(schema, s.Table)
	if _, err := tx.Exec(ctx, s.tableSQL(table)); err != nil {
		return 0, &OpError{Op: "create the schema version table", Err: err}
	}
	// Another node may have migrated while this one waited for the lock.
	if v, err = s.Version(ctx, tx, schema); err != nil {
		return 0, err
	}
	if v > latest {
		return 0, &TooNewError{Owner: s.Owner, Found: v, Known: latest}
	}
	applied := 0
	for _, m := range s.Migrations[v:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return 0, &OpError{Op: fmt.Sprintf("apply migration %d (%s)", m.Version, m.Name), Err: err}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, description) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return 0, &OpError{Op: fmt.Sprintf("record migration %d", m.Version), Err: err}
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, &OpError{Op: "commit the migration", Err: err}
	}
	return applied, nil
}

// createSchema creates schema when it does not exist. It looks first, so that a role
// that may not create schemas can migrate one that exists.
func createSchema(ctx context.Context, tx pgx.Tx, schema string) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return &OpError{Op: "look up schema " + schema, Err: err}
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return &OpError{Op: "create schema " + schema, Err: err}
	}
	return nil
}
