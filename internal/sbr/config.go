package sbr

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig is returned by Config.Validate and NewResolver.
var ErrInvalidConfig = errors.New("sbr: invalid configuration")

// Strategy is the rule that picks the side of a partition that survives. The zero
// value is KeepMajority.
type Strategy uint8

const (
	// KeepMajority keeps the side with more counted members; on an exactly equal split
	// the side holding the member with the lowest address (member.CompareAddress).
	KeepMajority Strategy = iota
	// StaticQuorum keeps a side with at least QuorumSize counted members and downs a
	// smaller one; with more than 2*QuorumSize-1 counted members both sides could reach
	// the quorum, so everything is downed.
	StaticQuorum
	// KeepOldest keeps the side with the oldest counted member; a lone oldest is downed
	// instead unless KeepOldestIfAlone.
	KeepOldest
	// DownAll downs every member whenever one is unreachable.
	DownAll
	// LeaseMajority keeps the side whose responsible member acquires a lease; the
	// minority side (as KeepMajority counts) waits AcquireLeaseDelayForMinority before
	// it tries, so the majority normally wins.
	LeaseMajority
)

var strategyNames = [...]string{"keep-majority", "static-quorum", "keep-oldest", "down-all", "lease-majority"}

// String returns the strategy's configuration name, such as "keep-majority".
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// ParseStrategy returns the strategy with the configuration name; "" means
// KeepMajority.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return KeepMajority, nil
	}
	for i, n := range strategyNames {
		if n == name {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown downing strategy %q", ErrInvalidConfig, name)
}

// Config holds the resolver's settings, with every default already applied by the
// caller.
type Config struct {
	// Strategy chooses the surviving side.
	Strategy Strategy
	// StableAfter is how long membership and reachability must be unchanged before a
	// decision. It must be positive.
	StableAfter time.Duration
	// DownAllWhenUnstable, when positive, downs every member once reachability has kept
	// changing for StableAfter plus this long since the first change without a
	// decision. 0 or less turns it off.
	DownAllWhenUnstable time.Duration
	// Role, when set, counts only members with the role (KeepMajority, StaticQuorum,
	// KeepOldest, LeaseMajority). Members without it are still downed with their side.
	Role string
	// QuorumSize is StaticQuorum's minimum side; required for StaticQuorum.
	QuorumSize int
	// KeepOldestIfAlone keeps the oldest's side under KeepOldest even when the oldest
	// is alone on it.
	KeepOldestIfAlone bool
	// AcquireLeaseDelayForMinority is how long the minority side waits before it tries
	// to acquire the lease under LeaseMajority.
	AcquireLeaseDelayForMinority time.Duration
}

// Validate reports an unknown strategy, a non-positive StableAfter, a negative quorum
// or lease delay, or StaticQuorum without QuorumSize.
func (c Config) Validate() error {
	switch {
	case c.Strategy > LeaseMajority:
		return fmt.Errorf("%w: unknown downing strategy %d", ErrInvalidConfig, c.Strategy)
	case c.StableAfter <= 0:
		return fmt.Errorf("%w: StableAfter %v is not positive", ErrInvalidConfig, c.StableAfter)
	case c.QuorumSize < 0:
		return fmt.Errorf("%w: QuorumSize %d is negative", ErrInvalidConfig, c.QuorumSize)
	case c.Strategy == StaticQuorum && c.QuorumSize == 0:
		return fmt.Errorf("%w: static-quorum needs QuorumSize", ErrInvalidConfig)
	case c.AcquireLeaseDelayForMinority < 0:
		return fmt.Errorf("%w: AcquireLeaseDelayForMinority %v is negative", ErrInvalidConfig, c.AcquireLeaseDelayForMinority)
	}
	return nil
}
