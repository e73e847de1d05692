package pglease

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema migrations.
//
// The lease table is versioned on its own, apart from pgjournal's tables (both may
// live in one schema): migrations/NNNN_name.sql is the migration to version NNNN, and
// the table troupe_lease_schema_version holds one row per applied migration. Migrate
// applies the missing ones in order, in one transaction, holding an advisory lock so
// that nodes starting together migrate once; a version above the last one known here
// is refused with ErrSchemaTooNew, and nothing is changed.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one step of the lease schema: the SQL that takes a database from
// Version-1 to Version. Teams that run migrations with their own tools apply the SQL of
// each migration in order, with the lease's schema first in the search_path, and
// record it with
//
//	INSERT INTO troupe_lease_schema_version (version, description) VALUES (<Version>, '<Name>')
//
// after creating that table as Migrate does:
//
//	CREATE TABLE IF NOT EXISTS troupe_lease_schema_version (
//	    version     integer     NOT NULL PRIMARY KEY,
//	    description text        NOT NULL,
//	    applied_at  timestamptz NOT NULL DEFAULT now()
//	);
type Migration struct {
	// Version is the schema version the migration leads to, from 1.
	Version int
	// Name describes the migration.
	Name string
	// SQL is the migration's statements.
	SQL string
}

const versionTable = "troupe_lease_schema_version"

const versionTableSQL = `CREATE TABLE IF NOT EXISTS troupe_lease_schema_version (
    version     integer     NOT NULL PRIMARY KEY,
    description text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)`

// migrationLockKey is the advisory lock migrations hold ("TRLS"), apart from
// pgjournal's.
const migrationLockKey = 0x54524c53

var migrations = mustLoadMigrations()

// SchemaVersion is the version of the lease schema this package reads and writes: the
// version of its last migration.
var SchemaVersion = migrations[len(migrations)-1].Version

// Migrations returns the lease schema's migrations in version order. The slice is a
// copy.
func Migrations() []Migration {
	return append([]Migration(nil), migrations...)
}

func mustLoadMigrations() []Migration {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // the embedded files are part of the build, and a test loads them
	}
	return ms
}

// loadMigrations reads NNNN_name.sql files and checks that their versions run 1, 2,
// 3... without gaps.
func loadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(path.Base(name), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("pglease: migration file %s is not named NNNN_name.sql", name)
		}
		sql, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: rest, SQL: string(sql)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("pglease: migration %d (%s) found where %d was expected", m.Version, m.Name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("pglease: no migrations embedded")
	}
	return ms, nil
}

// Migrate brings the lease schema of the database cfg names up to SchemaVersion: it
// creates cfg.Schema when set and missing, and applies the missing migrations in one
// transaction, so a failed migration leaves the schema as it was. Nodes may run it at
// the same time. It fails with ErrSchemaTooNew, changing nothing, when the schema is
// newer than this package, and with lease.ErrUnavailable when the server cannot be
// reached, or the migration is not done, within ctx and cfg.SetupTimeout. New runs it
// unless cfg.ManualMigration is set.
func Migrate(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withSetupDefault()
	setupCtx, cancel := setupContext(ctx, cfg.SetupTimeout)
	defer cancel()
	pool := cfg.Pool
	if pool == nil {
		var err error
		if pool, err = connect(setupCtx, cfg.ConnString, cfg.SetupTimeout); err != nil {
			return err
		}
		defer pool.Close()
	}
	_, err := migrate(setupCtx, pool, cfg.Schema)
	return err
}

// qualified returns the SQL name of table in schema, or the bare name when schema is
// empty (the search_path's first schema).
func qualified(schema, table string) string {
	if schema == "" {
		return pgx.Identifier{table}.Sanitize()
	}
	return pgx.Identifier{schema, table}.Sanitize()
}

type queryRower interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// schemaVersion returns the version recorded in the database, 0 when the version
// table does not exist.
func schemaVersion(ctx context.Context, q queryRower, schema string) (int, error) {
	table := qualified(schema, versionTable)
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
		return 0, storageError(ctx, "read the lease schema version", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+table).Scan(&v); err != nil {
		return 0, storageError(ctx, "read the lease schema version", err)
	}
	return v, nil
}

// checkVersion compares the database's schema version with SchemaVersion.
func checkVersion(v int) error {
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: the database is at version %d, this version of pglease knows up to %d: upgrade the application",
			ErrSchemaTooNew, v, SchemaVersion)
	case v < SchemaVersion:
		return fmt.Errorf("%w: the database is at version %d, this version of pglease needs %d: run pglease.Migrate or apply pglease.Migrations",
			ErrSchemaOutdated, v, SchemaVersion)
	}
	return nil
}

// migrate applies the missing migrations and returns how many it applied.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	v, err := schemaVersion(ctx, pool, schema)
	if err != nil {
		return 0, err
	}
	if v == SchemaVersion {
		return 0, nil // current: no lock, no privileges beyond reading
	}
	if v > SchemaVersion {
		return 0, checkVersion(v)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, storageError(ctx, "begin the lease migration", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
		return 0, storageError(ctx, "lock for the lease migration", err)
	}
	if schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return 0, storageError(ctx, "create schema "+schema, err)
		}
		// The migrations name their tables bare: put them in the schema.
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return 0, storageError(ctx, "set the search_path for the lease migration", err)
		}
	}
	if _, err := tx.Exec(ctx, versionTableSQL); err != nil {
		return 0, storageError(ctx, "create the lease schema version table", err)
	}
	// Another node may have migrated while this one waited for the lock.
	if v, err = schemaVersion(ctx, tx, schema); err != nil {
		return 0, err
	}
	if v > SchemaVersion {
		return 0, checkVersion(v)
	}
	applied := 0
	for _, m := range migrations[v:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return 0, storageError(ctx, fmt.Sprintf("apply lease migration %d (%s)", m.Version, m.Name), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+versionTable+` (version, description) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return 0, storageError(ctx, fmt.Sprintf("record lease migration %d", m.Version), err)
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, storageError(ctx, "commit the lease migration", err)
	}
	return applied, nil
}
