package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

func TestOpenInvalidConfig(t *testing.T) {
	ctx := testContext(t)
	for _, cfg := range []Config{
		{},
		{ConnString: "postgres://%zz"},
		{ConnString: "host=/tmp port=notaport"},
		{ConnString: target.ConnString, MaxWriteBytes: 1 << 30},
		{ConnString: target.ConnString, WriteConcurrency: -1},
	} {
		s, err := Open(ctx, cfg)
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
		if s != nil {
			s.Close()
		}
	}
	// The password stays out of the message.
	_, err := Open(ctx, Config{ConnString: "postgres://u:secret@host:badport/db"})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open with a bad port: %v", err)
	}
}

// TestOpenUnreachable: a refused connection and a server that never answers
// both fail Open with ErrUnavailable, within the connect timeout.
func TestOpenUnreachable(t *testing.T) {
	ctx := testContext(t)

	// Nothing listens on a port just freed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	// A listener that accepts and then stays silent, like a server behind
	// a dropped route.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		silent.Close()
		<-accepted
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()

	for _, addr := range []string{closed, silent.Addr().String()} {
		start := time.Now()
		s, err := Open(ctx, Config{ConnString: "postgres://troupe@" + addr + "/postgres?sslmode=disable&connect_timeout=0",
			ConnectTimeout: 300 * time.Millisecond})
		took := time.Since(start)
		if s != nil {
			s.Close()
		}
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Open(%s) = %v, want ErrUnavailable naming the address", addr, err)
		}
		// A bound, not a measurement: Open must not hang.
		if took > 10*time.Second {
			t.Errorf("Open(%s) took %v with a connect timeout of 300ms", addr, took)
		}
	}
}

// TestConnectionLoss stops the server under load and starts it again:
// writes fail with ErrUnavailable while it is down (the entities would
// stop), the pool reconnects, writes work again once it is back, and no
// acknowledged event is lost.
func TestConnectionLoss(t *testing.T) { forEachPath(t, testConnectionLoss) }

func testConnectionLoss(t *testing.T, edit func(*setup)) {
	srv := target.Server
	if srv == nil {
		t.Skip("needs the throwaway server, which it stops: TROUPE_TEST_POSTGRES names an outside one")
	}
	s, _ := openFresh(t, func(c *setup) {
		edit(c)
		c.ConnectTimeout = 2 * time.Second
		c.WriteTimeout = 10 * time.Second
	})
	ctx := testContext(t)
	const writers = 8
	warm := make(chan struct{}, writers) // a writer has 5 acknowledged writes
	failed := make(chan error, writers)  // a writer's first failure
	resumed := make(chan struct{})       // the server is back
	type result struct {
		pid   string
		acked []uint64
	}
	done := make(chan result, writers) // a writer's acknowledged sequence numbers
	problems := make(chan error, writers)
	for g := range writers {
		go func() {
			pid := fmt.Sprintf("loss-%d", g)
			var acked []uint64
			seq := uint64(1)
			down, after := false, 0
			// Write until the outage, then 5 more.
			for !down || after < 5 {
				res, err := s.WriteMessages(ctx, []persistence.AtomicWrite{aw(pid, seq, seq)})
				if err == nil && res[0] != nil {
					problems <- fmt.Errorf("%s #%d: %w", pid, seq, res[0])
					return
				}
				if err != nil {
					if down {
						problems <- fmt.Errorf("%s: write after the server came back: %w", pid, err)
						return
					}
					down = true
					failed <- err
					<-resumed
					// The outcome of the failed write is unknown: go on
					// after whatever is stored, as a restarted entity
					// would. The first calls may still meet broken
					// connections.
					var h uint64
					for attempt := 0; ; attempt++ {
						if h, err = s.HighestSequenceNr(ctx, pid); err == nil || attempt == 10 {
							break
						}
					}
					if err != nil {
						problems <- fmt.Errorf("%s: reading the highest after the server came back: %w", pid, err)
						return
					}
					seq = h + 1
					continue
				}
				acked = append(acked, seq)
				if len(acked) == 5 && !down {
					warm <- struct{}{}
				}
				if down {
					after++
				}
				seq++
			}
			done <- result{pid, acked}
		}()
	}
	for range writers {
		<-warm
	}
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	var resumeOnce sync.Once
	resume := func() error {
		var err error
		resumeOnce.Do(func() {
			err = srv.Resume(context.Background())
			admin.Reset() // its connections died with the server
			close(resumed)
		})
		return err
	}
	defer resume() // whatever happens, the next tests get their server back
	for i := range writers {
		err := <-failed
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("a write while the server is down failed with %v, want ErrUnavailable", err)
		}
		if i == 0 {
			t.Logf("a write while the server is down: %v", err)
		}
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	for range writers {
		select {
		case r := <-done:
			stored := seqsOf(t, s, r.pid)
			if !slices.Equal(stored, span(1, uint64(len(stored)))) {
				t.Errorf("%s: stored %v", r.pid, stored)
			}
			for _, seq := range r.acked {
				if _, found := slices.BinarySearch(stored, seq); !found {
					t.Errorf("%s: acknowledged #%d is lost", r.pid, seq)
				}
			}
		case err := <-problems:
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.FailedCommits == 0 {
		t.Errorf("stats %+v: no failed commit while the server was down", st)
	}
}

// TestQuickRestart: after a restart of the server quicker than a second (a failover, a
// fast restart), the pooled connections are all broken, and pgx pings only those idle
// for longer. The first call that meets a broken one drops them all, so that at most
// one call fails; before, each pooled connection failed a call of its own (up to
// MaxConns failures in a row: enough to open a snapshot store's circuit breaker).
func TestQuickRestart(t *testing.T) {
	srv := target.Server
	if srv == nil {
		t.Skip("needs the throwaway server, which it stops: TROUPE_TEST_POSTGRES names an outside one")
	}
	const conns = 4
	s, _ := openFresh(t, func(c *setup) { c.MaxConns = conns })
	ctx := testContext(t)
	// Fill the pool: conns calls at once, each on a connection of its own.
	start := make(chan struct{})
	errs := make(chan error, conns)
	for range conns {
		go func() {
			<-start
			_, _, err := s.LoadSnapshot(ctx, "quick", persistence.SnapshotCriteria{})
			errs <- err
		}()
	}
	close(start)
	for range conns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := s.pool.Stat().TotalConns(); n < 2 {
		t.Fatalf("%d pooled connections, want several", n)
	}
	began := time.Now()
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	err := srv.Resume(context.Background())
	admin.Reset()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took >= time.Second {
		// pgx pings connections idle for a second before it hands them out, so none
		// fails: the test shows nothing this time.
		t.Logf("the restart took %v: pgx pings the broken connections", took)
	}
	failed := 0
	for i := range 2 * conns {
		var err error
		switch i % 3 {
		case 0:
			_, _, err = s.LoadSnapshot(ctx, "quick", persistence.SnapshotCriteria{})
		case 1:
			_, err = s.HighestSequenceNr(ctx, "quick")
		default:
			err = s.ReplayMessages(ctx, "quick", 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error { return nil })
		}
		if err != nil {
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("call %d after the restart: %v, want ErrUnavailable", i, err)
			}
			failed++
		}
	}
	if failed > 1 {
		t.Errorf("%d calls in a row failed after a quick restart, want at most the first", failed)
	}
}
