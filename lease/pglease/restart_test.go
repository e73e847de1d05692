package pglease

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/lease"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestServerRestart stops the database and starts it again. A restart shorter than
// the lease's timeout costs the holder nothing: its renewals fail while the server is
// down, the pool reconnects, and the next renewal keeps the lease. A longer outage
// loses it (lease.ErrUnavailable), and another owner acquires it once the server is
// back, with the next fencing number.
func TestServerRestart(t *testing.T) {
	srv := target.Server
	if srv == nil {
		t.Skip("needs the throwaway server, which it stops: TROUPE_TEST_POSTGRES names an outside one")
	}
	ctx := testContext(t)
	schema := newSchema(t)
	var resumeOnce sync.Once
	var resumeErr error
	resume := func() error {
		resumeOnce.Do(func() {
			resumeErr = srv.Resume(context.Background())
			admin.Reset() // its connections died with the server
		})
		return resumeErr
	}
	defer func() { _ = resume() }() // whatever happens, the next tests get their server back

	// A short restart. The lease lives a minute, far longer than a restart takes (on a
	// loaded machine one took 9s, and a lease of 10s was lost).
	var resumed atomic.Bool
	renewedAfter := make(chan struct{})
	var once sync.Once
	failed := make(chan struct{})
	var failedOnce sync.Once
	s := fast("restart", "holder")
	s.HeartbeatTimeout, s.OperationTimeout = time.Minute, time.Second
	// The lease's log says when a renewal fails and when one succeeds again.
	logs := zap.New(zapcore.RegisterHooks(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.DebugLevel), func(e zapcore.Entry) error {
		switch {
		case e.Message == renewFailedMsg:
			failedOnce.Do(func() { close(failed) })
		case e.Message == renewedAgainMsg && resumed.Load():
			once.Do(func() { close(renewedAfter) })
		}
		return nil
	}))
	holder, err := New(ctx, s, Config{ConnString: target.ConnString, Schema: schema, Logger: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })
	lost := newLossProbe()
	if ok, err := holder.Acquire(ctx, lost.onLost); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	fence := holder.Fence()
	haltedAt := time.Now()
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Acquire(ctx, nil); !errors.Is(err, lease.ErrUnavailable) {
		t.Errorf("Acquire while the server is down: %v, want lease.ErrUnavailable", err)
	}
	if !holder.CheckLease() {
		t.Error("a failed Acquire of a held lease gave it up")
	}
	// The server stays down until a renewal has met the outage (a quick restart could
	// otherwise fall between two heartbeats).
	select {
	case <-failed:
	case <-ctx.Done():
		t.Fatal("no renewal failed while the server was down")
	}
	resumeOnce = sync.Once{}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	downFor := time.Since(haltedAt)
	resumed.Store(true)
	select {
	case <-renewedAfter:
	case l := <-lost:
		t.Fatalf("lost %v after the server stopped, which was down for %v: %v", l.at.Sub(haltedAt), downFor, l.err)
	case <-ctx.Done():
		t.Fatal("no successful renewal after the restart")
	}
	if !holder.CheckLease() || holder.Fence() != fence {
		t.Errorf("after the restart: held %v, fence %d (was %d)", holder.CheckLease(), holder.Fence(), fence)
	}
	lost.none(t)
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}

	// A long outage: the holder of a lease of 1s loses it while the server is down.
	a := open(t, fast("outage", "a"), Config{Schema: schema})
	b := open(t, fast("outage", "b"), Config{Schema: schema})
	if ok, err := a.Acquire(ctx, lost.onLost); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	fence = a.Fence()
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	resumeOnce = sync.Once{}
	l := lost.wait(t)
	if !errors.Is(l.err, lease.ErrUnavailable) {
		t.Errorf("loss reason %v, want lease.ErrUnavailable", l.err)
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	// The first calls may meet connections that died with the server.
	var acquiredAt time.Time
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for attempt := 0; acquiredAt.IsZero(); attempt++ {
		ok, err := b.Acquire(ctx, nil)
		switch {
		case ok:
			acquiredAt = time.Now()
		case err != nil && (attempt > 10 || !errors.Is(err, lease.ErrUnavailable)):
			t.Fatalf("b: Acquire after the restart: %v", err)
		}
		if acquiredAt.IsZero() {
			<-poll.C
		}
	}
	if !l.at.Before(acquiredAt) {
		t.Errorf("a lost the lease %v after b acquired it", l.at.Sub(acquiredAt))
	}
	if b.Fence() != fence+1 {
		t.Errorf("b's fence %d, a's was %d", b.Fence(), fence)
	}
}
