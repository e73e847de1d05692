package pgmigrate

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/troupe-go/troupe/testkit/pgtest"
)

// target is the server of the package's tests: TROUPE_TEST_POSTGRES, or a throwaway
// server started once for the package.
var target pgtest.Target

// pool is the tests' connection pool.
var pool *pgxpool.Pool

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

// runner runs the tests with the pool open.
type runner struct{ m *testing.M }

func (r runner) Run() int {
	var err error
	if pool, err = pgxpool.New(context.Background(), target.ConnString); err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		return 1
	}
	defer pool.Close()
	return r.m.Run()
}

var (
	schemaSeq atomic.Int64
	runID     = time.Now().UnixNano() % 1_000_000
)

// newSchema returns the name of a schema no test used (not created), dropped when the
// test ends.
func newSchema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("migrate%d_%d", runID, schemaSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// testContext is bounded by a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
