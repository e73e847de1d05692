package pglease

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/lease"
)

// TestSetupOutlastsOperationTimeout: New's one-time work (its first connection, the
// migration) has a budget of its own, Config.SetupTimeout: a lease whose
// OperationTimeout is short, to notice a partition soon, is still made when connecting
// or migrating takes longer than that (a loaded server, another node migrating).
func TestSetupOutlastsOperationTimeout(t *testing.T) {
	s := fast("setup", "a")
	s.OperationTimeout = 50 * time.Millisecond

	t.Run("slow to connect", func(t *testing.T) {
		pc, err := pgxpool.ParseConfig(target.ConnString)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(pc.ConnConfig.Host, "/") {
			t.Skip("the server is reached over a Unix socket, which the proxy cannot stand in for")
		}
		where := net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port)))
		p := startProxy(t, where)
		cs := strings.Replace(target.ConnString, where, p.addr(), 1)
		if cs == target.ConnString {
			t.Skipf("cannot put the proxy in place of %s in TROUPE_TEST_POSTGRES", where)
		}
		waiting, open := p.holdNew()
		done := newLater(t, s, Config{ConnString: cs, Schema: newSchema(t)})
		t.Cleanup(open)
		select {
		case <-waiting:
		case r := <-done:
			t.Fatalf("New returned before it connected: %v", r.err)
		}
		<-time.After(4 * s.OperationTimeout) // the scenario: a connection slower than an operation
		open()
		if r := <-done; r.err != nil {
			t.Errorf("New, connecting for longer than its OperationTimeout (%v): %v", s.OperationTimeout, r.err)
		}
	})

	t.Run("another node migrates", func(t *testing.T) {
		s := s
		s.OperationTimeout = 500 * time.Millisecond // time to connect, on a loaded machine
		ctx := testContext(t)
		tx, err := admin.Begin(ctx) // another node's migration, holding the lock
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
			t.Fatal(err)
		}
		done := newLater(t, s, Config{ConnString: target.ConnString, Schema: newSchema(t)})
		// Wait until New waits for the lock, then for longer than OperationTimeout.
		poll := time.NewTicker(10 * time.Millisecond)
		defer poll.Stop()
		for waiting := false; !waiting; {
			select {
			case r := <-done:
				t.Fatalf("New returned before it waited for the migration lock: %v", r.err)
			case <-poll.C:
			}
			if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND application_name = 'troupe-pglease' AND query LIKE '%pg_advisory_xact_lock%')`).
				Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
		<-time.After(4 * s.OperationTimeout) // the scenario: a migration longer than an operation
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.err != nil {
			t.Errorf("New, waiting for another node's migration for longer than its OperationTimeout (%v): %v", s.OperationTimeout, r.err)
		}
	})

	t.Run("SetupTimeout bounds it", func(t *testing.T) {
		ctx := testContext(t)
		tx, err := admin.Begin(ctx) // a migration that never ends
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
			t.Fatal(err)
		}
		cfg := Config{ConnString: target.ConnString, Schema: newSchema(t), SetupTimeout: 300 * time.Millisecond}
		l, err := New(ctx, s, cfg)
		if l != nil {
			l.Close()
		}
		if !errors.Is(err, lease.ErrUnavailable) || !strings.Contains(err.Error(), "within 300ms") {
			t.Errorf("New, while another node's migration outlasts SetupTimeout: %v, want lease.ErrUnavailable", err)
		}
	})
}

// newResult is what New returned.
type newResult struct {
	l   *Lease
	err error
}

// newLater runs New on a goroutine of its own, and sends its result on the channel it
// returns once. The lease is closed when the test ends.
func newLater(t *testing.T, s lease.Settings, cfg Config) <-chan newResult {
	ctx := testContext(t)
	done, closing := make(chan newResult, 1), make(chan *Lease, 1)
	go func() {
		l, err := New(ctx, s, cfg)
		closing <- l
		done <- newResult{l, err}
	}()
	t.Cleanup(func() {
		if l := <-closing; l != nil {
			l.Close()
		}
	})
	return done
}
