package sharding

import (
	"fmt"
	"math"

	"github.com/troupe-go/troupe/internal/shardcore"
)

// LeastShardConfig configures NewLeastShardStrategy. The zero value is the default:
// the classic algorithm with threshold 1 and at most 3 simultaneous hand-offs.
type LeastShardConfig struct {
	// RebalanceAbsoluteLimit selects the algorithm. 0 (the default) selects the classic
	// algorithm (RebalanceThreshold, MaxSimultaneousRebalance). Above 0 it selects the
	// newer one, which reaches an even spread in one or two rounds, and caps how many
	// shards one round moves. Negative values are invalid.
	RebalanceAbsoluteLimit int
	// RebalanceRelativeLimit caps, for the newer algorithm, the shards one round moves
	// as a fraction of all shards: a round moves at most
	// max(1, min(floor(RebalanceRelativeLimit*shards), RebalanceAbsoluteLimit)).
	// 0 means 0.1; otherwise it must lie in (0, 1].
	RebalanceRelativeLimit float64
	// RebalanceThreshold is, for the classic algorithm, how much the region with the
	// most shards must exceed the one with the fewest before shards move. 1 gives the
	// best spread; higher values move more shards at once but leave more imbalance.
	// 0 means 1; negative values are invalid.
	RebalanceThreshold int
	// MaxSimultaneousRebalance is, for the classic algorithm, how many shards may be in
	// hand-off at once. 0 means 3; negative values are invalid.
	MaxSimultaneousRebalance int
}

// Validate reports whether the configuration is usable; the error wraps
// ErrInvalidConfig.
func (c LeastShardConfig) Validate() error {
	switch {
	case c.RebalanceAbsoluteLimit < 0:
		return fmt.Errorf("%w: RebalanceAbsoluteLimit %d is negative", ErrInvalidConfig, c.RebalanceAbsoluteLimit)
	case math.IsNaN(c.RebalanceRelativeLimit) || c.RebalanceRelativeLimit < 0 || c.RebalanceRelativeLimit > 1:
		return fmt.Errorf("%w: RebalanceRelativeLimit %v is not within (0, 1]", ErrInvalidConfig, c.RebalanceRelativeLimit)
	case c.RebalanceThreshold < 0:
		return fmt.Errorf("%w: RebalanceThreshold %d is negative", ErrInvalidConfig, c.RebalanceThreshold)
	case c.MaxSimultaneousRebalance < 0:
		return fmt.Errorf("%w: MaxSimultaneousRebalance %d is negative", ErrInvalidConfig, c.MaxSimultaneousRebalance)
	}
	return nil
}

// LeastShardStrategy is the default AllocationStrategy. A new shard goes to the best
// region in this order: regions of members that are not leaving, then a higher app
// version, then fewer shards, then an older member, then a lower address. Regions of
// unknown members, and regions shutting down, are skipped.
//
// Rebalance moves shards from the regions with the most shards to the ones with the
// fewest, with one of two algorithms (see LeastShardConfig). It moves nothing while
// the regions run different app versions (a rolling upgrade), while a member is
// unreachable (its region could not acknowledge the hand-off) or joining (it will soon
// take shards), or when there is no region. A LeastShardStrategy holds no state
// between calls and is safe for concurrent use.
type LeastShardStrategy struct {
	core shardcore.LeastShard
}

// NewLeastShardStrategy returns the least-shard strategy, or an error wrapping
// ErrInvalidConfig.
func NewLeastShardStrategy(cfg LeastShardConfig) (*LeastShardStrategy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &LeastShardStrategy{core: *shardcore.NewLeastShard(shardcore.LeastShardSettings(cfg))}, nil
}

// AllocateShard returns the first region in the order described at LeastShardStrategy,
// among those not shutting down. When no member of a candidate region is known it
// returns the requester if it can host, else the candidate with the fewest shards. It
// returns an error wrapping ErrNoRegion when every region is shutting down.
func (s *LeastShardStrategy) AllocateShard(req AllocationRequest) (RegionID, error) {
	return s.core.AllocateShard(req)
}

// Rebalance returns the shards to move, sorted; see LeastShardConfig for the two
// algorithms.
func (s *LeastShardStrategy) Rebalance(req RebalanceRequest) ([]ShardID, error) {
	return s.core.Rebalance(req)
}
