package pglease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"github.com/troupe-go/troupe/lease"
)

// Lease is a lease.Lease on a PostgreSQL table: one owner's view of one lease, as
// lease.Settings name them. It is safe for concurrent use; Acquire, Release and Close
// run one at a time.
//
// While it holds the lease, a goroutine of its own renews the row every
// HeartbeatInterval (and half an interval after a failed renewal). The lease is lost,
// and the callback given to Acquire is called once with an error wrapping
// lease.ErrUnavailable, when no renewal has succeeded for HeartbeatTimeout minus
// Config.SafetyMargin, measured on this process's monotonic clock from the moment the
// last successful renewal was sent; the row cannot expire in the database before
// SafetyMargin later (holding.go has the argument). It is lost with lease.ErrLost when
// a renewal finds the row no longer this tenure's: released by another value of the
// same owner, or changed by hand.
type Lease struct {
	settings lease.Settings
	cfg      Config
	pool     *pgxpool.Pool
	ownPool  bool
	sql      statements
	timing   timing
	log      *zap.Logger
	attach   *stderrlog.Attachable // nil when Config.Logger was set

	ops sync.Mutex // serialises Acquire, Release and Close

	mu     sync.Mutex // guards cur and closed
	cur    *tenure    // the lease as held now; nil when not held
	closed bool
}

var _ lease.Lease = (*Lease)(nil)

// The log lines of renewals: operators see a failing database, and then its recovery.
const (
	renewFailedMsg  = "pglease: renewing the lease failed; it is held until the deadline unless a renewal succeeds"
	renewedAgainMsg = "pglease: renewing the lease succeeded again after failed renewals"
)

// tenure is one holding of the lease by this value, from a successful Acquire to its
// Release or loss, with its heartbeat.
type tenure struct {
	fence  uint64  // h.fence, read without the lock
	h      holding // guarded by Lease.mu
	onLost func(error)
	loss   *time.Timer        // fires at the holding's deadline
	stop   chan struct{}      // closed when the tenure ends: the heartbeat sends no more renewals
	cancel context.CancelFunc // cancels a renewal in flight
	done   chan struct{}      // closed when the heartbeat has returned
}

// New returns the lease of settings.OwnerName on settings.LeaseName in the database cfg
// names. It connects (with cfg.ConnString) or uses cfg.Pool, and migrates the lease
// table, or only checks it with cfg.ManualMigration. That setup is bounded by ctx and
// by cfg.SetupTimeout, not by the settings' OperationTimeout, which bounds each call
// of the lease once it is made. It fails with an error wrapping ErrInvalidConfig (and
// lease.ErrInvalidConfig) for invalid settings or config or a connection string that
// does not parse, lease.ErrUnavailable when the server cannot be reached,
// ErrSchemaTooNew or ErrSchemaOutdated, or the server's error (a failed login, a
// missing database) as it is. Close the lease when done with it.
//
// Several leases may share one pool (cfg.Pool). Values of one owner name hold the
// lease together, as lease.Lease says.
func New(ctx context.Context, settings lease.Settings, cfg Config) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	settings, cfg, attach, err := check(settings, cfg)
	if err != nil {
		return nil, err
	}
	setupCtx, cancel := setupContext(ctx, cfg.SetupTimeout)
	defer cancel()
	pool, own := cfg.Pool, false
	if pool == nil {
		// The connections the lease opens later, for its operations, must open within
		// OperationTimeout.
		if pool, err = connect(setupCtx, cfg.ConnString, settings.OperationTimeout); err != nil {
			return nil, err
		}
		own = true
	}
	if err := prepareSchema(setupCtx, pool, cfg); err != nil {
		if own {
			pool.Close()
		}
		return nil, err
	}
	return &Lease{
		settings: settings,
		cfg:      cfg,
		pool:     pool,
		ownPool:  own,
		sql:      newStatements(cfg.Schema),
		timing:   newTiming(settings.HeartbeatInterval, settings.HeartbeatTimeout, cfg.SafetyMargin),
		log:      cfg.Logger.With(zap.String("lease", settings.LeaseName), zap.String("owner", settings.OwnerName)),
		attach:   attach,
	}, nil
}

// prepareSchema migrates the lease table, or checks its version, within ctx, a setup's
// context.
func prepareSchema(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	if cfg.ManualMigration {
		v, err := schemaVersion(ctx, pool, cfg.Schema)
		if err != nil {
			return err
		}
		return checkVersion(v)
	}
	n, err := migrate(ctx, pool, cfg.Schema)
	if err == nil && n > 0 {
		cfg.Logger.Info("pglease: schema migrated", zap.Int("applied", n), zap.Int("version", SchemaVersion))
	}
	return err
}

// Settings returns the lease's settings, with the defaults filled in.
func (l *Lease) Settings() lease.Settings { return l.settings }

// Acquire implements lease.Lease. One statement takes the row when it is free, expired
// or already this owner's, with an expiry of HeartbeatTimeout on the database's clock.
// On success the lease is held, and renewed, until Release, Close, or its loss, which
// is reported to onLost (when not nil) from a goroutine of its own. Acquiring a lease
// this value holds extends it and replaces onLost. It returns false, and holds
// nothing, when another owner's lease is live; if this value believed it held the
// lease, that tenure is reported lost (lease.ErrLost). It fails with
// lease.ErrUnavailable when the database was not reached or did not answer within
// OperationTimeout, with ctx's error when ctx ended, and with ErrClosed after Close;
// a tenure already held goes on then.
func (l *Lease) Acquire(ctx context.Context, onLost func(error)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.ops.Lock()
	defer l.ops.Unlock()
	if l.isClosed() {
		return false, fmt.Errorf("%w: acquiring %q for %q", ErrClosed, l.settings.LeaseName, l.settings.OwnerName)
	}
	opCtx, cancel := opContext(ctx, l.settings.OperationTimeout)
	defer cancel()
	sentAt := time.Now()
	var fence int64
	err := l.pool.QueryRow(opCtx, l.sql.acquire,
		l.settings.LeaseName, l.settings.OwnerName, l.settings.HeartbeatTimeout.Microseconds()).Scan(&fence)
	taken := errors.Is(err, pgx.ErrNoRows) // another owner's lease is live
	if err != nil && !taken {
		return false, storageError(opCtx, fmt.Sprintf("acquiring %q for %q", l.settings.LeaseName, l.settings.OwnerName), err)
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur
	if taken {
		if cur != nil {
			cur.h.ended = lostTaken
			l.endLocked(cur, lease.ErrLost)
		}
		return false, nil
	}
	if cur != nil && cur.h.fence == uint64(fence) && cur.h.renewed(sentAt, now, renewedOK) == holds {
		cur.onLost = onLost
		cur.loss.Reset(cur.h.deadline.Sub(now))
		return true, nil
	}
	if cur != nil {
		// This value's tenure ended: its deadline passed, or the row's fencing number
		// moved on (the row was taken and given back meanwhile).
		if cur.h.ended == holds {
			cur.h.ended = lostTaken
		}
		l.endLocked(cur, reasonOf(cur.h.ended))
	}
	h := newHolding(l.timing, uint64(fence), sentAt)
	if !h.valid(now) {
		// The answer came after the deadline the tenure would have had: the holder
		// cannot use the lease, and the row expires by itself.
		return false, fmt.Errorf("%w: pglease: acquiring %q for %q: answered after %v, too late to hold the lease",
			lease.ErrUnavailable, l.settings.LeaseName, l.settings.OwnerName, now.Sub(sentAt))
	}
	l.startLocked(h, onLost)
	return true, nil
}

// reasonOf is the error a tenure that ended with v reports.
func reasonOf(v verdict) error {
	if v == lostTimeout {
		return lease.ErrUnavailable
	}
	return lease.ErrLost
}

// Release implements lease.Lease. It stops the heartbeat first, so no loss callback
// follows, then frees the row when this owner holds it (through this value or
// another of the same owner name), keeping its fencing number. A renewal in flight
// finishes first, within Release's OperationTimeout, and the release goes on its
// connection. It returns true when the owner's lease was live, false when it was
// not; on an error (as Acquire's) the row expires HeartbeatTimeout after its last
// renewal.
func (l *Lease) Release(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.ops.Lock()
	defer l.ops.Unlock()
	opCtx, cancel := opContext(ctx, l.settings.OperationTimeout)
	defer cancel()
	l.mu.Lock()
	closed, cur := l.closed, l.cur
	if cur != nil {
		// Not cancelled: pgx closes a connection whose call was cancelled, and the
		// release would have to open another, which a loaded server can take longer
		// to give than OperationTimeout.
		l.stopLocked(cur)
	}
	l.mu.Unlock()
	if cur != nil {
		select {
		case <-cur.done:
		case <-opCtx.Done(): // the release then fails on opCtx
			cur.cancel()
			<-cur.done
		}
	}
	if closed {
		return false, fmt.Errorf("%w: releasing %q for %q", ErrClosed, l.settings.LeaseName, l.settings.OwnerName)
	}
	var live bool
	err := l.pool.QueryRow(opCtx, l.sql.release, l.settings.LeaseName, l.settings.OwnerName).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, storageError(opCtx, fmt.Sprintf("releasing %q for %q", l.settings.LeaseName, l.settings.OwnerName), err)
	}
	return live, nil
}

// CheckLease implements lease.Lease: it reports whether this value holds the lease,
// without asking the database. It turns false at the holder's deadline exactly, even
// before the heartbeat has noticed it.
func (l *Lease) CheckLease() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil && l.cur.h.valid(time.Now())
}

// Fence returns the fencing number of the tenure this value holds, or 0 when it holds
// none. The number grows by at least one on every change of owner (every time the
// lease is acquired while free or expired), and stays the same while one owner
// renews or acquires its live lease again.
//
// Fencing protects a resource from a holder that lost the lease without knowing it
// yet (a long pause, a partition): send Fence with every write, and have the resource
// refuse a write whose number is below the highest it has seen. A write to the same
// PostgreSQL database can be fenced in SQL instead, by checking the lease row in the
// write's statement:
//
//	UPDATE accounts SET ... WHERE ... AND EXISTS (SELECT 1 FROM troupe_lease
//	    WHERE name = $lease AND owner = $owner AND fence = $fence AND expires_at > now())
//
// Read Fence after Acquire and check CheckLease before acting: a Fence read after the
// lease was lost is 0.
func (l *Lease) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil || !l.cur.h.valid(time.Now()) {
		return 0
	}
	return l.cur.h.fence
}

// Close stops the heartbeat without releasing the lease, which then expires in the
// database HeartbeatTimeout after its last renewal (call Release first to free it at
// once), and closes the connection pool when the lease opened it. No loss callback
// follows. Acquire and Release fail with ErrClosed afterwards. Calling Close again
// does nothing. Closing the lease's own pool waits for its connections to close; pgx
// gives a connection whose server went silent up to 15 seconds for that.
func (l *Lease) Close() error {
	l.ops.Lock()
	defer l.ops.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	cur := l.cur
	if cur != nil {
		l.endLocked(cur, nil)
	}
	l.mu.Unlock()
	if cur != nil {
		<-cur.done
	}
	if l.ownPool {
		l.pool.Close()
	}
	return nil
}

func (l *Lease) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// startLocked begins a tenure: its loss timer and its heartbeat.
func (l *Lease) startLocked(h holding, onLost func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &tenure{fence: h.fence, h: h, onLost: onLost, stop: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	t.loss = time.AfterFunc(time.Until(h.deadline), func() { l.deadlinePassed(t) })
	l.cur = t
	go l.heartbeat(ctx, t)
}

// stopLocked ends tenure t, when it is the current one, and reports whether it was:
// its timer stops, and its heartbeat sends no more renewals; a renewal in flight goes
// on to its answer, which is then ignored, unless t.cancel cancels it.
func (l *Lease) stopLocked(t *tenure) bool {
	if l.cur != t {
		return false
	}
	l.cur = nil
	t.loss.Stop()
	close(t.stop)
	return true
}

// endLocked ends tenure t: it stops its timer and heartbeat, cancelling a renewal in
// flight, and, when reason is not nil, reports the loss to its callback from a new
// goroutine.
func (l *Lease) endLocked(t *tenure, reason error) {
	if !l.stopLocked(t) {
		return
	}
	t.cancel()
	if reason == nil {
		return
	}
	l.log.Warn("pglease: lease lost", zap.Error(reason), zap.Uint64("fence", t.h.fence))
	if f := t.onLost; f != nil {
		err := fmt.Errorf("%w: %q held by %q (fence %d)", reason, l.settings.LeaseName, l.settings.OwnerName, t.h.fence)
		go f(err)
	}
}

// deadlinePassed runs when the loss timer of t fires: the lease is lost unless a
// renewal moved the deadline meanwhile.
func (l *Lease) deadlinePassed(t *tenure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != t {
		return
	}
	now := time.Now()
	if st := t.h.due(now); !st.lost {
		t.loss.Reset(t.h.deadline.Sub(now))
		return
	}
	l.endLocked(t, lease.ErrUnavailable)
}

// heartbeat renews tenure t until it ends: when a renewal is due (as t's holding
// says), it sends one, bounded by OperationTimeout and by the deadline, and applies
// the answer.
func (l *Lease) heartbeat(ctx context.Context, t *tenure) {
	defer close(t.done)
	defer t.cancel()
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for {
		l.mu.Lock()
		if l.cur != t {
			l.mu.Unlock()
			return
		}
		now := time.Now()
		st := t.h.due(now)
		if st.lost {
			l.endLocked(t, reasonOf(t.h.ended))
			l.mu.Unlock()
			return
		}
		deadline := t.h.deadline
		l.mu.Unlock()
		if !st.renew {
			wait.Reset(st.wake.Sub(now))
			select {
			case <-t.stop:
				return
			case <-wait.C:
			}
			continue
		}
		sentAt := time.Now()
		o, err := l.renew(ctx, t, sentAt, deadline)
		l.mu.Lock()
		if l.cur != t {
			l.mu.Unlock()
			return // ended while the renewal was in flight
		}
		now = time.Now()
		failedBefore := t.h.failures
		v := t.h.renewed(sentAt, now, o)
		failures := t.h.failures
		deadline = t.h.deadline
		switch {
		case v != holds:
			l.endLocked(t, reasonOf(v))
		case o == renewedOK:
			t.loss.Reset(deadline.Sub(now))
		}
		l.mu.Unlock()
		switch {
		case o == renewFailed && v == holds:
			l.log.Warn(renewFailedMsg, zap.Error(err), zap.Int("consecutive failures", failures), zap.Duration("left", deadline.Sub(now)))
		case o == renewedOK && v == holds && failedBefore > 0:
			l.log.Info(renewedAgainMsg, zap.Int("failed renewals", failedBefore))
		}
	}
}

// renew sends one renewal of t, sent at sentAt, bounded by OperationTimeout and by
// deadline.
func (l *Lease) renew(ctx context.Context, t *tenure, sentAt, deadline time.Time) (outcome, error) {
	limit := sentAt.Add(l.settings.OperationTimeout)
	if deadline.Before(limit) {
		limit = deadline
	}
	rctx, cancel := context.WithDeadlineCause(ctx, limit, opTimeout{limit.Sub(sentAt)})
	defer cancel()
	tag, err := l.pool.Exec(rctx, l.sql.renew,
		l.settings.LeaseName, l.settings.OwnerName, int64(t.fence), l.settings.HeartbeatTimeout.Microseconds())
	switch {
	case err != nil:
		return renewFailed, storageError(rctx, fmt.Sprintf("renewing %q for %q", l.settings.LeaseName, l.settings.OwnerName), err)
	case tag.RowsAffected() == 0:
		return notOurs, nil
	}
	return renewedOK, nil
}

// UseSystemLogger sends the lease's log lines to l from now on when Config.Logger was
// not set; the cluster (DowningConfig.Lease) and the singleton (Config.Lease) call it
// with their actor system's logger when they start with the lease. With Config.Logger
// set it does nothing.
func (l *Lease) UseSystemLogger(log *zap.Logger) {
	if l.attach != nil {
		l.attach.Attach(log)
	}
}
