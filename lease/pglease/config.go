package pglease

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"github.com/troupe-go/troupe/lease"
)

// Errors of New, Migrate and the lease's methods. Besides these, Acquire and Release
// return lease.ErrUnavailable when the database could not be reached or did not answer
// within the settings' OperationTimeout, and the context's error when their context
// ended.
var (
	// ErrInvalidConfig reports a Config or lease.Settings that New rejects, including a
	// connection string that does not parse. It wraps lease.ErrInvalidConfig, so either
	// matches with errors.Is.
	ErrInvalidConfig = fmt.Errorf("pglease: %w", lease.ErrInvalidConfig)

	// ErrClosed is returned by Acquire and Release after Close.
	ErrClosed = errors.New("pglease: lease closed")

	// ErrSchemaTooNew reports a database whose lease table was migrated by a newer
	// version of this package than the running one. Neither New nor Migrate touches
	// it.
	ErrSchemaTooNew = errors.New("pglease: the lease schema is newer than this version of pglease knows")

	// ErrSchemaOutdated reports, when Config.ManualMigration is set, a database whose
	// lease table is missing or older than this package needs: run Migrate, or apply
	// the SQL of Migrations, first.
	ErrSchemaOutdated = errors.New("pglease: the lease schema is missing or older than this version of pglease needs")
)

// DefaultSetupTimeout is Config.SetupTimeout's default.
const DefaultSetupTimeout = 30 * time.Second

// Config says where the lease table lives and how a lease of it behaves. Exactly one
// of ConnString and Pool is required; the zero value of every other field means its
// default.
type Config struct {
	// ConnString locates the database, as a URL ("postgres://user:pass@host/db") or in
	// keyword form ("host=... dbname=..."), as pgx's pgxpool.ParseConfig reads it. The
	// lease then opens a small pool of its own (three connections, application_name
	// "troupe-pglease" unless the string sets one), which Close closes. A connection
	// it opens for an operation (after a server restart, say) must open within the
	// settings' OperationTimeout; the first one, which New opens, within SetupTimeout.
	ConnString string

	// Pool is a connection pool the lease shares with the application, or with other
	// leases (sharding takes one lease per shard: give them all one pool). The lease
	// does not close it. Each statement of the lease takes a connection for one round
	// trip.
	Pool *pgxpool.Pool

	// Schema is the PostgreSQL schema that holds the lease table, created if missing.
	// Default: the first schema of the connection's search_path (usually "public").
	Schema string

	// ManualMigration turns off the migration New runs: New then only checks that
	// the lease table is current, and fails with ErrSchemaOutdated when it is not.
	// For teams that migrate with Migrate or their own tools (see Migrations).
	ManualMigration bool

	// SetupTimeout bounds the one-time work of New and Migrate: opening the first
	// connection and migrating the lease table (or checking its version), which may
	// wait for another node's migration. The settings' OperationTimeout, which bounds
	// each call of a held lease and is often short so that a partition shows soon,
	// does not bound it. With Pool, the pool's own connect timeout bounds each
	// connection it opens. Default: DefaultSetupTimeout.
	SetupTimeout time.Duration

	// SafetyMargin is how much sooner than the database a holder that cannot renew
	// gives the lease up: it considers the lease lost SafetyMargin before the row can
	// expire in the database. It must be less than HeartbeatTimeout minus
	// HeartbeatInterval. Default: a tenth of HeartbeatTimeout, or half of
	// HeartbeatTimeout minus HeartbeatInterval when that is less.
	SafetyMargin time.Duration

	// Logger receives the lease's log lines (failed renewals, losses). Default: the
	// logger of the actor system that uses the lease (the cluster's downing or a
	// singleton calls UseSystemLogger when it starts with it), and until then
	// warnings and errors to standard error; zap.NewNop() silences it on purpose.
	Logger *zap.Logger
}

// Validate reports the first field that holds an unusable value, wrapping
// ErrInvalidConfig. It does not parse ConnString, and does not check SafetyMargin
// against the lease's settings; New does both.
func (c Config) Validate() error {
	var problem string
	switch {
	case c.ConnString == "" && c.Pool == nil:
		problem = "one of ConnString and Pool is required"
	case c.ConnString != "" && c.Pool != nil:
		problem = "ConnString and Pool are both set"
	case c.SafetyMargin < 0:
		problem = fmt.Sprintf("SafetyMargin %v is negative", c.SafetyMargin)
	case c.SetupTimeout < 0:
		problem = fmt.Sprintf("SetupTimeout %v is negative", c.SetupTimeout)
	case len(c.Schema) > 63:
		problem = fmt.Sprintf("Schema %q is longer than PostgreSQL's 63 bytes", c.Schema)
	case strings.IndexByte(c.Schema, 0) >= 0 || !utf8.ValidString(c.Schema):
		problem = fmt.Sprintf("Schema %q holds a NUL byte or invalid UTF-8", c.Schema)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, problem)
}

// check validates the settings and the config together, and returns both with their
// defaults filled in, and, when cfg.Logger was nil, the default logger's switch to the
// system's.
func check(settings lease.Settings, cfg Config) (lease.Settings, Config, *stderrlog.Attachable, error) {
	if err := settings.Validate(); err != nil {
		// Settings.Validate wraps lease.ErrInvalidConfig, which ErrInvalidConfig wraps.
		reason := strings.TrimPrefix(err.Error(), lease.ErrInvalidConfig.Error()+": ")
		return settings, cfg, nil, fmt.Errorf("%w: settings: %s", ErrInvalidConfig, reason)
	}
	if err := cfg.Validate(); err != nil {
		return settings, cfg, nil, err
	}
	for _, name := range []struct{ field, value string }{{"LeaseName", settings.LeaseName}, {"OwnerName", settings.OwnerName}} {
		if strings.IndexByte(name.value, 0) >= 0 || !utf8.ValidString(name.value) {
			return settings, cfg, nil, fmt.Errorf("%w: %s %q holds a NUL byte or invalid UTF-8, which PostgreSQL's text refuses",
				ErrInvalidConfig, name.field, name.value)
		}
	}
	settings = settings.WithDefaults()
	room := settings.HeartbeatTimeout - settings.HeartbeatInterval
	if cfg.SafetyMargin == 0 {
		cfg.SafetyMargin = min(settings.HeartbeatTimeout/10, room/2)
	}
	if cfg.SafetyMargin >= room {
		return settings, cfg, nil, fmt.Errorf("%w: SafetyMargin %v must be less than HeartbeatTimeout minus HeartbeatInterval (%v)",
			ErrInvalidConfig, cfg.SafetyMargin, room)
	}
	var attach *stderrlog.Attachable
	if cfg.Logger == nil {
		cfg.Logger, attach = stderrlog.NewAttachable()
	}
	cfg = cfg.withSetupDefault()
	return settings, cfg, attach, nil
}

// withSetupDefault returns c with SetupTimeout's default filled in.
func (c Config) withSetupDefault() Config {
	if c.SetupTimeout == 0 {
		c.SetupTimeout = DefaultSetupTimeout
	}
	return c
}
