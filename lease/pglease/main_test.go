package pglease

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

	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/testkit/pgtest"
)

// target is the server of the package's tests: TROUPE_TEST_POSTGRES, or a throwaway
// server started once for the package.
var target pgtest.Target

// admin is a pool for the tests' own statements (dropping schemas, changing rows).
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

// schemaSeq makes schema names unique within a run; runID across runs against one
// outside server.
var (
	schemaSeq atomic.Int64
	runID     = time.Now().UnixNano() % 1_000_000
)

// newSchema returns the name of a schema no test used, dropped when the test ends.
func newSchema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("lease%d_%d", runID, schemaSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// fast is the timing of most tests: renewals every 100ms, a lease that lives 1s, a
// holder that gives up 100ms sooner.
func fast(name, owner string) lease.Settings {
	return lease.Settings{LeaseName: name, OwnerName: owner,
		HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second, OperationTimeout: 2 * time.Second}
}

// steady is the timing of tests about who holds the lease, not about its expiry:
// renewals every 100ms, as fast's, and a lease that lives a minute, so that a lease a
// test holds does not lapse between two of its steps however slow the machine is.
func steady(name, owner string) lease.Settings {
	s := fast(name, owner)
	s.HeartbeatTimeout = time.Minute
	return s
}

// open returns a lease, closed when the test ends.
func open(t *testing.T, s lease.Settings, cfg Config) *Lease {
	t.Helper()
	if cfg.ConnString == "" && cfg.Pool == nil {
		cfg.ConnString = target.ConnString
	}
	l, err := New(testContext(t), s, cfg)
	if err != nil {
		t.Fatalf("New(%s for %s): %v", s.LeaseName, s.OwnerName, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// testContext is bounded by a minute.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// lossProbe records the loss callbacks of a lease: the error and when it came.
type lossProbe chan loss

type loss struct {
	err error
	at  time.Time
}

func newLossProbe() lossProbe { return make(lossProbe, 4) }

func (p lossProbe) onLost(err error) { p <- loss{err, time.Now()} }

// wait returns the next loss, failing the test after a minute.
func (p lossProbe) wait(t *testing.T) loss {
	t.Helper()
	select {
	case l := <-p:
		return l
	case <-time.After(time.Minute):
		t.Fatal("no loss callback within a minute")
		return loss{}
	}
}

// none fails the test if a loss was reported.
func (p lossProbe) none(t *testing.T) {
	t.Helper()
	select {
	case l := <-p:
		t.Fatalf("unexpected loss: %v", l.err)
	default:
	}
}

// rowOf reads the lease row: owner ("" when free), fence, and whether it is live.
func rowOf(t *testing.T, schema, name string) (owner string, fence int64, live bool) {
	t.Helper()
	var o *string
	err := admin.QueryRow(testContext(t), `SELECT owner, fence, expires_at > now() FROM `+qualified(schema, "troupe_lease")+` WHERE name = $1`, name).
		Scan(&o, &fence, &live)
	if err != nil {
		t.Fatalf("reading lease %s: %v", name, err)
	}
	if o != nil {
		owner = *o
	}
	return owner, fence, live
}
