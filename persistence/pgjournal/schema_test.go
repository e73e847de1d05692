package pgjournal

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/troupe-go/troupe/persistence"
)

func TestMigrationsEmbedded(t *testing.T) {
	ms := Migrations()
	if len(ms) == 0 || ms[0].Version != 1 || SchemaVersion != ms[len(ms)-1].Version {
		t.Fatalf("Migrations() = %d migrations, SchemaVersion %d", len(ms), SchemaVersion)
	}
	if !strings.Contains(ms[0].SQL, "CREATE TABLE troupe_event") {
		t.Errorf("migration 1 does not create troupe_event")
	}
	ms[0].SQL = "changed"
	if Migrations()[0].SQL == "changed" {
		t.Errorf("Migrations returns the package's own slice")
	}
}

func TestLoadMigrationsRejectsGaps(t *testing.T) {
	for name, files := range map[string]fstest.MapFS{
		"gap":     {"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		"badname": {"migrations/first.sql": {}},
		"empty":   {},
	} {
		if _, err := loadMigrations(files); err == nil {
			t.Errorf("%s: loadMigrations accepted %v", name, files)
		}
	}
	ms, err := loadMigrations(fstest.MapFS{"migrations/0002_b.sql": {Data: []byte("B")}, "migrations/0001_a.sql": {Data: []byte("A")}})
	if err != nil || len(ms) != 2 || ms[0].Name != "a" || ms[1].SQL != "B" {
		t.Errorf("loadMigrations = %+v, %v", ms, err)
	}
}

// TestManualMigration: with automatic migration off, Open refuses a
// schema that is missing; Migrate creates it; then Open works.
func TestManualMigration(t *testing.T) {
	ctx := testContext(t)
	cfg := testConfig(newSchema(t))
	cfg.ManualMigration = true
	if s, err := Open(ctx, cfg); !errors.Is(err, ErrSchemaOutdated) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open on an empty schema with ManualMigration: %v, want ErrSchemaOutdated", err)
	}
	if err := Migrate(ctx, cfg); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if err := Migrate(ctx, cfg); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	s := openIn(t, setup{Config: cfg})
	if v, err := schemaVersion(ctx, s.pool); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
}

// TestSchemaTooNew: a schema migrated by a newer version is refused by
// Open, with or without automatic migration, and by Migrate, untouched.
func TestSchemaTooNew(t *testing.T) {
	ctx := testContext(t)
	s, cfg := openFresh(t, nil)
	s.Close()
	execIn(t, cfg.Schema, `INSERT INTO troupe_schema_version (version, description) VALUES ($1, 'from the future')`, SchemaVersion+1)
	for _, manual := range []bool{false, true} {
		c := cfg.Config
		c.ManualMigration = manual
		if s, err := Open(ctx, c); !errors.Is(err, ErrSchemaTooNew) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open (manual %v) on a newer schema: %v, want ErrSchemaTooNew", manual, err)
		}
	}
	if err := Migrate(ctx, cfg.Config); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// TestConcurrentMigration: nodes starting together migrate once.
func TestConcurrentMigration(t *testing.T) {
	ctx := testContext(t)
	cfg := testConfig(newSchema(t))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- Migrate(ctx, cfg)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := openIn(t, setup{Config: cfg})
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM troupe_schema_version`).Scan(&n); err != nil || n != SchemaVersion {
		t.Errorf("%d rows in troupe_schema_version, %v; want %d", n, err, SchemaVersion)
	}
}

// TestMigrationFromVersion1: a database written by version 1, where a
// delete removed every event of a persistence id and kept its highest
// sequence number in troupe_persistence_id alone, is migrated by Open; the
// highest sequence number still holds, and still rejects the writes below
// it.
func TestMigrationFromVersion1(t *testing.T) {
	ctx := testContext(t)
	cfg := testConfig(newSchema(t))
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{cfg.Schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	execIn(t, cfg.Schema, versionTableSQL)
	execIn(t, cfg.Schema, Migrations()[0].SQL)
	execIn(t, cfg.Schema, `INSERT INTO troupe_schema_version (version, description) VALUES (1, 'initial')`)
	execIn(t, cfg.Schema, `INSERT INTO troupe_persistence_id (persistence_id, highest_sequence_nr, deleted_to) VALUES ('gone', 10, 10)`)

	s := openIn(t, setup{Config: cfg})
	if v, err := schemaVersion(ctx, s.pool); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v after Open; want %d", v, err, SchemaVersion)
	}
	if h, err := s.HighestSequenceNr(ctx, "gone"); err != nil || h != 10 {
		t.Errorf("HighestSequenceNr(gone) = %d, %v; want 10", h, err)
	}
	res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw("gone", 5, 6)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0], persistence.ErrSequenceConflict) {
		t.Errorf("write below the kept highest: %v, want ErrSequenceConflict", res[0])
	}
	if res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw("gone", 11, 11)}); err != nil || res[0] != nil {
		t.Errorf("write above the kept highest: %v, %v", res, err)
	}
}
