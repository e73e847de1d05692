package persistence

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/serialization"
)

// Errors of Start and Get.
var (
	// ErrInvalidConfig is returned by Config.Validate, and so by Start, for a
	// Config that cannot work: a missing plug-in or registry, a negative value.
	ErrInvalidConfig = errors.New("persistence: invalid config")

	// ErrNotConfigured is returned by Get, and stops every event-sourced actor,
	// in a system where Start was not called.
	ErrNotConfigured = errors.New("persistence: not started (call persistence.Start)")

	// ErrAlreadyStarted is returned by a second Start for the same system.
	ErrAlreadyStarted = errors.New("persistence: already started for this system")

	// ErrNoSnapshotStore fails SaveSnapshot and DeleteSnapshots (in their Failure
	// replies) in a system whose Config has no snapshot store.
	ErrNoSnapshotStore = errors.New("persistence: no snapshot store configured")
)

// Defaults of the zero values of Config.
const (
	// DefaultReplayBatch is how many replayed events travel in one message to the
	// recovering actor.
	DefaultReplayBatch = 256

	// DefaultRecoveryEventTimeout bounds the wait for each replayed event, as
	// Akka's recovery-event-timeout does.
	DefaultRecoveryEventTimeout = 30 * time.Second

	// DefaultJournalMaxFailures and DefaultJournalCallTimeout configure the
	// journal's circuit breaker (Akka's journal defaults); DefaultJournalResetTimeout
	// and DefaultJournalMaxResetTimeout bound how long it stays open before a trial
	// call: the first time, and at most after failed trials (Akka's 30 s is far
	// longer: a store that answers again is found within the maximum).
	DefaultJournalMaxFailures     = 10
	DefaultJournalCallTimeout     = 10 * time.Second
	DefaultJournalResetTimeout    = 100 * time.Millisecond
	DefaultJournalMaxResetTimeout = 500 * time.Millisecond

	// DefaultSnapshotMaxFailures, DefaultSnapshotCallTimeout,
	// DefaultSnapshotResetTimeout and DefaultSnapshotMaxResetTimeout do the same
	// for the snapshot store's circuit breaker.
	DefaultSnapshotMaxFailures     = 5
	DefaultSnapshotCallTimeout     = 20 * time.Second
	DefaultSnapshotResetTimeout    = 100 * time.Millisecond
	DefaultSnapshotMaxResetTimeout = 500 * time.Millisecond
)

// Config is what the event-sourced actors of one system persist with. The zero
// value of every field but Journal and Registry means its default.
type Config struct {
	// Journal stores events. Required.
	Journal Journal
	// Snapshots stores snapshots; nil disables them (SaveSnapshot then answers
	// SaveSnapshotFailure wrapping ErrNoSnapshotStore).
	Snapshots SnapshotStore
	// Registry serialises events and snapshots. Required: only registered types
	// are persisted; any other is rejected with ErrRejected.
	Registry *serialization.Registry
	// ReplayBatch is how many replayed events travel in one message to the actor
	// during recovery. Default DefaultReplayBatch.
	ReplayBatch int
	// RecoveryEventTimeout bounds the wait for the first replayed event and between
	// two of them; a replay that stalls longer fails the recovery with
	// ErrCallTimeout and stops the entity. The stall is noticed within a quarter of
	// the timeout after it passes. Default DefaultRecoveryEventTimeout.
	RecoveryEventTimeout time.Duration
	// JournalBreaker bounds every journal call the runtime makes (writes,
	// highest sequence numbers, deletes; replays are bounded by
	// RecoveryEventTimeout instead of CallTimeout) and guards them with a circuit
	// breaker. Defaults: DefaultJournalMaxFailures, DefaultJournalCallTimeout,
	// DefaultJournalResetTimeout, DefaultJournalMaxResetTimeout.
	JournalBreaker BreakerConfig
	// SnapshotBreaker does the same for the snapshot store. Defaults:
	// DefaultSnapshotMaxFailures, DefaultSnapshotCallTimeout,
	// DefaultSnapshotResetTimeout, DefaultSnapshotMaxResetTimeout.
	SnapshotBreaker BreakerConfig
	// CloseOnShutdown hands the plug-ins to the system: once coordinated shutdown has
	// stopped every actor and the plug-in calls still running have returned (or the
	// shutdown phase's time is up), the journal and the snapshot store are closed
	// (once, when they are the same value) if they implement io.Closer. Otherwise the
	// caller closes them after the system has shut down.
	CloseOnShutdown bool
}

// BreakerConfig bounds the calls to one plug-in and configures the circuit breaker
// around them, as Akka's circuit-breaker settings (with exponential backoff) do. The
// zero value of each field means the default of the plug-in it guards (see Config).
//
// After MaxFailures failed or timed-out calls in a row the breaker opens: calls fail
// at once with ErrCircuitOpen for ResetTimeout. Then it is half-open: the next call
// goes through as a trial, while the others still fail fast. The trial's success
// closes the breaker; its failure opens it again for twice as long as the last time,
// at most MaxResetTimeout. A store that is down is therefore tried about once per
// MaxResetTimeout, and calls go through again within MaxResetTimeout (plus one call)
// of its return.
type BreakerConfig struct {
	// MaxFailures is how many failed or timed-out calls in a row open the breaker.
	// A negative value turns the breaker off (calls are still bounded by
	// CallTimeout).
	MaxFailures int
	// CallTimeout bounds one call: a call that has not answered by then fails with
	// ErrCallTimeout and counts as a failure. Its outcome is unknown.
	CallTimeout time.Duration
	// ResetTimeout is how long the breaker stays open (failing calls fast with
	// ErrCircuitOpen) after MaxFailures failures, before it lets one trial call
	// through.
	ResetTimeout time.Duration
	// MaxResetTimeout bounds how long the breaker stays open after failed trials,
	// each of which doubles the wait. Zero means the plug-in's default, or
	// ResetTimeout when that is longer (a breaker that waits ResetTimeout every
	// time, as before MaxResetTimeout existed). It must not be below ResetTimeout.
	MaxResetTimeout time.Duration
}

// Validate reports a missing plug-in or registry and out-of-range values, wrapped in
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Journal == nil:
		return fmt.Errorf("%w: Config.Journal is nil", ErrInvalidConfig)
	case c.Registry == nil:
		return fmt.Errorf("%w: Config.Registry is nil", ErrInvalidConfig)
	case c.ReplayBatch < 0:
		return fmt.Errorf("%w: negative ReplayBatch %d", ErrInvalidConfig, c.ReplayBatch)
	case c.RecoveryEventTimeout < 0:
		return fmt.Errorf("%w: negative RecoveryEventTimeout %v", ErrInvalidConfig, c.RecoveryEventTimeout)
	}
	if err := c.JournalBreaker.validate("JournalBreaker"); err != nil {
		return err
	}
	return c.SnapshotBreaker.validate("SnapshotBreaker")
}

func (b BreakerConfig) validate(name string) error {
	switch {
	case b.CallTimeout < 0:
		return fmt.Errorf("%w: negative %s.CallTimeout %v", ErrInvalidConfig, name, b.CallTimeout)
	case b.ResetTimeout < 0:
		return fmt.Errorf("%w: negative %s.ResetTimeout %v", ErrInvalidConfig, name, b.ResetTimeout)
	case b.MaxResetTimeout < 0:
		return fmt.Errorf("%w: negative %s.MaxResetTimeout %v", ErrInvalidConfig, name, b.MaxResetTimeout)
	case b.MaxResetTimeout > 0 && b.MaxResetTimeout < b.ResetTimeout:
		return fmt.Errorf("%w: %s.MaxResetTimeout %v is below its ResetTimeout %v", ErrInvalidConfig, name, b.MaxResetTimeout, b.ResetTimeout)
	}
	return nil
}

// withDefaults returns c with its zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.ReplayBatch == 0 {
		c.ReplayBatch = DefaultReplayBatch
	}
	if c.RecoveryEventTimeout == 0 {
		c.RecoveryEventTimeout = DefaultRecoveryEventTimeout
	}
	c.JournalBreaker = c.JournalBreaker.withDefaults(BreakerConfig{
		MaxFailures: DefaultJournalMaxFailures, CallTimeout: DefaultJournalCallTimeout,
		ResetTimeout: DefaultJournalResetTimeout, MaxResetTimeout: DefaultJournalMaxResetTimeout,
	})
	c.SnapshotBreaker = c.SnapshotBreaker.withDefaults(BreakerConfig{
		MaxFailures: DefaultSnapshotMaxFailures, CallTimeout: DefaultSnapshotCallTimeout,
		ResetTimeout: DefaultSnapshotResetTimeout, MaxResetTimeout: DefaultSnapshotMaxResetTimeout,
	})
	return c
}

// withDefaults replaces b's zero fields with those of d. A zero MaxResetTimeout
// becomes the longer of d's and ResetTimeout, so that a ResetTimeout longer than that
// default, set alone, keeps the breaker open that long every time, as it did before
// MaxResetTimeout existed; a zero ResetTimeout becomes the shorter of d's and
// MaxResetTimeout.
func (b BreakerConfig) withDefaults(d BreakerConfig) BreakerConfig {
	if b.MaxFailures == 0 {
		b.MaxFailures = d.MaxFailures
	}
	if b.CallTimeout == 0 {
		b.CallTimeout = d.CallTimeout
	}
	switch {
	case b.ResetTimeout == 0 && b.MaxResetTimeout == 0:
		b.ResetTimeout, b.MaxResetTimeout = d.ResetTimeout, d.MaxResetTimeout
	case b.ResetTimeout == 0:
		b.ResetTimeout = min(d.ResetTimeout, b.MaxResetTimeout)
	case b.MaxResetTimeout == 0:
		b.MaxResetTimeout = max(d.MaxResetTimeout, b.ResetTimeout)
	}
	return b
}
