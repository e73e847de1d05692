package shardcore

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// Allocating many shards in one write. Every new home is a state change, and the core
// blocks while a change is being written (a majority-plus write in distributed data, a
// journal write in persistence); home requests that come meanwhile queue up. When the
// core starts an allocation it also allocates the requests for other homeless shards
// that queued right behind it, and stores them all as one ShardHomesAllocated: after
// a member crashes, its shards get new homes in a few writes instead of one write each.
//
// The batch gives each shard the home the one-at-a-time allocations would have given
// it: the strategy is asked shard by shard, in queue order, and sees the regions'
// shard lists with the homes already decided in the batch, so the least-shard strategy
// spreads a batch evenly. Only the run of home requests at the head of the queue is
// taken: an input behind it (a registration, a region leaving) would have changed the
// candidates for the requests after it, so those wait for their turn.

// maxAllocationBatch bounds the shards of one ShardHomesAllocated, so that one
// journal entry stays small: 500 shard IDs (a few bytes each with the default
// extractor, about 2 KiB in all; 36-byte UUIDs make about 19 KiB), plus one region ID
// per region. In distributed data the register holds the whole state whatever the
// batch. Akka sends shard homes to a region in messages of 500, too.
const maxAllocationBatch = 500

// allocBatch is the allocations one write will store.
type allocBatch struct {
	regions []placement.RegionInfo    // the candidates, with the batch's homes added to their shards
	allocs  []allocation              // in the order decided
	index   map[placement.ShardID]int // shard -> its entry in allocs
}

// allocate asks the strategy for s's home and adds it to b; it reports whether it did.
// A strategy that fails or names a region that cannot host leaves s without a home (a
// problem is logged; the requester asks again, or is told when it is leaving), as for a
// single allocation.
func (c *Coordinator) allocate(b *allocBatch, from placement.RegionID, s placement.ShardID) bool {
	cands := make([]placement.RegionInfo, len(b.regions))
	for i, r := range b.regions {
		r.Shards = slices.Clone(r.Shards) // the strategy's own copy
		cands[i] = r
	}
	r, err := c.strategy.AllocateShard(placement.AllocationRequest{Requester: from, Shard: s, Regions: cands})
	if err != nil {
		c.problem(fmt.Errorf("%w: shard %q: %v", errStrategy, s, err))
		c.noHome(from, s)
		return false
	}
	i := slices.IndexFunc(b.regions, func(ri placement.RegionInfo) bool { return ri.Region == r })
	if i < 0 || !c.CanHost(r) {
		c.problem(fmt.Errorf("%w: shard %q allocated to %q, which cannot host", errStrategy, s, r))
		c.noHome(from, s)
		return false
	}
	b.regions[i].Shards = append(b.regions[i].Shards, s)
	b.index[s] = len(b.allocs)
	b.allocs = append(b.allocs, allocation{shard: s, region: r, requesters: []placement.RegionID{from}})
	return true
}

// allocateQueued adds to b the home requests that wait in the run of GetShardHome
// inputs at the head of the queue, up to maxAllocationBatch shards. A request for a
// shard of the batch joins its requesters. A request the core answers without a write
// (a known home, a shard in hand-off) is answered now, as it would be if it came while
// the batch is written. The others stay queued, in order, and are handled as usual once
// the batch is stored: hand-over requests for shards without a known home (the
// predecessor is told where to hand over once that home is stored) and requests
// without a shard.
func (c *Coordinator) allocateQueued(b *allocBatch) {
	var taken []bool // by queue index, within the run
	for i, in := range c.queue {
		if len(b.allocs) == maxAllocationBatch {
			break
		}
		rm, ok := in.(InRegionMsg)
		if !ok {
			break
		}
		m, ok := rm.Msg.(GetShardHome)
		if !ok {
			break
		}
		if taken == nil {
			taken = make([]bool, len(c.queue))
		}
		switch j, inBatch := b.index[m.Shard]; {
		case m.Shard == "":
		case c.answerHandOver(rm.From, m) || c.answerKnown(rm.From, m.Shard):
			// Answered now, as it would be if it came while the batch is written.
			taken[i] = true
		case m.HandOver:
		case inBatch:
			a := &b.allocs[j]
			if rm.From != "" && !slices.Contains(a.requesters, rm.From) {
				a.requesters = append(a.requesters, rm.From)
			}
			taken[i] = true
		default:
			// A strategy that fails for this shard drops the request, as it would alone.
			c.allocate(b, rm.From, m.Shard)
			taken[i] = true
		}
	}
	if !slices.Contains(taken, true) {
		return
	}
	rest := make([]CoordInput, 0, len(c.queue))
	for i, in := range c.queue {
		if i >= len(taken) || !taken[i] {
			rest = append(rest, in)
		}
	}
	c.queue = rest
}

// pendingWrite returns the write that stores b: the single event for one shard (which
// coordinators of earlier versions read too), else one ShardHomesAllocated with the
// shards grouped by region, each region's in the order decided.
func (b *allocBatch) pendingWrite() *pendingWrite {
	if len(b.allocs) == 1 {
		a := b.allocs[0]
		return &pendingWrite{event: ShardHomeAllocated{Shard: a.shard, Region: a.region}, allocs: b.allocs}
	}
	var e ShardHomesAllocated
	at := map[placement.RegionID]int{}
	for _, a := range b.allocs {
		i, ok := at[a.region]
		if !ok {
			i = len(e.Homes)
			at[a.region] = i
			e.Homes = append(e.Homes, RegionShards{Region: a.region})
		}
		e.Homes[i].Shards = append(e.Homes[i].Shards, a.shard)
	}
	return &pendingWrite{event: e, allocs: b.allocs}
}

// homeStored tells a stored home to the shard's region, to the requesters and to the
// regions that asked while its previous home was being removed, and notes where the
// shard's previous home hands its messages over.
func (c *Coordinator) homeStored(a allocation) {
	delete(c.successor[a.shard], a.region) // its own hand-over, if any, goes to itself
	if p := c.predecessor[a.shard]; p != "" && p != a.region {
		if c.successor[a.shard] == nil {
			c.successor[a.shard] = map[placement.RegionID]placement.RegionID{}
		}
		c.successor[a.shard][p] = a.region
	}
	c.sendHostShard(a.shard, a.region)
	for _, to := range a.requesters {
		if to != "" {
			c.send(to, ShardHome{Shard: a.shard, Region: a.region})
		}
	}
	for _, to := range c.awaiting[a.shard] {
		if !slices.Contains(a.requesters, to) {
			c.send(to, ShardHome{Shard: a.shard, Region: a.region})
		}
	}
	delete(c.awaiting, a.shard)
}
