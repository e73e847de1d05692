package pgjournal

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/internal/pgmigrate"
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

// migrationLockKey is the advisory lock migrations hold, one for the whole
// database ("TROU"); migrations are rare and short.
const migrationLockKey = 0x54524f55

// schemaSet is the schema's migrations, run by internal/pgmigrate.
var schemaSet = mustLoadMigrations()

// versionTableSQL creates the schema-version table.
var versionTableSQL = schemaSet.TableSQL()

// SchemaVersion is the schema version this package reads and writes: the
// version of its last migration.
var SchemaVersion = schemaSet.Latest()

// Migrations returns the schema's migrations in version order. The slice is
// a copy.
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
		panic(err) // the embedded files are part of the build
	}
	return &pgmigrate.Set{Owner: "pgjournal", Table: "troupe_schema_version", LockKey: migrationLockKey, Migrations: ms}
}

// loadMigrations reads NNNN_name.sql files and checks that their versions
// run 1, 2, 3... without gaps.
func loadMigrations(fsys fs.FS) ([]pgmigrate.Migration, error) {
	return pgmigrate.Load(fsys, "migrations/*.sql", "pgjournal")
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
// version table does not exist. The store's connections have the schema first
// in their search_path.
func schemaVersion(ctx context.Context, q pgmigrate.Querier) (int, error) {
	v, err := schemaSet.Version(ctx, q, "")
	return v, migrationError(err)
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
	n, err := schemaSet.Migrate(ctx, pool, schema)
	return n, migrationError(err)
}

// migrationError turns an error of internal/pgmigrate into the package's.
func migrationError(err error) error {
	var tooNew *pgmigrate.TooNewError
	var op *pgmigrate.OpError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &tooNew):
		return checkVersion(tooNew.Found)
	case errors.As(err, &op):
		return storageError(op.Op, op.Err)
	}
	return err
}
