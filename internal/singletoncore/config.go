package singletoncore

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig is wrapped by ManagerConfig.Validate and ProxyConfig.Validate, and
// by the constructors of the cores when they are given an invalid configuration.
var ErrInvalidConfig = errors.New("singleton: invalid configuration")

// Defaults, as Akka's cluster singleton; package singleton documents them.
const (
	// DefaultName is the singleton's name when ManagerConfig.Name is empty.
	DefaultName = "singleton"
	// DefaultHandOverRetryInterval is how often a manager that is becoming the oldest
	// resends HandOverToMe, and a manager that was the oldest resends TakeOverFromMe.
	DefaultHandOverRetryInterval = time.Second
	// DefaultMinHandOverRetries is the least number of hand-over retries before a
	// manager reports that the hand-over is stuck.
	DefaultMinHandOverRetries = 15
	// DefaultManagerBufferSize bounds the messages a manager holds while the singleton
	// moves (see ManagerConfig.BufferSize).
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

// ManagerConfig configures a ManagerCore: the parts of the singleton's configuration
// that the protocol needs (package singleton's Config, after its defaults). Zero
// values mean the defaults.
type ManagerConfig struct {
	// Name is the singleton's name, used in alerts. Default DefaultName.
	Name string
	// Role restricts the singleton to members with this role; empty: every member.
	Role string
	// HandOverRetryInterval is how often HandOverToMe and TakeOverFromMe are resent,
	// and the tick of the other timers. Default DefaultHandOverRetryInterval.
	HandOverRetryInterval time.Duration
	// MinHandOverRetries is the least number of retries before a stuck hand-over is
	// reported (see ManagerCore.RetryLimit). Default DefaultMinHandOverRetries.
	MinHandOverRetries int
	// BufferSize bounds the messages the manager holds while the singleton moves.
	// Default DefaultManagerBufferSize.
	BufferSize int
	// UseLease makes the manager hold a lease (AcquireLease) before it starts the
	// singleton.
	UseLease bool
}

// withDefaults returns the configuration with zero values replaced by the defaults.
func (c ManagerConfig) withDefaults() ManagerConfig {
	if c.Name == "" {
		c.Name = DefaultName
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
// an invalid name, or a negative interval, retry count or buffer size.
func (c ManagerConfig) Validate() error {
	switch {
	case c.HandOverRetryInterval < 0:
		return fmt.Errorf("%w: negative HandOverRetryInterval %v", ErrInvalidConfig, c.HandOverRetryInterval)
	case c.MinHandOverRetries < 0:
		return fmt.Errorf("%w: negative MinHandOverRetries %d", ErrInvalidConfig, c.MinHandOverRetries)
	case c.BufferSize < 0:
		return fmt.Errorf("%w: negative BufferSize %d", ErrInvalidConfig, c.BufferSize)
	}
	return ValidName(c.Name)
}

// ProxyConfig configures a ProxyCore (package singleton's ProxyConfig). Zero values
// mean the defaults.
type ProxyConfig struct {
	// Name is the singleton's name. Default DefaultName.
	Name string
	// Role is the singleton's role: the proxy sends to the oldest member with it.
	Role string
	// BufferSize bounds the messages buffered while the singleton's location is
	// unknown: 0 means DefaultProxyBufferSize, a negative value no buffer, and more
	// than MaxProxyBufferSize is invalid.
	BufferSize int
	// IdentificationInterval is how often Identify is resent. Default
	// DefaultIdentificationInterval.
	IdentificationInterval time.Duration
}

// withDefaults returns the configuration with zero values replaced by the defaults.
func (c ProxyConfig) withDefaults() ProxyConfig {
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
	return ValidName(c.Name)
}

// capacity is the proxy's buffer capacity after defaults: 0 for no buffer.
func (c ProxyConfig) capacity() int {
	if c.BufferSize < 0 {
		return 0
	}
	return c.BufferSize
}

// ValidName accepts the empty name (the default) and names of ASCII letters, digits
// and '-', '_', '.', which are valid as one element of an actor path.
func ValidName(name string) error {
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
