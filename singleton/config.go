package singleton

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/supervision"
)

// Errors returned by this package. Test for them with errors.Is.
var (
	// ErrInvalidConfig is wrapped by Config.Validate and ProxyConfig.Validate, and
	// returned by Start and Proxy for an invalid configuration or a system without a
	// running cluster.
	ErrInvalidConfig = singletoncore.ErrInvalidConfig
	// ErrAlreadyStarted is returned by Start when a manager for the same name already
	// runs in the system.
	ErrAlreadyStarted = errors.New("singleton: already started in this system")
	// ErrStopped is returned by Manager.AwaitStatus when the manager has stopped
	// before the condition held.
	ErrStopped = errors.New("singleton: the manager has stopped")
)

// Defaults, as Akka's cluster singleton.
const (
	// DefaultName is the singleton's name when Config.Name (or ProxyConfig.Name) is
	// empty.
	DefaultName = "singleton"
	// DefaultHandOverRetryInterval is how often a manager that is becoming the oldest
	// asks the previous oldest to hand over, and a manager that was the oldest asks
	// the new oldest to take over.
	DefaultHandOverRetryInterval = time.Second
	// DefaultMinHandOverRetries is the least number of hand-over retries before a
	// manager reports that a hand-over is stuck.
	DefaultMinHandOverRetries = 15
	// DefaultManagerBufferSize bounds the messages a manager holds while the singleton
	// moves (Config.BufferSize).
	DefaultManagerBufferSize = 10000
	// DefaultProxyBufferSize bounds the messages a proxy buffers while the singleton's
	// location is unknown (ProxyConfig.BufferSize).
	DefaultProxyBufferSize = 1000
	// MaxProxyBufferSize is the largest ProxyConfig.BufferSize accepted.
	MaxProxyBufferSize = 10000
	// DefaultIdentificationInterval is how often a proxy asks the manager on the
	// oldest member whether it runs the singleton, until it does.
	DefaultIdentificationInterval = time.Second
)

// DefaultBackoff is how a failing singleton is restarted when Config.Backoff is zero:
// after 200 ms, doubling up to 10 s, with 20% jitter, the count reset after 10 s
// without a failure, and no limit on the number of restarts.
var DefaultBackoff = supervision.Backoff{
	Min:          200 * time.Millisecond,
	Max:          10 * time.Second,
	RandomFactor: 0.2,
	ResetAfter:   10 * time.Second,
}

// Config configures one singleton: the actor that runs on the oldest member (with
// Role), and the manager that runs on every member with Role. Zero values mean the
// documented defaults; Props is required.
type Config struct {
	// Name names the singleton; the manager runs at /system/singleton/<Name> and the
	// singleton at /system/singleton/<Name>/<Name>, and proxies find them by it.
	// ASCII letters, digits, '-', '_' and '.', at most 100 bytes. Default DefaultName
	// ("singleton").
	Name string
	// Props creates the singleton. Required.
	Props *actor.Props
	// Role restricts the singleton to members with this role: only they may run a
	// manager (Start fails with ErrInvalidConfig elsewhere), and the oldest of them
	// runs the singleton.
	// Empty: every member.
	Role string
	// TerminationMessage is sent to the singleton when it must stop for a hand-over;
	// the hand-over completes when the singleton has terminated. Default
	// actor.PoisonPill{}, which stops it once the messages queued before it are
	// handled. A message of your own lets the singleton finish its work and release
	// resources first; it must then stop itself (ctx.Stop(ctx.Self())).
	TerminationMessage any
	// HandOverRetryInterval is how often hand-over requests are resent. Default
	// DefaultHandOverRetryInterval (1 s).
	HandOverRetryInterval time.Duration
	// MinHandOverRetries is the least number of retries before a manager reports a
	// stuck hand-over (at error level); the limit is max(MinHandOverRetries,
	// margin/interval + 3), with margin the cluster's down-removal margin. Default
	// DefaultMinHandOverRetries (15).
	MinHandOverRetries int
	// BufferSize bounds the messages a manager holds while the singleton moves or
	// restarts: those that arrive while it does not run, and those it keeps back to
	// restore a proxy's order. Default DefaultManagerBufferSize (10,000). When it is
	// full the oldest held message is dropped (a dead letter, counted and logged).
	BufferSize int
	// Backoff sets how a singleton that fails (panics) is restarted: it is stopped,
	// and a new instance is started after Backoff.Delay; the messages that arrive
	// meanwhile are held for it. Zero means DefaultBackoff.
	Backoff supervision.Backoff
	// Lease, when set, must be held for the singleton to run: the manager on the
	// oldest member acquires it before it starts the singleton, stops the singleton
	// when it is lost, and tries again every HandOverRetryInterval. It makes "never
	// two" hold even when the split-brain resolver's assumptions fail (a partition
	// without a resolver, two clusters formed by mistake, a process paused for longer
	// than the down-removal margin). Give every member a lease with the same
	// LeaseName and its own OwnerName (its address, say). Nil: no lease; the
	// split-brain resolver and the down-removal margin alone keep two singletons from
	// running at once.
	Lease lease.Lease
	// CallerHandsOver, when true, leaves the hand-over at shutdown to the caller of
	// Start: Start adds no coordinated-shutdown task, and the caller runs the hand-over
	// with Manager.HandOver in a task of its own, at the point of its own shutdown it
	// needs, before this member leaves the cluster (a phase before
	// actor.PhaseClusterLeave). A layer that runs singletons of its own uses it to
	// order the hand-over after its own work: sharding hands its shards off first,
	// while the coordinator still runs here, and moves its coordinator after. False
	// (the default): the manager hands over in the before-cluster-shutdown phase.
	CallerHandsOver bool
}

// WithDefaults returns the configuration with zero values replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.TerminationMessage == nil {
		c.TerminationMessage = actor.PoisonPill{}
	}
	if c.HandOverRetryInterval == 0 {
		c.HandOverRetryInterval = DefaultHandOverRetryInterval
	}
	if c.MinHandOverRetries == 0 {
		c.MinHandOverRetries = DefaultMinHandOverRetries
	}
	if c.BufferSize == 0 {
		c.BufferSize = DefaultManagerBufferSize
	}
	if c.Backoff == (supervision.Backoff{}) {
		c.Backoff = DefaultBackoff
	}
	return c
}

// Validate reports the first problem in the configuration, wrapping ErrInvalidConfig:
// a missing or invalid Props, an invalid name, a negative interval, retry count or
// buffer size, or an invalid Backoff.
func (c Config) Validate() error {
	if c.Props == nil {
		return fmt.Errorf("%w: Props is required", ErrInvalidConfig)
	}
	if err := c.core().Validate(); err != nil {
		return err
	}
	if err := c.Props.Validate(); err != nil {
		return fmt.Errorf("%w: Props: %w", ErrInvalidConfig, err)
	}
	if c.Backoff != (supervision.Backoff{}) {
		if err := c.Backoff.Validate(); err != nil {
			return fmt.Errorf("%w: Backoff: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// core returns the manager core's configuration.
func (c Config) core() singletoncore.ManagerConfig {
	return singletoncore.ManagerConfig{
		Name:                  c.Name,
		Role:                  c.Role,
		HandOverRetryInterval: c.HandOverRetryInterval,
		MinHandOverRetries:    c.MinHandOverRetries,
		BufferSize:            c.BufferSize,
		UseLease:              c.Lease != nil,
	}
}

// ProxyConfig configures a proxy: a local actor that sends messages to the singleton
// wherever it runs, and buffers them while that is unknown. Zero values mean the
// documented defaults.
type ProxyConfig struct {
	// Name is the singleton's name (Config.Name). Default DefaultName.
	Name string
	// Role is the singleton's role (Config.Role): the proxy looks for it on the oldest
	// member with this role. The proxy itself may run on any member.
	Role string
	// BufferSize bounds the messages buffered while the singleton's location is
	// unknown; when the buffer is full the oldest message is dropped (a dead letter,
	// counted and logged). 0 means DefaultProxyBufferSize (1,000); a negative value
	// means no buffer at all (a message sent while the location is unknown is dropped
	// at once); more than MaxProxyBufferSize (10,000) is invalid.
	BufferSize int
	// IdentificationInterval is how often the proxy asks the manager on the oldest
	// member whether it runs the singleton, until it does. Default
	// DefaultIdentificationInterval (1 s).
	IdentificationInterval time.Duration
}

// WithDefaults returns the configuration with zero values replaced by the defaults.
func (c ProxyConfig) WithDefaults() ProxyConfig {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.BufferSize == 0 {
		c.BufferSize = DefaultProxyBufferSize
	}
	if c.IdentificationInterval == 0 {
		c.IdentificationInterval = DefaultIdentificationInterval
	}
	return c
}

// Validate reports the first problem in the configuration, wrapping ErrInvalidConfig:
// an invalid name, a buffer larger than MaxProxyBufferSize or a negative interval.
func (c ProxyConfig) Validate() error { return c.core().Validate() }

func (c ProxyConfig) core() singletoncore.ProxyConfig {
	return singletoncore.ProxyConfig{
		Name:                   c.Name,
		Role:                   c.Role,
		BufferSize:             c.BufferSize,
		IdentificationInterval: c.IdentificationInterval,
	}
}
