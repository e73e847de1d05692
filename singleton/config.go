package singleton

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// ErrInvalidConfig is wrapped by Config.Validate and ProxyConfig.Validate, and by the
// constructors of the cores when they are given an invalid configuration.
var ErrInvalidConfig = errors.New("singleton: invalid configuration")

// Defaults, as Akka's cluster singleton.
const (
	// DefaultName is the singleton's name when Config.Name is empty.
	DefaultName = "singleton"
	// DefaultHandOverRetryInterval is how often a manager that is becoming the oldest
	// resends HandOverToMe, and a manager that was the oldest resends TakeOverFromMe.
	DefaultHandOverRetryInterval = time.Second
	// DefaultMinHandOverRetries is the least number of hand-over retries before a
	// manager reports that the hand-over is stuck.
	DefaultMinHandOverRetries = 15
	// DefaultManagerBufferSize bounds the messages a manager holds while the singleton
	// moves (see Config.BufferSize).
	DefaultManagerBufferSize = 10000
	// DefaultProxyBufferSize bounds the messages a proxy buffers while the singleton's
	// location is unknown.
	DefaultProxyBufferSize = 1000
	// MaxProxyBufferSize is the largest ProxyConfig.BufferSize accepted.
	MaxProxyBufferSize = 10000
	// DefaultIdentificationInterval is how often a proxy asks the manager on the
	// oldest member whether it hosts the singleton, until it does.
	DefaultIdentificationInterval = time.Second
)

// Lease is what the singleton needs of a distributed lease: a lock that at most one
// owner holds at a time. With a lease the manager starts the singleton only while it
// holds the lease, so that two managers that both believe they are the oldest (a
// partition without a split-brain resolver, two clusters formed by mistake) never run
// it at the same time. Any lease.Lease fits.
type Lease interface {
	// Acquire tries to acquire the lease. It returns true when the owner holds it,
	// false when another owner does, and an error when the store could not be asked
	// (the caller then acts as if it did not hold it). Once acquired, the lease calls
	// onLost once if it is lost before Release.
	Acquire(ctx context.Context, onLost func(error)) (bool, error)
	// Release gives the lease up; no loss callback follows.
	Release(ctx context.Context) (bool, error)
}

// Config configures a singleton: the actor that runs on the oldest member (with Role)
// and the manager that runs on every member with Role. Zero values mean the documented
// defaults; Props is required.
type Config struct {
	// Name names the singleton: the manager and the child are found under it, and
	// proxies use it to reach them. Default DefaultName ("singleton").
	Name string
	// Props creates the singleton. Required.
	Props *actor.Props
	// Role restricts the singleton to members with this role: only they run a manager,
	// and the oldest of them runs the singleton. Empty: every member.
	Role string
	// TerminationMessage is sent to the singleton when it must stop for a hand-over;
	// the hand-over completes when the singleton has terminated. Default
	// actor.PoisonPill{}, which stops it once the messages queued before it are
	// handled. A custom message lets the singleton release resources first; it must
	// stop itself eventually.
	TerminationMessage any
	// HandOverRetryInterval is how often HandOverToMe and TakeOverFromMe are resent.
	// Default DefaultHandOverRetryInterval (1s).
	HandOverRetryInterval time.Duration
	// MinHandOverRetries is the least number of retries before the manager reports a
	// stuck hand-over; the limit is max(MinHandOverRetries, margin/interval + 3), with
	// margin the cluster's down-removal margin. Default DefaultMinHandOverRetries (15).
	MinHandOverRetries int
	// BufferSize bounds the messages a manager holds while the singleton moves: those
	// that arrive while its singleton is not running, and those it keeps back to
	// restore each sender's order. Default DefaultManagerBufferSize (10,000). When it
	// is full the oldest held message is dropped (a dead letter, counted and logged).
	BufferSize int
	// Lease, when set, must be held for the singleton to run (see Lease). Nil: no
	// lease; the split-brain resolver and the down-removal margin alone keep two
	// singletons from running at once.
	Lease Lease
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
	return c
}

// Validate reports the first problem in the configuration, wrapping ErrInvalidConfig:
// a missing or invalid Props, an invalid name, or a negative interval, retry count or
// buffer size.
func (c Config) Validate() error {
	switch {
	case c.Props == nil:
		return fmt.Errorf("%w: Props is required", ErrInvalidConfig)
	case c.HandOverRetryInterval < 0:
		return fmt.Errorf("%w: negative HandOverRetryInterval %v", ErrInvalidConfig, c.HandOverRetryInterval)
	case c.MinHandOverRetries < 0:
		return fmt.Errorf("%w: negative MinHandOverRetries %d", ErrInvalidConfig, c.MinHandOverRetries)
	case c.BufferSize < 0:
		return fmt.Errorf("%w: negative BufferSize %d", ErrInvalidConfig, c.BufferSize)
	}
	if err := validName(c.Name); err != nil {
		return err
	}
	if err := c.Props.Validate(); err != nil {
		return fmt.Errorf("%w: Props: %w", ErrInvalidConfig, err)
	}
	return nil
}

// ProxyConfig configures a proxy: a local actor that forwards messages to the
// singleton wherever it runs, and buffers them while that is unknown. Zero values mean
// the documented defaults.
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
	// member whether it hosts the singleton, until it does. Default
	// DefaultIdentificationInterval (1s).
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
func (c ProxyConfig) Validate() error {
	switch {
	case c.BufferSize > MaxProxyBufferSize:
		return fmt.Errorf("%w: BufferSize %d exceeds %d", ErrInvalidConfig, c.BufferSize, MaxProxyBufferSize)
	case c.IdentificationInterval < 0:
		return fmt.Errorf("%w: negative IdentificationInterval %v", ErrInvalidConfig, c.IdentificationInterval)
	}
	return validName(c.Name)
}

// capacity is the proxy's buffer capacity after defaults: 0 for no buffer.
func (c ProxyConfig) capacity() int {
	if c.BufferSize < 0 {
		return 0
	}
	return c.BufferSize
}

// validName accepts the empty name (the default) and names of ASCII letters, digits
// and '-', '_', '.', which are valid as one element of an actor path.
func validName(name string) error {
	if len(name) > 100 {
		return fmt.Errorf("%w: Name is %d bytes long (at most 100)", ErrInvalidConfig, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			continue
		}
		return fmt.Errorf("%w: Name %q holds the byte %q", ErrInvalidConfig, name, c)
	}
	return nil
}

// retryLimit is the number of hand-over retries after which a manager reports a stuck
// hand-over: max(min, margin/interval + 3).
func retryLimit(min int, interval, margin time.Duration) int {
	n := min
	if interval > 0 {
		if m := int(margin/interval) + 3; m > n {
			n = m
		}
	}
	return n
}
