package pgmigrate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func TestLoad(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	good := fstest.MapFS{
		"m/0002_second.sql": file("B"),
		"m/0001_first.sql":  file("A"),
		"m/README":          file("not a migration"),
	}
	ms, err := Load(good, "m/*.sql", "x")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{{1, "first", "A"}, {2, "second", "B"}}
	if len(ms) != 2 || ms[0] != want[0] || ms[1] != want[1] {
		t.Errorf("Load = %+v, want %+v", ms, want)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":      {"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")},
		"from 0":   {"m/0000_a.sql": file("A")},
		"no name":  {"m/0001.sql": file("A")},
		"bad name": {"m/first_a.sql": file("A")},
		"twice":    {"m/0001_a.sql": file("A"), "m/1_b.sql": file("B")},
		"none":     {},
	} {
		if ms, err := Load(fsys, "m/*.sql", "x"); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
			t.Errorf("%s: Load = %+v, %v; want an error naming x", name, ms, err)
		}
	}
}

// set returns a set of two migrations, each creating a table, recorded in table.
func set(table string, key int64) *Set {
	return &Set{Owner: "test", Table: table, LockKey: key, Migrations: []Migration{
		{1, "one", "CREATE TABLE one (id int)"},
		{2, "two", "CREATE TABLE two (id int); INSERT INTO one VALUES (1)"},
	}}
}

// tables returns the tables of schema, sorted.
func tables(t *testing.T, schema string) string {
	t.Helper()
	rows, err := pool.Query(testContext(t), `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, ",")
}

// TestMigrate: Migrate creates the missing schema, applies every migration with the
// schema first in the search_path, records them, and applies nothing the second time.
func TestMigrate(t *testing.T) {
	ctx := testContext(t)
	schema := newSchema(t)
	s := set("versions", 1)
	if v, err := s.Version(ctx, pool, schema); err != nil || v != 0 {
		t.Fatalf("Version before = %d, %v; want 0", v, err)
	}
	if n, err := s.Migrate(ctx, pool, schema); err != nil || n != 2 {
		t.Fatalf("Migrate = %d, %v; want 2 applied", n, err)
	}
	if got := tables(t, schema); got != "one,two,versions" {
		t.Errorf("tables %s, want one,two,versions", got)
	}
	if v, err := s.Version(ctx, pool, schema); err != nil || v != 2 {
		t.Errorf("Version after = %d, %v; want 2", v, err)
	}
	if n, err := s.Migrate(ctx, pool, schema); err != nil || n != 0 {
		t.Errorf("Migrate again = %d, %v; want 0 applied", n, err)
	}
	// A newer version of the set applies only its new migration.
	s.Migrations = append(s.Migrations, Migration{3, "three", "CREATE TABLE three (id int)"})
	if n, err := s.Migrate(ctx, pool, schema); err != nil || n != 1 {
		t.Errorf("Migrate of a third = %d, %v; want 1 applied", n, err)
	}
}

// TestMigrateConcurrently: nodes migrating at the same time apply each migration once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := testContext(t)
	schema := newSchema(t)
	s := set("versions", 2)
	var wg sync.WaitGroup
	applied := make(chan int, 8)
	for range cap(applied) {
		wg.Go(func() {
			n, err := s.Migrate(ctx, pool, schema)
			if err != nil {
				t.Error(err)
			}
			applied <- n
		})
	}
	wg.Wait()
	close(applied)
	total := 0
	for n := range applied {
		total += n
	}
	if total != 2 {
		t.Errorf("%d migrations applied in all, want 2", total)
	}
}

// TestMigrateTooNew: a schema at a version above the set's is refused, untouched.
func TestMigrateTooNew(t *testing.T) {
	ctx := testContext(t)
	schema := newSchema(t)
	s := set("versions", 3)
	if _, err := s.Migrate(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	s.Migrations = s.Migrations[:1]
	_, err := s.Migrate(ctx, pool, schema)
	var tooNew *TooNewError
	if !errors.As(err, &tooNew) || tooNew.Found != 2 || tooNew.Known != 1 {
		t.Fatalf("Migrate of an older set = %v, want a TooNewError 2 > 1", err)
	}
	if got := tables(t, schema); got != "one,two,versions" {
		t.Errorf("tables %s, want one,two,versions", got)
	}
}

// TestMigrateFailure: a failed migration rolls back the whole migration, the ones
// before it included, and the error names the step and wraps the database's.
func TestMigrateFailure(t *testing.T) {
	ctx := testContext(t)
	schema := newSchema(t)
	s := set("versions", 4)
	s.Migrations[1].SQL = "CREATE TABLE two (id int); SELECT no_such_function()"
	_, err := s.Migrate(ctx, pool, schema)
	var op *OpError
	var pgErr *pgconn.PgError
	if !errors.As(err, &op) || op.Op != "apply migration 2 (two)" || !errors.As(err, &pgErr) {
		t.Fatalf("Migrate with a bad migration = %v, want an OpError of migration 2 wrapping PostgreSQL's", err)
	}
	if v, err := s.Version(ctx, pool, schema); err != nil || v != 0 {
		t.Errorf("Version after the failure = %d, %v; want 0", v, err)
	}
	if got := tables(t, schema); got != "" {
		t.Errorf("tables %s after the failure, want none", got)
	}
}

// TestSetsShareASchema: two sets with their own version tables migrate one schema
// independently.
func TestSetsShareASchema(t *testing.T) {
	ctx := testContext(t)
	schema := newSchema(t)
	a := set("a_versions", 5)
	b := &Set{Owner: "b", Table: "b_versions", LockKey: 6, Migrations: []Migration{{1, "b", "CREATE TABLE b (id int)"}}}
	if n, err := a.Migrate(ctx, pool, schema); err != nil || n != 2 {
		t.Fatalf("a: Migrate = %d, %v", n, err)
	}
	if n, err := b.Migrate(ctx, pool, schema); err != nil || n != 1 {
		t.Fatalf("b: Migrate = %d, %v", n, err)
	}
	if va, _ := a.Version(ctx, pool, schema); va != 2 {
		t.Errorf("a's version %d, want 2", va)
	}
	if vb, _ := b.Version(ctx, pool, schema); vb != 1 {
		t.Errorf("b's version %d, want 1", vb)
	}
}

// TestMigrateCanceled: an ended context fails Migrate with an OpError wrapping the
// context's error.
func TestMigrateCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	_, err := set("versions", 7).Migrate(ctx, pool, newSchema(t))
	var op *OpError
	if !errors.As(err, &op) || !errors.Is(err, context.Canceled) {
		t.Errorf("Migrate with a canceled context = %v, want an OpError wrapping context.Canceled", err)
	}
}
