package pgjournal

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
// The schema is versioned: migrations/NNNN_name.sql is the migration to
// version NNNN. The table troupe_schema_version holds one row per applied
// migration. Migrate applies the missing ones in order, in one transaction,
// holding an advisory lock so that nodes starting at the same time migrate
// once; a database whose version is above the last one known here is
// refused with ErrSchemaTooNew and left untouched.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one step of the schema: the SQL that takes a database from
// Version-1 to Version. Teams that run migrations with their own tools apply
// the SQL of each migration in order, in the schema the store uses, and
// record it with
//
//	INSERT INTO troupe_schema_version (version, description) VALUES (<Version>, '<Name>')
//
// after creating that table as Migrate does:
//
//	CREATE TABLE IF NOT EXISTS troupe_schema_version (
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

// versionTableSQL creates the schema-version table.
const versionTableSQL = `CREATE TABLE IF NOT EXISTS troupe_schema_version (
    version     integer     NOT NULL PRIMARY KEY,
    description text        NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
)`

// migrationLockKey is the advisory lock migrations hold, one for the whole
// database ("TROU"); migrations are rare and short.
const migrationLockKey = 0x54524f55

// migrations are the embedded migrations, in version order.
var migrations = mustLoadMigrations()

// SchemaVersion is the schema version this package reads and writes: the
// version of its last migration.
var SchemaVersion = migrations[len(migrations)-1].Version

// Migrations returns the schema's migrations in version order. The slice is
// a copy.
func Migrations() []Migration {
	return append([]Migration(nil), migrations...)
}

func mustLoadMigrations() []Migration {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // the embedded files are part of the build
	}
	return ms
}

// loadMigrations reads NNNN_name.sql files and checks that their versions
// run 1, 2, 3... without gaps.
func loadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".sql")
		num, rest, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("pgjournal: migration file %s is not named NNNN_name.sql", name)
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
			return nil, fmt.Errorf("pgjournal: migration %d (%s) found where %d was expected", m.Version, m.Name, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("pgjournal: no migrations embedded")
	}
	return ms, nil
}

// Migrate brings the schema of the database cfg names up to SchemaVersion:
// it creates cfg.Schema when set and missing, and applies the missing
// migrations in one transaction, so a failed migration leaves the schema as
// it was. Nodes may run it at the same time; one migrates and the others
// find the schema current. It fails with ErrSchemaTooNew, changing nothing,
// when the schema is newer than this package. Open runs it unless
// cfg.ManualMigration is set.
func Migrate(ctx context.Context, cfg Config) error {
	pool, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = migrate(ctx, pool, cfg.Schema)
	return err
}

// schemaVersion returns the version recorded in the database, 0 when the
// version table does not exist.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass('troupe_schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, storageError("read the schema version", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM troupe_schema_version`).Scan(&v); err != nil {
		return 0, storageError("read the schema version", err)
	}
	return v, nil
}

// checkVersion compares the database's schema version with SchemaVersion.
func checkVersion(v int) error {
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: the database is at version %d, this version of pgjournal knows up to %d: upgrade the application",
			ErrSchemaTooNew, v, SchemaVersion)
	case v < SchemaVersion:
		return fmt.Errorf("%w: the database is at version %d, this version of pgjournal needs %d: run pgjournal.Migrate or apply pgjournal.Migrations",
			ErrSchemaOutdated, v, SchemaVersion)
	}
	return nil
}

// migrate applies the missing migrations and returns how many it applied.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	v, err := schemaVersion(ctx, pool)
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
		return 0, storageError("begin the migration", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
		return 0, storageError("lock for the migration", err)
	}
	if schema != "" {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return 0, storageError("look up the schema", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
				return 0, storageError("create schema "+schema, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, versionTableSQL); err != nil {
		return 0, storageError("create the schema version table", err)
	}
	// Another node may have migrated while this one waited for the lock.
	if v, err = schemaVersion(ctx, tx); err != nil {
		return 0, err
	}
	if v > SchemaVersion {
		return 0, checkVersion(v)
	}
	applied := 0
	for _, m := range migrations[v:] {
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return 0, storageError(fmt.Sprintf("apply migration %d (%s)", m.Version, m.Name), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO troupe_schema_version (version, description) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return 0, storageError(fmt.Sprintf("record migration %d", m.Version), err)
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, storageError("commit the migration", err)
	}
	return applied, nil
}
