package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"github.com/troupe-go/troupe/persistence"
)

// Store is a persistence.Journal, persistence.SnapshotStore and
// persistence.TagQuerier on PostgreSQL. Open one per process (or several,
// each with its own connection pool) and share it; it is safe for
// concurrent use. Stores of several processes may use the same database.
type Store struct {
	pool   *pgxpool.Pool
	cfg    Config
	tun    tuning
	log    *zap.Logger
	attach *stderrlog.Attachable // nil when Config.Logger was set

	// mu guards closed; inflight counts the calls in progress, which Close
	// waits for.
	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup

	w     *writer
	stats counters
	// unregister ends the metrics callback (a no-op without a MeterProvider).
	unregister func()
}

var (
	_ persistence.Journal       = (*Store)(nil)
	_ persistence.SnapshotStore = (*Store)(nil)
	_ persistence.TagQuerier    = (*Store)(nil)
)

// Stats are counters of a Store's group commits since Open.
type Stats struct {
	// Commits counts the group-commit transactions that committed.
	Commits int64
	// FailedCommits counts those that failed as a whole.
	FailedCommits int64
	// Writes counts the atomic writes stored.
	Writes int64
	// Events counts the events stored.
	Events int64
	// Conflicts counts the atomic writes rejected with
	// persistence.ErrSequenceConflict.
	Conflicts int64
	// Reruns counts the group commits run again because another
	// transaction wrote one of their keys at the same time (see the
	// package documentation, "Two writers of one persistence id").
	Reruns int64
}

type counters struct {
	commits, failed, writes, events, conflicts, reruns atomic.Int64
}

// Stats returns the store's counters. Events divided by Commits is the
// average size of a group commit.
func (s *Store) Stats() Stats {
	return Stats{
		Commits:       s.stats.commits.Load(),
		FailedCommits: s.stats.failed.Load(),
		Writes:        s.stats.writes.Load(),
		Events:        s.stats.events.Load(),
		Conflicts:     s.stats.conflicts.Load(),
		Reruns:        s.stats.reruns.Load(),
	}
}

// Open connects to the database cfg names, migrates its schema (or, with
// cfg.ManualMigration, checks that it is current) and starts the group
// commit. It fails with an error wrapping ErrInvalidConfig for a bad config
// or connection string, ErrUnavailable when the server cannot be reached
// within cfg.ConnectTimeout, ErrSchemaTooNew or ErrSchemaOutdated.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, tuning{})
}

// open is Open with the statements' bounds of tun.
func open(ctx context.Context, cfg Config, tun tuning) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pool, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg, attach := cfg.withDefaults()
	if cfg.ManualMigration {
		var v int
		if v, err = schemaVersion(ctx, pool); err == nil {
			err = checkVersion(v)
		}
	} else {
		var n int
		if n, err = migrate(ctx, pool, cfg.Schema); err == nil && n > 0 {
			cfg.Logger.Info("pgjournal: schema migrated", zap.Int("applied", n), zap.Int("version", SchemaVersion))
		}
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, cfg: cfg, tun: tun.withDefaults(), log: cfg.Logger, attach: attach}
	s.w = startWriter(s)
	s.unregister = s.startMetrics()
	return s, nil
}

// connect validates cfg, makes the pool and checks that the server answers
// within cfg.ConnectTimeout.
func connect(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg, _ = cfg.withDefaults()
	pc, err := pgxpool.ParseConfig(cfg.ConnString)
	if err != nil {
		// pgx's message leaves out the password.
		return nil, fmt.Errorf("%w: ConnString: %v", ErrInvalidConfig, err)
	}
	pc.MaxConns = cfg.MaxConns
	pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	if cfg.Schema != "" {
		pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	}
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "troupe-pgjournal"
	}
	if pc.ConnConfig.RuntimeParams["plan_cache_mode"] == "" {
		// The statements are prepared once per connection and shaped for
		// index access whatever their arguments: planning them again for
		// each group commit (PostgreSQL's custom plans) costs more than
		// running them.
		pc.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		where := net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port)))
		if ctx.Err() != nil {
			return nil, fmt.Errorf("pgjournal: connecting to %s: %w", where, ctx.Err())
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && !unavailableCode(pgErr.Code) {
			return nil, fmt.Errorf("pgjournal: connecting to %s (database %q, user %q): %w",
				where, pc.ConnConfig.Database, pc.ConnConfig.User, err)
		}
		return nil, fmt.Errorf("%w: cannot connect to %s within %v: %v", ErrUnavailable, where, cfg.ConnectTimeout, err)
	}
	return pool, nil
}

// unavailableCode reports the SQLSTATE codes of a server that is going
// away or cannot take a connection now.
func unavailableCode(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
		"53300": // too many connections
		return true
	}
	return len(code) == 5 && code[:2] == "08" // connection exception
}

// storageError wraps an error of the database for op: context errors as
// they are, a lost or refused connection with ErrUnavailable, anything else
// with the server's message.
func storageError(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("pgjournal: %s: %w", op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !unavailableCode(pgErr.Code) {
		return fmt.Errorf("pgjournal: %s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// callError wraps an error of a call as storageError does and, when it shows a
// broken connection, drops the pooled connections (see dropBroken).
func (s *Store) callError(op string, err error) error {
	err = storageError(op, err)
	s.dropBroken(err)
	return err
}

// dropBroken drops every pooled connection (those in use when they come back) when
// err shows that an open connection broke: the server restarted, or the network
// failed, and the others are likely broken too. pgx pings only connections idle for
// more than a second before it hands them out, so after a quicker restart each of
// them would fail a call of its own. A failure to open a connection leaves the pool
// alone.
func (s *Store) dropBroken(err error) {
	var ce *pgconn.ConnectError
	if errors.Is(err, ErrUnavailable) && !errors.As(err, &ce) {
		s.pool.Reset()
	}
}

// enter registers a call in progress, or reports ErrClosed.
func (s *Store) enter() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return persistence.ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

func (s *Store) leave() { s.inflight.Done() }

// begin checks ctx and enters a call.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.enter()
}

// Close waits for the calls in progress, lets the group commit finish the
// writes queued, and closes the connection pool. Calling it again returns
// nil. It must not be called from a replay callback.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.w.stop()
	s.pool.Close()
	s.unregister()
	return nil
}

// HighestSequenceNr implements persistence.Journal.
func (s *Store) HighestSequenceNr(ctx context.Context, persistenceID string) (uint64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.leave()
	if len(persistenceID) > MaxPersistenceIDLen {
		return 0, nil
	}
	var highest int64
	err := s.pool.QueryRow(ctx, highestSQL, []byte(persistenceID)).Scan(&highest)
	if err != nil {
		return 0, s.callError(fmt.Sprintf("highest sequence number of %q", persistenceID), err)
	}
	return uint64(highest), nil
}

// highestExpr is persistence id $1's highest sequence number: that of its
// last event, or the one its last delete kept, whichever is higher (0 for
// none). The first is the end of the primary key's range for the id.
const highestExpr = `greatest(
    (SELECT max(sequence_nr) FROM troupe_event WHERE persistence_id = $1),
    (SELECT highest_sequence_nr FROM troupe_persistence_id WHERE persistence_id = $1),
    0)`

// highestSQL reads a persistence id's highest sequence number.
const highestSQL = `SELECT ` + highestExpr

// deleteSQL records the delete (how far, and the highest sequence number,
// which a write must stay above once the events are gone) and removes the
// events and their tag index rows, in one statement, only when $2 is not
// above the highest sequence number; it returns the number of persistence
// ids recorded (0 or 1). Writes touch troupe_persistence_id only when they
// leave a gap (see verifySQL): the row is created by the first delete of
// its persistence id, or by such a write.
const deleteSQL = `WITH h AS (
    SELECT ` + highestExpr + ` AS highest
), p AS (
    INSERT INTO troupe_persistence_id AS p (persistence_id, highest_sequence_nr, deleted_to)
    SELECT $1, h.highest, $2 FROM h WHERE h.highest >= $2
    ON CONFLICT (persistence_id) DO UPDATE
    SET highest_sequence_nr = greatest(p.highest_sequence_nr, excluded.highest_sequence_nr),
        deleted_to = greatest(p.deleted_to, excluded.deleted_to)
    RETURNING p.highest_sequence_nr
), t AS (
    DELETE FROM troupe_event_tag
    WHERE persistence_id = $1 AND sequence_nr <= $2 AND EXISTS (SELECT 1 FROM p)
), e AS (
    DELETE FROM troupe_event
    WHERE persistence_id = $1 AND sequence_nr <= $2 AND EXISTS (SELECT 1 FROM p)
)
SELECT count(*) FROM p`

// DeleteMessagesTo implements persistence.Journal. It deletes the events
// and their tag index entries and records how far it deleted, in one
// transaction; the highest sequence number stays in troupe_persistence_id.
func (s *Store) DeleteMessagesTo(ctx context.Context, persistenceID string, toSeq uint64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.leave()
	if toSeq == 0 {
		return nil
	}
	beyond := fmt.Errorf("%w: %q: delete to %d is above the highest sequence number", persistence.ErrBeyondHighest, persistenceID, toSeq)
	if !fitsInt64(toSeq) || len(persistenceID) > MaxPersistenceIDLen {
		return beyond
	}
	var n int
	if err := s.pool.QueryRow(ctx, deleteSQL, []byte(persistenceID), int64(toSeq)).Scan(&n); err != nil {
		return s.callError(fmt.Sprintf("delete %q to %d", persistenceID, toSeq), err)
	}
	if n == 0 {
		return beyond
	}
	return nil
}

// UseSystemLogger sends the store's log lines to l from now on when Config.Logger was
// not set; persistence.Start calls it with the logger of the actor system the store
// is attached to (the first, when several share the store). With Config.Logger set it
// does nothing.
func (s *Store) UseSystemLogger(l *zap.Logger) {
	if s.attach != nil {
		s.attach.Attach(l)
	}
}
