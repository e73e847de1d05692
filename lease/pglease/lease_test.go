package pglease

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/lease"
)

// TestAcquireAndRelease walks the lease.Lease contract, as the in-memory store's test
// does, against the table. Its leases are steady: each step expects the lease of the
// step before to be live.
func TestAcquireAndRelease(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	a, b, a2 := open(t, steady("sbr", "a"), cfg), open(t, steady("sbr", "b"), cfg), open(t, steady("sbr", "a"), cfg)
	steps := []struct {
		name   string
		do     func() (bool, error)
		want   bool
		holder string
	}{
		{"a acquires", func() (bool, error) { return a.Acquire(ctx, nil) }, true, "a"},
		{"a again: still held", func() (bool, error) { return a.Acquire(ctx, nil) }, true, "a"},
		{"b cannot", func() (bool, error) { return b.Acquire(ctx, nil) }, false, "a"},
		{"another value of owner a holds it too", func() (bool, error) { return a2.Acquire(ctx, nil) }, true, "a"},
		{"b cannot release it", func() (bool, error) { return b.Release(ctx) }, false, "a"},
		{"a2 releases for owner a", func() (bool, error) { return a2.Release(ctx) }, true, ""},
		{"a2 no longer holds", func() (bool, error) { return a2.CheckLease(), nil }, false, ""},
		{"releasing a free lease", func() (bool, error) { return a.Release(ctx) }, false, ""},
		{"a no longer holds", func() (bool, error) { return a.CheckLease(), nil }, false, ""},
		{"b acquires", func() (bool, error) { return b.Acquire(ctx, nil) }, true, "b"},
		{"b holds", func() (bool, error) { return b.CheckLease(), nil }, true, "b"},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: %v, %v; want %v", st.name, got, err, st.want)
		}
		owner, _, live := rowOf(t, cfg.Schema, "sbr")
		if !live {
			owner = ""
		}
		if owner != st.holder {
			t.Fatalf("%s: the row's holder is %q, want %q", st.name, owner, st.holder)
		}
	}
	if got := b.Settings(); got != steady("sbr", "b").WithDefaults() {
		t.Errorf("Settings() = %+v", got)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Acquire(cancelled, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context: %v", err)
	}
	if _, err := b.Release(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a cancelled context: %v", err)
	}
	if !b.CheckLease() {
		t.Error("a Release with a cancelled context gave the lease up")
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.CheckLease() || b.Fence() != 0 {
		t.Error("held after Close")
	}
	if _, err := b.Acquire(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	if _, err := b.Release(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Release after Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestRace: owners race for one lease, round after round; exactly one wins each
// round, and the fencing number grows by one each time. The winner releases the lease,
// live, for the next round: the leases are steady, so that a winner slow to release
// (a loaded machine) does not find its lease expired.
func TestRace(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	const owners, rounds = 4, 40
	var ls []*Lease
	for i := range owners {
		ls = append(ls, open(t, steady("race", fmt.Sprintf("node-%d", i)), cfg))
	}
	type result struct {
		i   int
		ok  bool
		err error
	}
	var last uint64
	wins := make([]int, owners)
	for round := range rounds {
		start := make(chan struct{})
		results := make(chan result, owners)
		for i, l := range ls {
			go func() {
				<-start
				ok, err := l.Acquire(ctx, nil)
				results <- result{i, ok, err}
			}()
		}
		close(start)
		winner := -1
		for range owners {
			r := <-results
			if r.err != nil {
				t.Fatalf("round %d: node-%d: %v", round, r.i, r.err)
			}
			if r.ok {
				if winner >= 0 {
					t.Fatalf("round %d: node-%d and node-%d both acquired the lease", round, winner, r.i)
				}
				winner = r.i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody acquired the free lease", round)
		}
		wins[winner]++
		w := ls[winner]
		if f := w.Fence(); f != last+1 {
			t.Fatalf("round %d: fence %d after %d", round, f, last)
		}
		last = w.Fence()
		for i, l := range ls {
			if i != winner && l.CheckLease() {
				t.Fatalf("round %d: node-%d believes it holds node-%d's lease", round, i, winner)
			}
		}
		if ok, err := w.Release(ctx); !ok || err != nil {
			t.Fatalf("round %d: release: %v, %v", round, ok, err)
		}
	}
	t.Logf("wins per owner: %v", wins)
}

// TestFence: the fencing number stays while one owner holds the lease, grows on every
// change of owner, and survives a release; a holder that stops without releasing keeps
// the lease until it expires; a value that shares an owner name loses its tenure when
// another value of that owner releases it.
func TestFence(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	a, a2, b := open(t, fast("fence", "a"), cfg), open(t, fast("fence", "a"), cfg), open(t, fast("fence", "b"), cfg)
	if a.Fence() != 0 {
		t.Fatalf("fence %d before Acquire", a.Fence())
	}
	mustAcquire := func(l *Lease, onLost func(error)) uint64 {
		t.Helper()
		if ok, err := l.Acquire(ctx, onLost); !ok || err != nil {
			t.Fatalf("%s: Acquire = %v, %v", l.settings.OwnerName, ok, err)
		}
		return l.Fence()
	}
	f1 := mustAcquire(a, nil)
	if f := mustAcquire(a, nil); f != f1 {
		t.Errorf("acquiring a held lease again: fence %d, was %d", f, f1)
	}
	lost2 := newLossProbe()
	if f := mustAcquire(a2, lost2.onLost); f != f1 {
		t.Errorf("another value of the owner: fence %d, want %d", f, f1)
	}

	// a releases for owner a: a2 finds at its next renewal that its tenure ended.
	if ok, err := a.Release(ctx); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if l := lost2.wait(t); !errors.Is(l.err, lease.ErrLost) {
		t.Errorf("a2's loss: %v, want lease.ErrLost", l.err)
	}
	if a2.CheckLease() || a2.Fence() != 0 {
		t.Error("a2 still holds after a released")
	}
	if _, fence, _ := rowOf(t, cfg.Schema, "fence"); uint64(fence) != f1 {
		t.Errorf("the released row's fence is %d, want %d", fence, f1)
	}

	f2 := mustAcquire(b, nil)
	if f2 != f1+1 {
		t.Errorf("b's fence %d after %d", f2, f1)
	}

	// b stops without releasing: the lease expires in the database no sooner than
	// HeartbeatTimeout after b's last renewal, and a takes it with the next number.
	closedAt := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for {
		ok, err := a.Acquire(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		<-poll.C
	}
	took := time.Since(closedAt)
	s := a.Settings()
	if floor := s.HeartbeatTimeout - s.HeartbeatInterval - 200*time.Millisecond; took < floor {
		t.Errorf("a acquired %v after b closed, less than %v: Close freed the lease", took, floor)
	}
	if f3 := a.Fence(); f3 != f2+1 {
		t.Errorf("a's fence %d after %d", f3, f2)
	}
}

// TestLostWhenTaken: a row changed under the holder (by hand, here) is noticed at the
// next renewal, and reported with lease.ErrLost.
func TestLostWhenTaken(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	a := open(t, fast("taken", "a"), cfg)
	lost := newLossProbe()
	if ok, err := a.Acquire(ctx, lost.onLost); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := admin.Exec(ctx, `UPDATE `+qualified(cfg.Schema, "troupe_lease")+` SET owner = 'intruder', fence = fence + 1`); err != nil {
		t.Fatal(err)
	}
	l := lost.wait(t)
	if !errors.Is(l.err, lease.ErrLost) {
		t.Errorf("loss reason %v", l.err)
	}
	if a.CheckLease() || a.Fence() != 0 {
		t.Error("still held")
	}
	// Acquire finds the intruder's live lease.
	if ok, err := a.Acquire(ctx, nil); ok || err != nil {
		t.Errorf("Acquire over the intruder: %v, %v", ok, err)
	}
	lost.none(t)
}

// TestAcquireFindsItsTenureGone: a holder whose row was taken learns it from Acquire
// too, before its heartbeat does, and the old tenure is reported lost.
func TestAcquireFindsItsTenureGone(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	s := fast("gone", "a")
	s.HeartbeatInterval, s.HeartbeatTimeout = 10*time.Second, time.Minute // no renewal during the test
	a := open(t, s, cfg)
	lost := newLossProbe()
	if ok, err := a.Acquire(ctx, lost.onLost); !ok || err != nil {
		t.Fatal(ok, err)
	}
	f := a.Fence()
	table := qualified(cfg.Schema, "troupe_lease")
	if _, err := admin.Exec(ctx, `UPDATE `+table+` SET owner = 'intruder', fence = fence + 1`); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Acquire(ctx, nil); ok || err != nil {
		t.Fatalf("Acquire over the intruder: %v, %v", ok, err)
	}
	if l := lost.wait(t); !errors.Is(l.err, lease.ErrLost) {
		t.Errorf("loss reason %v", l.err)
	}
	// The intruder leaves; a takes the lease back, in a new tenure.
	if _, err := admin.Exec(ctx, `UPDATE `+table+` SET owner = NULL`); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Acquire(ctx, lost.onLost); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if a.Fence() != f+2 {
		t.Errorf("fence %d, want %d", a.Fence(), f+2)
	}
	if ok, err := a.Release(ctx); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	lost.none(t)
}

// TestSharedPool: leases share the application's pool, and do not close it. The leases
// are steady: the first is released live after the others were made.
func TestSharedPool(t *testing.T) {
	ctx := testContext(t)
	pool, err := pgxpool.New(ctx, target.ConnString)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg := Config{Pool: pool, Schema: newSchema(t)}
	var ls []*Lease
	for i := range 8 {
		l := open(t, steady(fmt.Sprintf("shard-%d", i), "node-1"), cfg)
		if ok, err := l.Acquire(ctx, nil); !ok || err != nil {
			t.Fatalf("shard-%d: %v, %v", i, ok, err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		if ok, err := l.Release(ctx); !ok || err != nil {
			t.Fatalf("%s: %v, %v", l.settings.LeaseName, ok, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the shared pool after Close: %v", err)
	}
}

// TestAcquireAnsweredTooLate: an Acquire whose answer comes after the deadline its
// tenure would have had (here, it waits for a row lock held by another transaction)
// fails with lease.ErrUnavailable and holds nothing.
func TestAcquireAnsweredTooLate(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	s := fast("late", "a")
	s.OperationTimeout = 30 * time.Second
	a := open(t, s, cfg)
	if ok, err := a.Acquire(ctx, nil); !ok || err != nil { // the row exists
		t.Fatal(ok, err)
	}
	if ok, err := a.Release(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+qualified(cfg.Schema, "troupe_lease")+` WHERE name = 'late' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := a.Acquire(ctx, nil)
		done <- result{ok, err}
	}()
	// Wait until the Acquire waits for the lock, then for longer than the lease lives.
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for waiting := false; !waiting; <-poll.C {
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%troupe_lease%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	<-time.After(s.HeartbeatTimeout) // the scenario: the answer comes after the deadline
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.ok || !errors.Is(r.err, lease.ErrUnavailable) {
		t.Errorf("a late Acquire: %v, %v; want lease.ErrUnavailable", r.ok, r.err)
	}
	if a.CheckLease() || a.Fence() != 0 {
		t.Error("a late Acquire holds the lease")
	}
}

// TestReleaseLetsARenewalInFlightFinish: a Release while a renewal is in flight (here,
// waiting for a row lock another transaction holds) lets the renewal finish, and
// frees the row on its connection. It used to cancel the renewal, which costs its
// connection (pgx closes a connection whose call was cancelled): Release then had to
// open another within OperationTimeout, which a loaded machine often could not do (a
// Release that failed, or found the lease lapsed meanwhile).
func TestReleaseLetsARenewalInFlightFinish(t *testing.T) {
	ctx := testContext(t)
	cfg := Config{Schema: newSchema(t)}
	s := steady("inflight", "a")
	s.OperationTimeout = 30 * time.Second // the renewal waits for the test's lock as long as the test needs
	a := open(t, s, cfg)
	if ok, err := a.Acquire(ctx, nil); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+qualified(cfg.Schema, "troupe_lease")+` WHERE name = 'inflight' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for waiting := false; !waiting; <-poll.C {
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE%SET expires_at%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	opened := a.pool.Stat().NewConnsCount()
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := a.Release(ctx)
		done <- result{ok, err}
	}()
	for a.CheckLease() { // Release ends the tenure before anything else
		<-poll.C
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !r.ok || r.err != nil {
		t.Errorf("Release = %v, %v; want true", r.ok, r.err)
	}
	if n := a.pool.Stat().NewConnsCount() - opened; n != 0 {
		t.Errorf("Release opened %d connections: it cancelled the renewal in flight, which cost its connection", n)
	}
	if owner, _, live := rowOf(t, cfg.Schema, "inflight"); owner != "" || live {
		t.Errorf("after Release, the row is %q's, live %v", owner, live)
	}
}
