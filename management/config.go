package management

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Errors of the management server. Test for them with errors.Is.
var (
	// ErrInvalidConfig is returned by Config.Validate and Start for a configuration
	// that cannot work.
	ErrInvalidConfig = errors.New("management: invalid configuration")
	// ErrAlreadyStarted is returned by a second Start in the same system.
	ErrAlreadyStarted = errors.New("management: already started in this system")
)

// Defaults of Config.
const (
	// DefaultAddress is where the server listens by default: the loopback interface
	// only, on Akka Management's port.
	DefaultAddress = "127.0.0.1:8558"
	// DefaultReadTimeout bounds reading a request, body included.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds writing a response, and each event of an event stream.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultIdleTimeout bounds how long a kept-alive connection waits for its next
	// request.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxBodyBytes bounds a request's body.
	DefaultMaxBodyBytes = 64 << 10
	// DefaultMaxEventStreams bounds the event streams open at once.
	DefaultMaxEventStreams = 16
	// DefaultEventBuffer is how many events wait for a stream's client before the
	// stream is closed as too slow.
	DefaultEventBuffer = 256
	// DefaultQueryTimeout bounds the questions a request asks the actors (sharding's
	// regions and coordinators, another member's management actor).
	DefaultQueryTimeout = 5 * time.Second
)

// Config configures the management server. Zero values mean the documented defaults.
type Config struct {
	// Address is the "host:port" the server listens on. Default DefaultAddress
	// (127.0.0.1:8558): only this machine can reach it. Listening on other interfaces
	// ("0.0.0.0:8558", or a pod's address for Kubernetes probes) exposes the cluster's
	// state to whoever reaches them; use TLS and keep Token secret then. Port 0 picks
	// a free port (see Management.Addr).
	Address string
	// TLS, when set, makes the server speak HTTPS only, with this configuration
	// (certificates; ClientAuth for mutual TLS). It is cloned.
	TLS *tls.Config
	// EnableWrites turns on the routes that change the cluster (PUT and DELETE on
	// /cluster/members/{address}: leave and down). Off by default: they answer 403.
	// When on, they need Token.
	EnableWrites bool
	// Token is the bearer token the routes that change the cluster require
	// ("Authorization: Bearer <Token>"); it is compared in constant time. Required
	// (at least 16 bytes) when EnableWrites is set; ignored otherwise.
	Token string
	// Metrics, when set, serves GET /metrics: attach a Prometheus exporter's handler
	// here (for OpenTelemetry's, the promhttp handler of the registry the exporter
	// registers with). Nil: /metrics answers 404.
	Metrics http.Handler
	// ReadTimeout bounds reading a request, headers and body. Default
	// DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response; an event stream gets it for each event,
	// and a client that does not take an event within it loses its stream. Default
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	// Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds a request's body; a larger one is refused with 413. Default
	// DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// MaxEventStreams bounds the event streams (GET /cluster/events) open at once; one
	// more is refused with 503. Default DefaultMaxEventStreams.
	MaxEventStreams int
	// EventBuffer is how many events may wait for a stream's client; when one more
	// arrives the client is too slow: the event is dropped, counted (Stats) and the
	// stream closed, so that a client that does not read never holds anything up.
	// Default DefaultEventBuffer.
	EventBuffer int
	// QueryTimeout bounds what a request asks the actors: sharding's state and
	// statistics, readiness of the regions, and the leave request to another member.
	// Default DefaultQueryTimeout.
	QueryTimeout time.Duration
}

// minTokenBytes is the shortest Token accepted with EnableWrites.
const minTokenBytes = 16

// Validate reports the first problem in the configuration, wrapping ErrInvalidConfig:
// an address that is not host:port, a negative duration or bound, or EnableWrites
// without a Token of at least 16 bytes.
func (c Config) Validate() error {
	if c.Address != "" {
		if _, _, err := net.SplitHostPort(c.Address); err != nil {
			return fmt.Errorf("%w: Address %q: %w", ErrInvalidConfig, c.Address, err)
		}
	}
	if c.EnableWrites && len(c.Token) < minTokenBytes {
		return fmt.Errorf("%w: EnableWrites needs a Token of at least %d bytes", ErrInvalidConfig, minTokenBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ReadTimeout", c.ReadTimeout}, {"WriteTimeout", c.WriteTimeout}, {"IdleTimeout", c.IdleTimeout}, {"QueryTimeout", c.QueryTimeout}} {
		if d.v < 0 {
			return fmt.Errorf("%w: negative %s", ErrInvalidConfig, d.name)
		}
	}
	if c.MaxBodyBytes < 0 || c.MaxEventStreams < 0 || c.EventBuffer < 0 {
		return fmt.Errorf("%w: negative MaxBodyBytes, MaxEventStreams or EventBuffer", ErrInvalidConfig)
	}
	return nil
}

// withDefaults returns the configuration with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxEventStreams == 0 {
		c.MaxEventStreams = DefaultMaxEventStreams
	}
	if c.EventBuffer == 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = DefaultQueryTimeout
	}
	if c.TLS != nil {
		c.TLS = c.TLS.Clone()
	}
	return c
}
