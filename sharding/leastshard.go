package sharding

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/troupe-go/troupe/cluster"
)

// Defaults of LeastShardConfig (Akka's least-shard-allocation-strategy settings).
const (
	defaultRebalanceRelativeLimit   = 0.1
	defaultRebalanceThreshold       = 1
	defaultMaxSimultaneousRebalance = 3
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

// withDefaults fills zero values with the defaults.
func (c LeastShardConfig) withDefaults() LeastShardConfig {
	if c.RebalanceRelativeLimit == 0 {
		c.RebalanceRelativeLimit = defaultRebalanceRelativeLimit
	}
	if c.RebalanceThreshold == 0 {
		c.RebalanceThreshold = defaultRebalanceThreshold
	}
	if c.MaxSimultaneousRebalance == 0 {
		c.MaxSimultaneousRebalance = defaultMaxSimultaneousRebalance
	}
	return c
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
	cfg LeastShardConfig
}

// NewLeastShardStrategy returns the least-shard strategy, or an error wrapping
// ErrInvalidConfig.
func NewLeastShardStrategy(cfg LeastShardConfig) (*LeastShardStrategy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &LeastShardStrategy{cfg: cfg.withDefaults()}, nil
}

// AllocateShard returns the first region in the order described at LeastShardStrategy,
// among those not shutting down. When no member of a candidate region is known it
// returns the requester if it can host, else the candidate with the fewest shards. It
// returns an error wrapping ErrNoRegion when every region is shutting down.
func (s *LeastShardStrategy) AllocateShard(req AllocationRequest) (RegionID, error) {
	var best, fallback *RegionInfo
	for i := range req.Regions {
		r := &req.Regions[i]
		if r.ShuttingDown {
			continue
		}
		switch {
		case fallback == nil, r.Region == req.Requester:
			fallback = r
		case fallback.Region != req.Requester && fewerShards(*r, *fallback):
			fallback = r
		}
		if r.Node.Status != 0 && (best == nil || compareRegions(*r, *best) < 0) {
			best = r
		}
	}
	switch {
	case best != nil:
		return best.Region, nil
	case fallback != nil:
		return fallback.Region, nil
	}
	return "", fmt.Errorf("%w: shard %q, %d regions, all shutting down", ErrNoRegion, req.Shard, len(req.Regions))
}

// fewerShards orders regions by shard count, then by ID.
func fewerShards(a, b RegionInfo) bool {
	if c := cmp.Compare(len(a.Shards), len(b.Shards)); c != 0 {
		return c < 0
	}
	return a.Region < b.Region
}

// Rebalance returns the shards to move, sorted; see LeastShardConfig for the two
// algorithms.
func (s *LeastShardStrategy) Rebalance(req RebalanceRequest) ([]ShardID, error) {
	var known []RegionInfo
	for _, r := range req.Regions {
		if r.Node.Status != 0 {
			known = append(known, r)
		}
	}
	if !goodTimeToRebalance(known, req.Members) {
		return nil, nil
	}
	var active []RegionInfo
	for _, r := range known {
		if !r.ShuttingDown {
			active = append(active, r)
		}
	}
	if len(active) == 0 {
		return nil, nil
	}
	sorted := sortRegions(active)
	var out []ShardID
	if s.cfg.RebalanceAbsoluteLimit == 0 {
		out = s.rebalanceClassic(sorted, req.InProgress)
	} else {
		out = s.rebalanceLimited(sorted, req.InProgress)
	}
	slices.Sort(out)
	return out, nil
}

// goodTimeToRebalance reports whether a rebalance may start: some region is known, all
// known regions run the same app version, and no member (nor region node) is
// unreachable or joining.
func goodTimeToRebalance(known []RegionInfo, members []NodeInfo) bool {
	if len(known) == 0 {
		return false
	}
	v := known[0].Node.AppVersion
	for _, r := range known {
		if compareAppVersion(r.Node.AppVersion, v) != 0 || r.Node.Unreachable || r.Node.Status == cluster.Joining {
			return false
		}
	}
	for _, m := range members {
		if m.Unreachable || m.Status == cluster.Joining {
			return false
		}
	}
	return true
}

// rebalanceClassic: while fewer than MaxSimultaneousRebalance shards are in hand-off,
// compare the best region (sorted[0], all its shards counted) with the region holding
// the most shards not in hand-off (the first such in preference order); when the
// difference exceeds the threshold T, move the n lowest shard IDs of the latter,
// n = min(difference - T, T, MaxSimultaneousRebalance - in progress).
func (s *LeastShardStrategy) rebalanceClassic(sorted []RegionInfo, inProgress map[ShardID]bool) []ShardID {
	maxSim, t := s.cfg.MaxSimultaneousRebalance, s.cfg.RebalanceThreshold
	if len(inProgress) >= maxSim {
		return nil
	}
	least := len(sorted[0].Shards)
	var most []ShardID
	for i, r := range sorted {
		var free []ShardID
		for _, id := range r.Shards {
			if !inProgress[id] {
				free = append(free, id)
			}
		}
		if i == 0 || len(free) > len(most) {
			most = free
		}
	}
	diff := len(most) - least
	if diff <= t {
		return nil
	}
	n := min(diff-t, t, maxSim-len(inProgress))
	most = slices.Clone(most)
	slices.Sort(most)
	return most[:n]
}

// rebalanceLimited is the newer algorithm. Nothing moves while any shard is in
// hand-off. With total shards and the optimal count ceil(total/regions) per region,
// phase 1 takes from every region above the optimum its first (size - optimum) shards,
// regions with the most shards first, at most limit shards in all. If phase 1 finds
// nothing, phase 2 looks for regions at least two below the optimum: when
// below = sum(max(0, optimum-1-size)) > 0 it takes the first shard of each region that
// has the optimum or more, in preference order, at most min(below, limit).
func (s *LeastShardStrategy) rebalanceLimited(sorted []RegionInfo, inProgress map[ShardID]bool) []ShardID {
	if len(inProgress) > 0 {
		return nil
	}
	total := 0
	for _, r := range sorted {
		total += len(r.Shards)
	}
	if total == 0 {
		return nil
	}
	optimal := (total + len(sorted) - 1) / len(sorted)
	limit := max(1, min(int(s.cfg.RebalanceRelativeLimit*float64(total)), s.cfg.RebalanceAbsoluteLimit))

	// Phase 1, from the most loaded end of the preference order, so that a small limit
	// moves shards from the regions furthest above the optimum first.
	var picked []ShardID
	for i := len(sorted) - 1; i >= 0 && len(picked) < limit; i-- {
		if n := len(sorted[i].Shards) - optimal; n > 0 {
			picked = append(picked, sorted[i].Shards[:min(n, limit-len(picked))]...)
		}
	}
	if len(picked) > 0 {
		return picked
	}

	// Phase 2.
	below := 0
	for _, r := range sorted {
		below += max(0, optimal-1-len(r.Shards))
	}
	if below == 0 {
		return nil
	}
	capN := min(below, limit)
	for _, r := range sorted {
		if len(picked) == capN {
			break
		}
		if len(r.Shards) >= optimal {
			picked = append(picked, r.Shards[0])
		}
	}
	return picked
}
