package actor

import (
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Config configures a System. The zero value is valid: every zero field means its
// documented default.
type Config struct {
	// Logger receives the runtime's logs. When neither Logger nor Slog is set,
	// warnings and errors go to standard error (never nothing: a failing actor is
	// always visible). Use zap.NewNop() to silence a system on purpose.
	Logger *zap.Logger
	// Slog, as an alternative to Logger, receives the runtime's logs through the
	// application's log/slog handler. Setting both is an error. (System.Config
	// reports it as the Logger that wraps it.)
	Slog *slog.Logger
	// AskTimeout bounds an Ask whose context has no deadline. Default 10s.
	AskTimeout time.Duration
	// Throughput is how many messages an actor handles before yielding its goroutine to
	// other actors. Default 300.
	Throughput int
	// StashCapacity is the default stash bound per actor. Default 10,000.
	StashCapacity int
	// DeadLetterLogLimit is how many dead letters are logged per
	// DeadLetterLogInterval; the rest are counted and summarised. Default 10; negative
	// turns dead-letter logging off (subscribers still see every DeadLetter).
	DeadLetterLogLimit int
	// DeadLetterLogInterval is the window of DeadLetterLogLimit. Default 1s.
	DeadLetterLogInterval time.Duration
	// PhaseTimeout bounds each coordinated-shutdown phase. Default 10s.
	PhaseTimeout time.Duration
	// PhaseTimeouts overrides PhaseTimeout for single phases.
	PhaseTimeouts map[Phase]time.Duration
	// MeterProvider, when set, receives the metrics of the runtime and of every
	// extension started on the system (remote, cluster, persistence, singleton,
	// sharding, ddata, journals): instruments named troupe.*, listed in
	// docs/operations.md. Nil, the default, turns metrics off, and then they cost
	// nothing but a nil check.
	MeterProvider metric.MeterProvider
	// TracerProvider, when set, turns tracing on: a message sent while handling a
	// traced message, or with SendContext, Ask or a sharded EntityRef from a context
	// with a span, carries its W3C trace context (to other nodes too), an ask from a
	// context with a span is a client span (troupe.ask <Type>), and the actors whose
	// Props set Trace handle
	// each message in a span (troupe.receive <Type>), the child of the span that sent
	// it. Nil, the default, turns tracing off: nothing is added to messages or to the
	// wire.
	TracerProvider trace.TracerProvider
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

func (c Config) withDefaults() Config {
	switch {
	case c.Logger != nil:
	case c.Slog != nil:
		c.Logger, c.Slog = slogLogger(c.Slog.Handler()), nil
	default:
		c.Logger = defaultLogger()
	}
	if c.AskTimeout == 0 {
		c.AskTimeout = 10 * time.Second
	}
	if c.Throughput == 0 {
		c.Throughput = 300
	}
	if c.StashCapacity == 0 {
		c.StashCapacity = 10_000
	}
	if c.DeadLetterLogLimit == 0 {
		c.DeadLetterLogLimit = 10
	}
	if c.DeadLetterLogInterval == 0 {
		c.DeadLetterLogInterval = time.Second
	}
	if c.PhaseTimeout == 0 {
		c.PhaseTimeout = 10 * time.Second
	}
	return c
}

// Validate reports fields out of range.
func (c Config) Validate() error {
	switch {
	case c.Logger != nil && c.Slog != nil:
		return fmt.Errorf("%w: both Logger and Slog are set", ErrInvalidConfig)
	case c.AskTimeout < 0:
		return fmt.Errorf("%w: negative AskTimeout", ErrInvalidConfig)
	case c.Throughput < 0:
		return fmt.Errorf("%w: negative Throughput %d", ErrInvalidConfig, c.Throughput)
	case c.StashCapacity < 0:
		return fmt.Errorf("%w: negative StashCapacity %d", ErrInvalidConfig, c.StashCapacity)
	case c.DeadLetterLogInterval < 0:
		return fmt.Errorf("%w: negative DeadLetterLogInterval", ErrInvalidConfig)
	case c.PhaseTimeout < 0:
		return fmt.Errorf("%w: negative PhaseTimeout", ErrInvalidConfig)
	}
	for p, d := range c.PhaseTimeouts {
		if !knownPhase(p) {
			return fmt.Errorf("%w: %w %q", ErrInvalidConfig, ErrUnknownPhase, p)
		}
		if d <= 0 {
			return fmt.Errorf("%w: phase %q timeout %v", ErrInvalidConfig, p, d)
		}
	}
	return nil
}
