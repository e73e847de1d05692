package pglease

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/internal/pgmigrate"
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

// migrationLockKey is the advisory lock migrations hold ("TRLS"), apart from
// pgjournal's.
const migrationLockKey = 0x54524c53

// schemaSet is the lease schema's migrations, run by internal/pgmigrate.
var schemaSet = mustLoadMigrations()

// SchemaVersion is the version of the lease schema this package reads and writes: the
// version of its last migration.
var SchemaVersion = schemaSet.Latest()

// Migrations returns the lease schema's migrations in version order. The slice is a
// copy.
func Migrations() []Migration {
	ms := make([]Migration, len(schemaSet.Migrations))
	for i, m := range schemaSet.Migrations {
		ms[i] = Migration{Version: m.Version, Name: m.Name, SQL: m.SQL}
	}
	return ms
}

func mustLoadMigrations() *pgmigrate.Set {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		panic(err) // the embedded files are part of the build, and a test loads them
	}
	return &pgmigrate.Set{Owner: "pglease", Table: versionTable, LockKey: migrationLockKey, Migrations: ms}
}

// loadMigrations reads NNNN_name.sql files and checks that their versions run 1, 2,
// 3... without gaps.
func loadMigrations(fsys fs.FS) ([]pgmigrate.Migration, error) {
	return pgmigrate.Load(fsys, "migrations/*.sql", "pglease")
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

// schemaVersion returns the version recorded in the database, 0 when the version
// table does not exist.
func schemaVersion(ctx context.Context, q pgmigrate.Querier, schema string) (int, error) {
	v, err := schemaSet.Version(ctx, q, schema)
	return v, migrationError(ctx, err)
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
	n, err := schemaSet.Migrate(ctx, pool, schema)
	return n, migrationError(ctx, err)
}

// migrationError turns an error of internal/pgmigrate into the package's.
func migrationError(ctx context.Context, err error) error {
	var tooNew *pgmigrate.TooNewError
	var op *pgmigrate.OpError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooNew):
		return checkVersion(tooNew.Found)
	case errors.As(err, &op):
		return storageError(ctx, "lease schema: "+op.Op, op.Err)
	}
	return err
}
