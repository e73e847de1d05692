package sharding

import (
	"cmp"
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/sharding/placement"
)

// AllocationStrategy decides where shards live. It is placement.AllocationStrategy
// (see there for the rules an implementation keeps); NewLeastShardStrategy returns the
// default one.
type AllocationStrategy = placement.AllocationStrategy

// AllocationRequest is the question AllocationStrategy.AllocateShard answers. It is
// placement.AllocationRequest.
type AllocationRequest = placement.AllocationRequest

// RebalanceRequest is the question AllocationStrategy.Rebalance answers. It is
// placement.RebalanceRequest.
type RebalanceRequest = placement.RebalanceRequest

// RegionInfo describes one region to an allocation strategy. It is
// placement.RegionInfo.
type RegionInfo = placement.RegionInfo

// NodeInfo is what sharding needs to know about a cluster member. It is
// placement.NodeInfo.
type NodeInfo = placement.NodeInfo

// leaving reports whether a member is on its way out of the cluster.
func leaving(n NodeInfo) bool {
	return n.Status == cluster.Leaving || n.Status == cluster.Exiting || n.Status == cluster.Down ||
		n.Status == cluster.Removed
}

// compareRegions is the order in which regions are preferred as a shard's home, best
// first: regions of members that are not leaving (Leaving, Exiting, Down); a higher app
// version; fewer shards; an older member (lower up number; no age is youngest); a lower
// member address; and, to make the order total, a lower region ID.
func compareRegions(a, b RegionInfo) int {
	if la, lb := leaving(a.Node), leaving(b.Node); la != lb {
		if la {
			return 1
		}
		return -1
	}
	if c := compareAppVersion(a.Node.AppVersion, b.Node.AppVersion); c != 0 {
		return -c
	}
	if c := cmp.Compare(len(a.Shards), len(b.Shards)); c != 0 {
		return c
	}
	ua, ub := a.Node.UpNumber, b.Node.UpNumber
	switch {
	case ua > 0 && ub <= 0:
		return -1
	case ua <= 0 && ub > 0:
		return 1
	case ua != ub:
		return cmp.Compare(ua, ub)
	}
	if c := a.Node.Address.Compare(b.Node.Address); c != 0 {
		return c
	}
	return cmp.Compare(a.Region, b.Region)
}

// sortRegions returns the regions in preference order (compareRegions), in a new slice.
func sortRegions(regions []RegionInfo) []RegionInfo {
	out := slices.Clone(regions)
	slices.SortFunc(out, compareRegions)
	return out
}
