package pgjournal

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

// Errors of Open and Migrate. The journal and snapshot store methods
// return the sentinel errors of package persistence, and ErrUnavailable.
var (
	// ErrInvalidConfig reports a Config that Validate rejects, including a
	// connection string that does not parse.
	ErrInvalidConfig = errors.New("pgjournal: invalid config")

	// ErrUnavailable reports that PostgreSQL could not be reached, or that
	// the connection broke during a call: a refused or timed-out connection,
	// a server shutting down, a network failure. A write that fails with it
	// may or may not have been committed.
	ErrUnavailable = errors.New("pgjournal: PostgreSQL unavailable")

	// ErrSchemaTooNew reports a database whose schema was migrated by a
	// newer version of this package than the running one. Neither Open nor
	// Migrate touches it.
	ErrSchemaTooNew = errors.New("pgjournal: the database schema is newer than this version of pgjournal knows")

	// ErrSchemaOutdated reports, when Config.ManualMigration is set, a
	// database whose schema is missing or older than this package needs:
	// run Migrate, or apply the SQL of Migrations, first.
	ErrSchemaOutdated = errors.New("pgjournal: the database schema is missing or older than this version of pgjournal needs")
)

// Defaults of the zero values of Config.
const (
	// DefaultWriteConcurrency is how many group commits may be in flight
	// at once, each a transaction on its own connection.
	DefaultWriteConcurrency = 2

	// DefaultConnectTimeout bounds each attempt to open a connection, and
	// Open's first contact with the server.
	DefaultConnectTimeout = 10 * time.Second

	// DefaultWriteTimeout bounds one group commit: when the server does
	// not answer within it, the writers of the batch get an error.
	DefaultWriteTimeout = 30 * time.Second

	// DefaultReplayPageSize is how many events one query of a replay or
	// of EventsByTag reads. A page's rows are read from the connection as
	// they are consumed, so its size does not set how much is held in
	// memory; it sets how often a long replay waits for a round trip and
	// a new query, which on a busy machine (the server and the client
	// waiting to be scheduled) costs as much as reading a few thousand
	// rows.
	DefaultReplayPageSize = 32768

	// DefaultMaxBatchBytes bounds the size of one group commit, in bytes of
	// events; a larger queue is split over several transactions (a single
	// WriteMessages call is never split).
	DefaultMaxBatchBytes = 16 << 20

	// DefaultMaxWriteBytes bounds one atomic write or snapshot, in bytes;
	// larger ones are rejected with persistence.ErrTooLarge.
	DefaultMaxWriteBytes = 64 << 20
)

// maxMaxWriteBytes keeps an atomic write, sent as arrays of one statement,
// well below PostgreSQL's limit of 1 GiB per value.
const maxMaxWriteBytes = 256 << 20

// Config configures a Store. Only ConnString is required; the zero value of
// every other field means its default.
type Config struct {
	// ConnString locates the database, as a URL
	// ("postgres://user:pass@host:5432/db?sslmode=verify-full") or in
	// keyword form ("host=... dbname=..."); see pgx's pgconn.ParseConfig
	// and pgxpool.ParseConfig. Its settings apply, except the pool size
	// and connect timeout, which MaxConns and ConnectTimeout set. Unless
	// it sets them itself, the store's connections run with
	// application_name "troupe-pgjournal" and plan_cache_mode
	// "force_generic_plan" (the statements are planned once per
	// connection). The store prepares its write statements on each
	// connection: behind PgBouncer, use session pooling, or a PgBouncer
	// that supports prepared statements in transaction pooling.
	ConnString string

	// Schema is the PostgreSQL schema that holds the tables. It is
	// created if missing, and put first in every connection's
	// search_path. Default: the connection's search_path as it is
	// (usually "public").
	Schema string

	// MaxConns is the size of the connection pool, which writes, replays
	// and queries share. Default: WriteConcurrency + 4.
	MaxConns int32

	// WriteConcurrency is how many group commits may be in flight at once.
	// Default: DefaultWriteConcurrency.
	WriteConcurrency int

	// ManualMigration turns off the schema migration Open runs: Open then
	// only checks that the schema is current, and fails with
	// ErrSchemaOutdated when it is not. For teams that migrate with
	// Migrate or their own tools (see Migrations).
	ManualMigration bool

	// ConnectTimeout bounds each attempt to open a connection, and the
	// first contact Open makes. Default: DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// WriteTimeout bounds one group commit. Default: DefaultWriteTimeout.
	WriteTimeout time.Duration

	// ReplayPageSize is how many events one query of a replay or of
	// EventsByTag reads; a replay runs one query per page, so it never
	// holds a whole history in memory. Default: DefaultReplayPageSize.
	ReplayPageSize int

	// MaxBatchBytes bounds one group commit. Default:
	// DefaultMaxBatchBytes.
	MaxBatchBytes int

	// MaxWriteBytes bounds one atomic write and one snapshot, at most 256
	// MiB. Default: DefaultMaxWriteBytes.
	MaxWriteBytes int

	// Logger receives the store's log lines. Default: the logger of the actor
	// system the store is attached to by persistence.Start (UseSystemLogger), and
	// until then warnings and errors to standard error; zap.NewNop() silences the
	// store on purpose.
	Logger *zap.Logger

	// MeterProvider, when set, receives the store's metrics (troupe.pgjournal.*,
	// listed in docs/operations.md). A store is opened apart from any actor system,
	// so it does not take the system's: pass the same provider (sys.MeterProvider()).
	// Nil: no metrics.
	MeterProvider metric.MeterProvider
}

// tuning holds the bounds of the group commit's statements that no user sets:
// Open uses the defaults, and tests (export_test.go) open stores with others to
// cross every boundary.
type tuning struct {
	// chunkBytes and chunkEvents bound one statement of a group commit
	// (defaults maxChunkBytes, maxChunkEvents); copyMinEvents is the size
	// from which the fast path sends events by COPY (default copyMinEvents;
	// -1: never).
	chunkBytes, chunkEvents int
	copyMinEvents           int
}

// withDefaults returns t with its zero values replaced by the defaults.
func (t tuning) withDefaults() tuning {
	if t.chunkBytes == 0 {
		t.chunkBytes = maxChunkBytes
	}
	if t.chunkEvents == 0 {
		t.chunkEvents = maxChunkEvents
	}
	if t.copyMinEvents == 0 {
		t.copyMinEvents = copyMinEvents
	}
	return t
}

// Validate reports the first field that holds an unusable value, wrapping
// ErrInvalidConfig. It does not parse ConnString; Open does.
func (c Config) Validate() error {
	var problem string
	switch {
	case c.ConnString == "":
		problem = "ConnString is empty"
	case c.MaxConns < 0:
		problem = fmt.Sprintf("MaxConns %d is negative", c.MaxConns)
	case c.WriteConcurrency < 0:
		problem = fmt.Sprintf("WriteConcurrency %d is negative", c.WriteConcurrency)
	case c.ConnectTimeout < 0:
		problem = fmt.Sprintf("ConnectTimeout %v is negative", c.ConnectTimeout)
	case c.WriteTimeout < 0:
		problem = fmt.Sprintf("WriteTimeout %v is negative", c.WriteTimeout)
	case c.ReplayPageSize < 0:
		problem = fmt.Sprintf("ReplayPageSize %d is negative", c.ReplayPageSize)
	case c.MaxBatchBytes < 0:
		problem = fmt.Sprintf("MaxBatchBytes %d is negative", c.MaxBatchBytes)
	case c.MaxWriteBytes < 0 || c.MaxWriteBytes > maxMaxWriteBytes:
		problem = fmt.Sprintf("MaxWriteBytes %d is not within 0..%d", c.MaxWriteBytes, maxMaxWriteBytes)
	case len(c.Schema) > 63:
		problem = fmt.Sprintf("Schema %q is longer than PostgreSQL's 63 bytes", c.Schema)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, problem)
}

// withDefaults returns c with its zero values replaced by the defaults, and,
// when Logger was nil, the default logger's switch to the system's.
func (c Config) withDefaults() (Config, *stderrlog.Attachable) {
	if c.WriteConcurrency == 0 {
		c.WriteConcurrency = DefaultWriteConcurrency
	}
	if c.MaxConns == 0 {
		c.MaxConns = int32(c.WriteConcurrency) + 4
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ReplayPageSize == 0 {
		c.ReplayPageSize = DefaultReplayPageSize
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxWriteBytes == 0 {
		c.MaxWriteBytes = DefaultMaxWriteBytes
	}
	var attach *stderrlog.Attachable
	if c.Logger == nil {
		c.Logger, attach = stderrlog.NewAttachable()
	}
	return c, attach
}
