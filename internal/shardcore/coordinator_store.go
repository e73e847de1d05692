package shardcore

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// The coordinator's state: loading it, and storing each change before acting on it.

func (c *Coordinator) stateLoaded(st *CoordState) {
	if c.phase != phaseWaitingForState {
		c.problem(fmt.Errorf("sharding: coordinator state loaded twice; ignored"))
		return
	}
	if st == nil {
		st = NewCoordState(c.cfg.RememberEntities)
	}
	st.withRememberEntities(c.cfg.RememberEntities)
	c.state = st
	// min-nr-of-members holds back the first allocations of a cluster that starts; a
	// Coordinator that takes over a running cluster (shards have homes) does not wait
	// for that many regions again: the cluster may have shrunk below it meanwhile.
	if len(st.shards) > 0 {
		c.allRegistered = true
	}
	if st.isEmpty() {
		c.activate()
		return
	}
	c.phase = phaseInitializing
	for _, r := range st.SortedRegions() {
		c.out.Watch = append(c.out.Watch, r)
		if c.haveMembers && !c.isMemberNode(r) {
			c.queue = append(c.queue, InRegionTerminated{Region: r})
		}
	}
	for _, p := range st.sortedProxies() {
		c.out.Watch = append(c.out.Watch, p)
		if c.haveMembers && !c.isMemberNode(p) {
			c.queue = append(c.queue, InRegionTerminated{Region: p})
		}
	}
	c.timers.start(&c.out.Timers, TimerKey{Kind: TimerStateInit}, c.cfg.StateInitDelay, false)
}

// activate starts answering: HostShard for every known shard, homes for remembered
// shards, the rebalance tick.
func (c *Coordinator) activate() {
	c.phase = phaseActive
	for _, s := range c.state.sortedShards() {
		c.sendHostShard(s, c.state.shards[s])
	}
	c.allocateRemembered()
	if !c.preparingShutdown {
		c.timers.start(&c.out.Timers, TimerKey{Kind: TimerRebalance}, c.cfg.RebalanceInterval, true)
	}
}

// write starts storing e; the core is blocked until InStoreDone. A handler writes at
// most once, as its last action.
func (c *Coordinator) write(e CoordEvent) { c.writePending(&pendingWrite{event: e}) }

// writePending starts storing p.event, and keeps p for when it is stored.
func (c *Coordinator) writePending(p *pendingWrite) {
	if c.pending != nil {
		c.problem(fmt.Errorf("%w: %T while %T is pending (dropped)", ErrInvalidEvent, p.event, c.pending.event))
		return
	}
	if err := c.state.check(p.event); err != nil {
		c.problem(err)
		return
	}
	c.pending = p
	c.emitStore()
}

func (c *Coordinator) emitStore() {
	st := &CoordStore{Event: c.pending.event}
	if c.cfg.StoreState {
		st.State = c.state.Clone()
		_ = st.State.Apply(c.pending.event) // checked in write
	}
	c.out.Store = st
}

func (c *Coordinator) storeFailed(err error) {
	if c.pending == nil {
		c.problem(fmt.Errorf("%w: failure reported with nothing pending: %v", errStore, err))
		return
	}
	// The first failure of a write is a problem; its retries fail alike until the
	// cause passes (a majority of replicas while a crashed member is not yet downed),
	// and are not reported again.
	if c.pending.failed == 0 {
		c.problem(fmt.Errorf("%w: %T, retrying: %v", errStore, c.pending.event, err))
	}
	c.pending.failed++
	c.emitStore()
}

func (c *Coordinator) storeDone() {
	p := c.pending
	if p == nil {
		c.problem(fmt.Errorf("%w: completion reported with nothing pending", errStore))
		return
	}
	c.pending = nil
	if err := c.state.Apply(p.event); err != nil {
		c.problem(err)
		return
	}
	switch e := p.event.(type) {
	case RegionRegistered:
		c.out.Watch = append(c.out.Watch, e.Region)
		c.send(e.Region, c.registerAck())
		c.allocateRemembered()
	case RegionProxyRegistered:
		c.out.Watch = append(c.out.Watch, e.Proxy)
		c.send(e.Proxy, c.registerAck())
	case RegionTerminated:
		delete(c.graceful, e.Region)
		delete(c.terminating, e.Region)
		delete(c.alive, e.Region)
		for s, r := range c.unacked {
			if r == e.Region {
				delete(c.unacked, s)
				c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerHostShard, Shard: s})
			}
		}
		for s, r := range c.predecessor {
			if r == e.Region {
				delete(c.predecessor, s)
			}
		}
		c.forgetRequester(e.Region)
		for s, m := range c.successor {
			delete(m, e.Region)
			for p, next := range m {
				if next == e.Region {
					delete(m, p)
				}
			}
			if len(m) == 0 {
				delete(c.successor, s)
			}
		}
		c.allocateRemembered()
	case RegionProxyTerminated:
		delete(c.graceful, e.Proxy)
		c.forgetRequester(e.Proxy)
	case ShardHomeAllocated, ShardHomesAllocated:
		for _, a := range p.allocs {
			c.homeStored(a)
		}
	case ShardHomeDeallocated:
		var from placement.RegionID
		if w := c.workers[e.Shard]; w != nil {
			from = w.from
		}
		c.finishWorker(e.Shard)
		c.ackGraceful(from)
		c.allocateRemembered()
		// Re-home at once, so the shard (and with remember-entities its entities) is back
		// before the first message asks for it.
		c.queue = append(c.queue, InRegionMsg{Msg: GetShardHome{Shard: e.Shard}})
	}
}

// forgetRequester drops a region or proxy that is gone from the requesters awaiting a
// home.
func (c *Coordinator) forgetRequester(r placement.RegionID) {
	for s, rs := range c.awaiting {
		if rs = slices.DeleteFunc(rs, func(x placement.RegionID) bool { return x == r }); len(rs) == 0 {
			delete(c.awaiting, s)
		} else {
			c.awaiting[s] = rs
		}
	}
}
