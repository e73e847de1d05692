package pgjournal

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/troupe-go/troupe/testkit/pgtest"
)

// target is the server of the package's tests: TROUPE_TEST_POSTGRES, or a
// throwaway server started once for the package.
var target pgtest.Target

// admin is a pool for the tests' own statements (dropping schemas, damaging
// rows).
var admin *pgxpool.Pool

func TestMain(m *testing.M) {
	code := pgtest.Main(runner{m}, &target)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runner runs the tests with the admin pool open.
type runner struct{ m *testing.M }

func (r runner) Run() int {
	var err error
	if admin, err = pgxpool.New(context.Background(), target.ConnString); err != nil {
		fmt.Fprintln(os.Stderr, "admin pool:", err)
		return 1
	}
	defer admin.Close()
	// The example reads the connection string from the environment.
	if err := os.Setenv(pgtest.EnvConnString, target.ConnString); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return r.m.Run()
}

// schemaSeq makes schema names unique within a run; runID across runs
// against one outside server.
var (
	schemaSeq atomic.Int64
	runID     = time.Now().UnixNano() % 1_000_000
)

// newSchema returns the name of a schema no test used, dropped when the
// test ends.
func newSchema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", runID, schemaSeq.Add(1))
	t.Cleanup(func() { dropSchema(t, name) })
	return name
}

// dirSchemas maps the conformance suite's folders to schemas, so that a
// reopen in the same folder finds the same data.
var dirSchemas sync.Map

func schemaForDir(t *testing.T, dir string) string {
	h := fnv.New64a()
	h.Write([]byte(dir))
	name := fmt.Sprintf("d%d_%x", runID, h.Sum64())
	if _, loaded := dirSchemas.LoadOrStore(name, true); !loaded {
		t.Cleanup(func() { dropSchema(t, name) })
	}
	return name
}

func dropSchema(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("dropping schema %s: %v", name, err)
	}
}

// testConfig is the configuration of the tests' stores in schema.
func testConfig(schema string) Config {
	return Config{ConnString: target.ConnString, Schema: schema, ConnectTimeout: 10 * time.Second, MaxConns: 4}
}

// openIn opens a store of cfg and closes it when the test ends.
func openIn(t *testing.T, cfg setup) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := open(ctx, cfg.Config, cfg.tuning)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// openFresh opens a store on a new schema.
func openFresh(t *testing.T, edit func(*setup)) (*Store, setup) {
	t.Helper()
	cfg := setup{Config: testConfig(newSchema(t))}
	if edit != nil {
		edit(&cfg)
	}
	return openIn(t, cfg), cfg
}

// testContext is bounded by the test's deadline, or a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// execIn runs sql in schema through the admin pool.
func execIn(t *testing.T, schema, sql string, args ...any) int64 {
	t.Helper()
	ctx := testContext(t)
	conn, err := admin.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, "RESET search_path") }()
	tag, err := conn.Exec(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return int64(tag.RowsAffected())
}
