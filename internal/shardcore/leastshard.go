package shardcore

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// Defaults of LeastShardSettings (Akka's least-shard-allocation-strategy settings).
const (
	defaultRebalanceRelativeLimit   = 0.1
	defaultRebalanceThreshold       = 1
	defaultMaxSimultaneousRebalance = 3
)

// LeastShardSettings configures LeastShard: the fields of package sharding's
// LeastShardConfig, which documents them (and converts to this type). Zero values
// mean the defaults.
type LeastShardSettings struct {
	RebalanceAbsoluteLimit   int
	RebalanceRelativeLimit   float64
	RebalanceThreshold       int
	MaxSimultaneousRebalance int
}

// withDefaults fills zero values with the defaults.
func (c LeastShardSettings) withDefaults() LeastShardSettings {
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

// LeastShard is the least-shard allocation strategy (package sharding's
// LeastShardStrategy, which documents it, holds one). Its zero value uses the
// settings as they are, without defaults.
type LeastShard struct {
	cfg LeastShardSettings
}

// NewLeastShard returns the least-shard strategy with cfg, its zero values filled
// with the defaults. cfg is valid (package sharding validates it).
func NewLeastShard(cfg LeastShardSettings) *LeastShard {
	return &LeastShard{cfg: cfg.withDefaults()}
}

// AllocateShard returns the first region in the order described at package sharding's
// LeastShardStrategy, among those not shutting down. When no member of a candidate
// region is known it returns the requester if it can host, else the candidate with the
// fewest shards. It returns an error wrapping placement.ErrNoRegion when every region
// is shutting down.
func (s *LeastShard) AllocateShard(req placement.AllocationRequest) (placement.RegionID, error) {
	var best, fallback *placement.RegionInfo
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
	return "", fmt.Errorf("%w: shard %q, %d regions, all shutting down", placement.ErrNoRegion, req.Shard, len(req.Regions))
}

// fewerShards orders regions by shard count, then by ID.
func fewerShards(a, b placement.RegionInfo) bool {
	if c := cmp.Compare(len(a.Shards), len(b.Shards)); c != 0 {
		return c < 0
	}
	return a.Region < b.Region
}

// Rebalance returns the shards to move, sorted; see sharding.LeastShardConfig for the two
// algorithms.
func (s *LeastShard) Rebalance(req placement.RebalanceRequest) ([]placement.ShardID, error) {
	var known []placement.RegionInfo
	for _, r := range req.Regions {
		if r.Node.Status != 0 {
			known = append(known, r)
		}
	}
	if !goodTimeToRebalance(known, req.Members) {
		return nil, nil
	}
	var active []placement.RegionInfo
	for _, r := range known {
		if !r.ShuttingDown {
			active = append(active, r)
		}
	}
	if len(active) == 0 {
		return nil, nil
	}
	sorted := sortRegions(active)
	var out []placement.ShardID
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
func goodTimeToRebalance(known []placement.RegionInfo, members []placement.NodeInfo) bool {
	if len(known) == 0 {
		return false
	}
	v := known[0].Node.AppVersion
	for _, r := range known {
		if compareAppVersion(r.Node.AppVersion, v) != 0 || r.Node.Unreachable || r.Node.Status == member.Joining {
			return false
		}
	}
	for _, m := range members {
		if m.Unreachable || m.Status == member.Joining {
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
func (s *LeastShard) rebalanceClassic(sorted []placement.RegionInfo, inProgress map[placement.ShardID]bool) []placement.ShardID {
	maxSim, t := s.cfg.MaxSimultaneousRebalance, s.cfg.RebalanceThreshold
	if len(inProgress) >= maxSim {
		return nil
	}
	least := len(sorted[0].Shards)
	var most []placement.ShardID
	for i, r := range sorted {
		var free []placement.ShardID
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
func (s *LeastShard) rebalanceLimited(sorted []placement.RegionInfo, inProgress map[placement.ShardID]bool) []placement.ShardID {
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
	var picked []placement.ShardID
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
