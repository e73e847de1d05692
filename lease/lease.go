package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

var (
	// ErrInvalidConfig is returned by Settings.Validate, and by constructors of leases
	// given invalid settings.
	ErrInvalidConfig = errors.New("lease: invalid configuration")
	// ErrUnavailable is returned by an operation that could not reach the lease's
	// store, and passed to the loss callback of a lease lost because its store could
	// not be reached for HeartbeatTimeout.
	ErrUnavailable = errors.New("lease: store unavailable")
	// ErrLost is passed to the loss callback of a lease taken away by its store (it
	// expired there, or was revoked).
	ErrLost = errors.New("lease: lost")
)

// Lease is a distributed lock with an owner and a time to live, as Akka's
// coordination lease: at most one owner holds a lease of a given name at a time, the
// holder keeps it alive by heartbeats to the store, and a holder that stops (or cannot
// reach the store) loses it after HeartbeatTimeout, so that another owner can acquire
// it.
//
// A Lease value belongs to one owner (Settings.OwnerName) and one lease name
// (Settings.LeaseName). Its methods are safe for concurrent use. Acquire and Release
// talk to the store and may take time; they end when ctx does, and the
// implementation bounds each by OperationTimeout too.
type Lease interface {
	// Settings returns the lease's name, owner and timing.
	Settings() Settings
	// Acquire tries to acquire the lease for the owner. It returns true when the owner
	// holds the lease (also when it already did), false when another owner holds it,
	// and an error when the store could not be asked (ErrUnavailable) or ctx ended: the
	// caller cannot know then whether it holds the lease, and should act as if it did
	// not. Once acquired, the implementation keeps the lease alive until Release; if
	// it loses the lease before (the store could not be reached for HeartbeatTimeout,
	// or took it away), it calls onLost once, from a goroutine of its own, with the
	// reason (ErrUnavailable, ErrLost or the store's error). onLost may be nil.
	Acquire(ctx context.Context, onLost func(error)) (bool, error)
	// Release gives the lease up. It returns true when the owner held it, false when it
	// did not, and an error when the store could not be asked: the lease then expires
	// after HeartbeatTimeout. No loss callback follows a Release.
	Release(ctx context.Context) (bool, error)
	// CheckLease reports whether the owner holds the lease as far as this value knows,
	// without asking the store: false before Acquire, after Release, and once the lease
	// was lost.
	CheckLease() bool
}

// Default settings, as Akka's coordination lease.
const (
	DefaultHeartbeatInterval = 12 * time.Second
	DefaultHeartbeatTimeout  = 120 * time.Second
	DefaultOperationTimeout  = 5 * time.Second
)

// Settings name a lease and its owner and set its timing. Zero durations mean the
// defaults.
type Settings struct {
	// LeaseName names the lease; every owner that competes for it uses the same name.
	// Required.
	LeaseName string
	// OwnerName names this owner; it must differ between owners (a node's address, for
	// example). Required.
	OwnerName string
	// HeartbeatInterval is how often the holder renews the lease in the store.
	// Default DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a lease lives without a renewal: after it, the store
	// lets another owner acquire it, and a holder that could not renew considers it
	// lost. It must exceed HeartbeatInterval. Default DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// OperationTimeout bounds one call to the store. Default DefaultOperationTimeout.
	OperationTimeout time.Duration
}

// WithDefaults returns the settings with the defaults filled in.
func (s Settings) WithDefaults() Settings {
	if s.HeartbeatInterval == 0 {
		s.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if s.HeartbeatTimeout == 0 {
		s.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if s.OperationTimeout == 0 {
		s.OperationTimeout = DefaultOperationTimeout
	}
	return s
}

// Validate reports a missing name, a negative duration, or a heartbeat timeout not
// longer than the heartbeat interval (after defaults), wrapping ErrInvalidConfig.
func (s Settings) Validate() error {
	d := s.WithDefaults()
	switch {
	case s.LeaseName == "":
		return fmt.Errorf("%w: LeaseName is required", ErrInvalidConfig)
	case s.OwnerName == "":
		return fmt.Errorf("%w: OwnerName is required", ErrInvalidConfig)
	case s.HeartbeatInterval < 0 || s.HeartbeatTimeout < 0 || s.OperationTimeout < 0:
		return fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	case d.HeartbeatTimeout <= d.HeartbeatInterval:
		return fmt.Errorf("%w: HeartbeatTimeout %v must exceed HeartbeatInterval %v", ErrInvalidConfig, d.HeartbeatTimeout, d.HeartbeatInterval)
	}
	return nil
}

// SystemLogger is implemented by a Lease that logs (pglease.Lease does) and takes
// the logger of the actor system that uses it, when it was not given a logger of its
// own: the cluster's downing (DowningConfig.Lease) and a singleton (Config.Lease)
// call UseSystemLogger with their system's logger when they start with the lease.
type SystemLogger interface {
	UseSystemLogger(l *zap.Logger)
}
