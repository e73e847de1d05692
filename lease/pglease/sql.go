package pglease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/lease"
)

// statements are the lease's SQL, with the table's name filled in.
type statements struct {
	acquire, renew, release string
}

// newStatements returns the statements on the lease table of schema.
//
// Acquire is one statement: it inserts the row, or takes it over when it is free,
// expired or already the owner's, and returns the fencing number, or returns no row
// when another owner holds a live lease. In READ COMMITTED, two acquirers that race
// meet at the row: the second waits for the first's commit and then evaluates the
// WHERE clause on the committed row, so exactly one of them gets it. The fencing
// number grows when the lease changes tenure (it was free or expired); an owner that
// acquires its own live lease again keeps its number. Every time is the server's
// now().
//
// Renew extends the expiry only while the row is live and still the tenure the holder
// acquired (its owner and fencing number). Release frees the row only when the owner
// holds it, keeps the fencing number, and reports whether the lease was live.
func newStatements(schema string) statements {
	t := qualified(schema, "troupe_lease")
	return statements{
		acquire: `INSERT INTO ` + t + ` AS l (name, owner, fence, expires_at, acquired_at, renewed_at)
VALUES ($1, $2, 1, now() + $3::bigint * interval '1 microsecond', now(), now())
ON CONFLICT (name) DO UPDATE SET
    owner       = excluded.owner,
    fence       = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() THEN l.fence ELSE l.fence + 1 END,
    acquired_at = CASE WHEN l.owner = excluded.owner AND l.expires_at > now() THEN l.acquired_at ELSE now() END,
    expires_at  = excluded.expires_at,
    renewed_at  = now()
WHERE l.owner IS NULL OR l.expires_at <= now() OR l.owner = excluded.owner
RETURNING fence`,
		renew: `UPDATE ` + t + ` SET expires_at = now() + $4::bigint * interval '1 microsecond', renewed_at = now()
WHERE name = $1 AND owner = $2 AND fence = $3 AND expires_at > now()`,
		release: `UPDATE ` + t + ` AS l SET owner = NULL, expires_at = now(), renewed_at = now()
FROM (SELECT name, expires_at FROM ` + t + ` WHERE name = $1 AND owner = $2 FOR UPDATE) AS old
WHERE l.name = old.name
RETURNING old.expires_at > now()`,
	}
}

// connect opens a pool of three connections on connString, each of which must open
// within connectTimeout unless a setup's context asked for it (setupContext), and
// checks with ctx that the server answers.
func connect(ctx context.Context, connString string, connectTimeout time.Duration) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's message leaves the password out.
		return nil, fmt.Errorf("%w: ConnString: %v", ErrInvalidConfig, err)
	}
	// One connection for the heartbeat, one for Acquire and Release, and one more:
	// pgx closes a connection whose query timed out in the background (a cancel
	// request, then a drain, each bounded by 15s), and the pool counts it until then,
	// so after a silent network failure renewals would otherwise wait for a slot.
	pc.MaxConns = 3
	pc.MinConns = 0
	pc.ConnConfig.ConnectTimeout = connectTimeout
	pc.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		// pgxpool gives the constructor a context with the values of the caller's.
		if deadline, ok := ctx.Value(setupDeadline{}).(time.Time); ok {
			cc.ConnectTimeout = max(cc.ConnectTimeout, time.Until(deadline))
		}
		return nil
	}
	if pc.ConnConfig.RuntimeParams["application_name"] == "" {
		pc.ConnConfig.RuntimeParams["application_name"] = "troupe-pglease"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		where := net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port)))
		var pgErr *pgconn.PgError
		if ctx.Err() == nil && errors.As(err, &pgErr) && !unavailableCode(pgErr.Code) {
			return nil, fmt.Errorf("pglease: connecting to %s (database %q, user %q): %w",
				where, pc.ConnConfig.Database, pc.ConnConfig.User, err)
		}
		return nil, storageError(ctx, "connecting to "+where, err)
	}
	return pool, nil
}

// setupDeadline is the key of a context value: the deadline of the setup (New's or
// Migrate's) the context belongs to. A connection the lease's pool opens for it may
// take until then, however short the pool's connect timeout.
type setupDeadline struct{}

// setupContext bounds a setup by d: its calls end with an opTimeout cause after d, and
// the connections opened for them may take as long.
func setupContext(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := opContext(parent, d)
	deadline, _ := ctx.Deadline()
	return context.WithValue(ctx, setupDeadline{}, deadline), cancel
}

// unavailableCode reports the SQLSTATE codes of a server that is going away or cannot
// take a connection now.
func unavailableCode(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
		"53300": // too many connections
		return true
	}
	return len(code) == 5 && code[:2] == "08" // connection exception
}

// opTimeout is the cause of a context that reached its time budget: an operation's
// OperationTimeout, or a setup's SetupTimeout.
type opTimeout struct{ d time.Duration }

func (e opTimeout) Error() string {
	return fmt.Sprintf("no answer within %v", e.d)
}

// opContext bounds one call to the store (or a setup) by d; storageError tells that
// timeout from the end of parent.
func opContext(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, d, opTimeout{d})
}

// storageError wraps an error of the database for op, run with ctx: the end of the
// caller's context as that context's error; a lost or refused connection, or no
// answer within the operation timeout, with lease.ErrUnavailable; anything else (a
// missing table, a permission) with the server's message.
func storageError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		var ot opTimeout
		if cause := context.Cause(ctx); errors.As(cause, &ot) {
			return fmt.Errorf("%w: pglease: %s: %v", lease.ErrUnavailable, op, ot)
		}
		return fmt.Errorf("pglease: %s: %w", op, ctx.Err())
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !unavailableCode(pgErr.Code) {
		return fmt.Errorf("pglease: %s: %w", op, err)
	}
	return fmt.Errorf("%w: pglease: %s: %v", lease.ErrUnavailable, op, err)
}
