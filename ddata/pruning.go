package ddata

import (
	"maps"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// Defaults of pruning (Akka's). The replicator runs pruner.tick every
// pruning-interval (120 s).
const (
	// defaultMaxPruningDissemination is how long a removed node's data is left
	// to spread before its pruning starts, and (as the brief for this package
	// asks) how long a performed marker is kept before it is forgotten.
	defaultMaxPruningDissemination = 300 * time.Second
)

// pruner runs the replicator's pruning of removed nodes, in two leader-driven steps
// per key and removed node:
//
//  1. Initialise (leader only): once a node has been removed for longer than
//     maxDissemination, the leader marks every key that holds the node's state as
//     "pruning initialized, owner = leader". The mark spreads with the values;
//     every node that merges it adds itself to the mark's seen set.
//  2. Perform (the owner): once every current member has seen the mark, the owner
//     folds the removed node's state into its own entry (PrunableData.Prune) and
//     marks the key "performed" until markerTTL has passed. A replica that merges a
//     value carrying that mark first drops the removed node's state from both
//     sides (PrunableData.PruningCleanup), so it is counted once.
//  3. Forget: once the performed marker is obsolete, it is dropped.
//
// Nothing happens while a member is unreachable. Times are inputs.
type pruner struct {
	self             cluster.UniqueAddress
	maxDissemination time.Duration
	markerTTL        time.Duration
	removed          map[cluster.UniqueAddress]time.Time // removed nodes, and when they were noticed
}

func newPruner(self cluster.UniqueAddress, maxDissemination, markerTTL time.Duration) *pruner {
	if maxDissemination <= 0 {
		maxDissemination = defaultMaxPruningDissemination
	}
	if markerTTL <= 0 {
		markerTTL = maxDissemination
	}
	return &pruner{self: self, maxDissemination: maxDissemination, markerTTL: markerTTL,
		removed: make(map[cluster.UniqueAddress]time.Time)}
}

// nodeRemoved records that n left the cluster for good at now.
func (p *pruner) nodeRemoved(n cluster.UniqueAddress, now time.Time) {
	if _, ok := p.removed[n]; !ok && n != p.self {
		p.removed[n] = now
	}
}

// pruningMembers is what pruningTick needs to know of the cluster.
type pruningMembers struct {
	leader       bool                    // this node is the leader
	members      []cluster.UniqueAddress // every member whose seen-mark counts, self included
	allReachable bool                    // no member is unreachable
}

// tick runs the steps over the entries (changed in place) and returns the keys it
// changed, sorted, so that the replicator stores durable ones and notifies
// subscribers.
func (p *pruner) tick(entries map[string]*envelope, m pruningMembers, now time.Time) []string {
	if !m.allReachable {
		return nil
	}
	changed := make(map[string]bool)
	if m.leader {
		p.collectRemoved(entries, m.members, now)
		for n, since := range p.removed {
			if now.Sub(since) <= p.maxDissemination {
				continue
			}
			for key, e := range entries {
				if !e.needPruningFrom(n) {
					continue
				}
				st, ok := e.pruning[n]
				if !ok || (!st.performed && st.owner != p.self) {
					e.initPruning(n, p.self)
					changed[key] = true
				}
			}
		}
	}
	for key, e := range entries {
		for n, st := range e.pruning {
			if st.performed || st.owner != p.self {
				continue
			}
			if p.allSeen(st, m.members) {
				e.performPruning(n, now.Add(p.markerTTL))
				changed[key] = true
			}
		}
		for _, n := range e.dropObsolete(now) {
			delete(p.removed, n)
			changed[key] = true
		}
	}
	return slices.Sorted(maps.Keys(changed))
}

// allSeen reports whether every member but the owner has seen the initialisation.
func (p *pruner) allSeen(st pruningState, members []cluster.UniqueAddress) bool {
	for _, n := range members {
		if n != st.owner && !st.hasSeen(n) {
			return false
		}
	}
	return true
}

// collectRemoved adds the nodes that hold state in some value but are no members
// (for instance after the leader restarted and missed their removal), noticed now.
func (p *pruner) collectRemoved(entries map[string]*envelope, members []cluster.UniqueAddress, now time.Time) {
	isMember := make(map[cluster.UniqueAddress]bool, len(members))
	for _, n := range members {
		isMember[n] = true
	}
	for _, e := range entries {
		pd, ok := e.data.(PrunableData)
		if !ok || e.deleted {
			continue
		}
		for _, n := range pd.ModifiedByNodes() {
			if !isMember[n] {
				if _, performed := e.pruning[n]; !performed || !e.pruning[n].performed {
					p.nodeRemoved(n, now)
				}
			}
		}
	}
}
