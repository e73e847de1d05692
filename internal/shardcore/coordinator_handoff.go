package shardcore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// handOffWorker is one shard's hand-off (Akka's RebalanceWorker, as data): BeginHandOff
// went to every region and proxy; once all acknowledged (a region that is gone counts
// as acknowledged), HandOff goes to the owner, and the hand-off succeeds when the owner
// answers ShardStopped, or fails at the hand-off timeout. While a worker exists, the
// shard's home is not given to anyone: requests wait in deferred.
type handOffWorker struct {
	shard       placement.ShardID
	id          uint64                      // names it in BeginHandOff and its acknowledgements (0: unnamed)
	from        placement.RegionID          // the region that holds the shard
	remaining   map[placement.RegionID]bool // regions and proxies yet to acknowledge BeginHandOff
	handOffSent bool
	done        bool                 // ended; waiting for the deallocation to be stored or for its turn in the queue
	deferred    []placement.RegionID // GetShardHome requesters to answer once the shard has its next home
	rebalance   bool                 // started by the strategy (not by a shutdown or StopShards)
}

// startWorker starts handing off s from its region, unless that already runs.
func (c *Coordinator) startWorker(s placement.ShardID, from placement.RegionID, rebalance bool) {
	if c.workers[s] != nil {
		return
	}
	w := &handOffWorker{shard: s, id: c.nextHandOffID(), from: from, remaining: map[placement.RegionID]bool{}, rebalance: rebalance}
	c.workers[s] = w
	// A HostShard resend must not start the shard again while it is handed off.
	if _, ok := c.unacked[s]; ok {
		delete(c.unacked, s)
		c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerHostShard, Shard: s})
	}
	for _, r := range append(c.state.SortedRegions(), c.state.sortedProxies()...) {
		if c.terminating[r] {
			continue // its node is gone: it routes nothing any more
		}
		w.remaining[r] = true
		c.send(r, BeginHandOff{Shard: s, ID: w.id})
	}
	c.timers.start(&c.out.Timers, TimerKey{Kind: TimerHandOff, Shard: s}, c.cfg.HandOffTimeout, false)
	if len(w.remaining) == 0 {
		c.sendHandOff(w)
	}
}

// nextHandOffID names the next hand-off: the epoch plus a count, or 0 when the
// incarnation has no epoch.
func (c *Coordinator) nextHandOffID() uint64 {
	if c.cfg.HandOffEpoch == 0 {
		return 0
	}
	c.handOffs++
	return c.cfg.HandOffEpoch + c.handOffs
}

func (c *Coordinator) sendHandOff(w *handOffWorker) {
	w.handOffSent = true
	c.send(w.from, HandOff{Shard: w.shard})
}

func (c *Coordinator) handOffAcked(region placement.RegionID, s placement.ShardID) {
	w := c.workers[s]
	if w == nil || w.done || !w.remaining[region] {
		return
	}
	delete(w.remaining, region)
	if len(w.remaining) == 0 && !w.handOffSent {
		c.sendHandOff(w)
	}
}

// shardStopped handles a region's ShardStopped. Expected from the owner after HandOff;
// from the owner while no hand-off runs it is a late answer to a hand-off that timed
// out or that an earlier coordinator began (it moved or crashed since), and the shard
// is re-homed now (otherwise the old home would keep receiving it
// and re-creating it: Akka.NET issue 7500).
func (c *Coordinator) shardStopped(from placement.RegionID, s placement.ShardID, pending bool) {
	if w := c.workers[s]; w != nil {
		if w.done || !w.handOffSent || from != w.from {
			return
		}
		c.setPredecessor(s, from, pending)
		w.done = true
		c.rebalanceDone(s, true)
		return
	}
	if home, ok := c.state.shards[s]; ok && home == from {
		if r, ok := c.unacked[s]; ok && r == from {
			// This coordinator has told from to host s since: the region stopped an
			// earlier instance (answering an earlier coordinator's HandOff) and starts
			// s again as told, which its ShardStarted (or the HostShard resend) will
			// confirm. Re-homing s now would run it in two regions.
			return
		}
		c.problem(fmt.Errorf("%w: shard %q in %q (its hand-off timed out, or an earlier coordinator began it); re-homing it now",
			ErrStoppedUnasked, s, from))
		c.setPredecessor(s, from, pending)
		// A finished worker keeps the old home from being handed out while the
		// deallocation is stored.
		c.workers[s] = &handOffWorker{shard: s, from: from, done: true}
		c.write(ShardHomeDeallocated{Shard: s})
	}
}

func (c *Coordinator) setPredecessor(s placement.ShardID, from placement.RegionID, pending bool) {
	delete(c.successor[s], from) // from a hand-off before: from has been the home since
	if pending {
		c.predecessor[s] = from
	} else {
		delete(c.predecessor, s)
	}
}

// rebalanceDone ends a hand-off. On success the shard is deallocated (and re-homed
// once that is stored) and StopShards requesters get their ShardStopped; on failure
// only the in-progress mark goes, and a region shutting down may ask again.
func (c *Coordinator) rebalanceDone(s placement.ShardID, ok bool) {
	if c.workers[s] == nil {
		return
	}
	if !ok {
		if home, allocated := c.state.shards[s]; allocated {
			delete(c.graceful, home)
		}
		c.finishWorker(s)
		return
	}
	for _, w := range c.stopWaiters[s] {
		c.send(w.replyTo, ShardStopped{Shard: s})
	}
	delete(c.stopWaiters, s)
	if _, allocated := c.state.shards[s]; allocated {
		c.write(ShardHomeDeallocated{Shard: s})
		return
	}
	c.finishWorker(s)
}

// finishWorker drops the hand-off mark and queues the deferred home requests.
func (c *Coordinator) finishWorker(s placement.ShardID) {
	w := c.workers[s]
	if w == nil {
		return
	}
	delete(c.workers, s)
	c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerHandOff, Shard: s})
	for _, r := range w.deferred {
		c.queue = append(c.queue, InRegionMsg{From: r, Msg: GetShardHome{Shard: s}})
	}
}

// RegionTerminated handles the end of a region or proxy actor. When its node was
// removed and a removal margin is set, the region stays (its shards get no new home)
// until the margin has passed, so that the other side of a partition has stopped them.
func (c *Coordinator) regionTerminated(r placement.RegionID, nodeRemoved bool) {
	_, isRegion := c.state.regions[r]
	if isRegion && nodeRemoved && c.cfg.RemovalMargin > 0 && c.alive[r] {
		if !c.terminating[r] {
			c.terminating[r] = true
			c.timers.start(&c.out.Timers, TimerKey{Kind: TimerRemovalMargin, Region: r}, c.cfg.RemovalMargin, false)
			// A removed node routes nothing any more: its acknowledgements are not needed.
			for _, s := range slices.Sorted(maps.Keys(c.workers)) {
				c.handOffAcked(r, s)
			}
		}
		return
	}
	c.regionGone(r)
}

// regionGone removes a region (or proxy) now. Its pending acknowledgements count as
// given; hand-offs of its own shards succeed (the shards are gone with it, so no shard
// stays marked in hand-off: akka-core issue 27259); its shards get new homes at once.
func (c *Coordinator) regionGone(r placement.RegionID) {
	c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerRemovalMargin, Region: r})
	for _, s := range slices.Sorted(maps.Keys(c.workers)) {
		w := c.workers[s]
		switch {
		case w.done:
		case w.from == r:
			w.done = true
			// After the termination is stored: the shard is then homeless.
			c.queue = append(c.queue, inRebalanceDone{Shard: s, OK: true})
		default:
			c.handOffAcked(r, s)
		}
	}
	if shards, ok := c.state.regions[r]; ok {
		c.terminating[r] = true
		for _, s := range shards {
			c.queue = append(c.queue, InRegionMsg{Msg: GetShardHome{Shard: s}})
		}
		c.write(RegionTerminated{Region: r})
		return
	}
	if _, ok := c.state.proxies[r]; ok {
		c.write(RegionProxyTerminated{Proxy: r})
	}
}

// GracefulShutdown hands off every shard of a region that is leaving. A proxy that
// leaves hosts nothing; it is marked too, so that it is told when a shard it holds
// messages for gets no home (noHome).
//
// The region may stop once it hosts nothing: the coordinator tells it so
// (GracefulShutdownAck), now or when its last hand-off ends (ackGraceful). A region
// that stopped as soon as it had no shard could have been given one meanwhile (the
// allocation and its request crossing), and what other regions sent it for that shard
// would be lost with it.
func (c *Coordinator) gracefulShutdown(r placement.RegionID) {
	if _, proxy := c.state.proxies[r]; proxy {
		c.graceful[r] = true
		return
	}
	shards, ok := c.state.regions[r]
	if !ok {
		// Not registered here: it gets no shard, even if its Register comes after
		// this request (see register).
		c.leftBeforeRegistering(r)
		c.send(r, c.shutdownAck())
		return
	}
	if !c.graceful[r] && !c.terminating[r] {
		c.graceful[r] = true
		for _, s := range slices.Clone(shards) {
			c.startWorker(s, r, false)
		}
	}
	if len(shards) == 0 {
		c.send(r, c.shutdownAck())
	}
}

// ackGraceful tells region r, which leaves, that it may stop, once its last shard has
// been handed off.
func (c *Coordinator) ackGraceful(r placement.RegionID) {
	if shards, ok := c.state.regions[r]; ok && c.graceful[r] && len(shards) == 0 {
		c.send(r, c.shutdownAck())
	}
}

// stopShards hands off the given shards without re-homing them until asked (a user
// request); replyTo gets one ShardStopped per shard.
func (c *Coordinator) stopShards(replyTo placement.RegionID, shards []placement.ShardID) {
	if c.cfg.RememberEntities {
		c.problem(fmt.Errorf("%w: ignoring request from %q to stop %v", errStopShardsRemembered, replyTo, shards))
		return
	}
	if len(c.state.regions) == 0 || c.preparingShutdown {
		c.problem(fmt.Errorf("sharding: request from %q to stop %v ignored: no region, or the cluster is shutting down", replyTo, shards))
		return
	}
	c.nextRequest++
	req := c.nextRequest
	running := false
	for _, s := range slices.Compact(slices.Sorted(slices.Values(shards))) {
		home, ok := c.state.shards[s]
		if !ok {
			c.send(replyTo, ShardStopped{Shard: s})
			continue
		}
		running = true
		c.stopWaiters[s] = append(c.stopWaiters[s], stopWaiter{replyTo: replyTo, request: req})
		if !c.terminating[home] {
			c.startWorker(s, home, false)
		}
	}
	if running {
		c.timers.start(&c.out.Timers, TimerKey{Kind: TimerStopShards, N: req}, c.cfg.HandOffTimeout, false)
	}
}

// rebalanceTick asks the strategy which shards to move and starts their hand-offs.
func (c *Coordinator) rebalanceTick() {
	if c.phase != phaseActive || c.preparingShutdown || len(c.state.regions) == 0 {
		return
	}
	inProgress := make(map[placement.ShardID]bool, len(c.workers))
	for s := range c.workers {
		inProgress[s] = true
	}
	shards, err := c.strategy.Rebalance(placement.RebalanceRequest{
		Regions:    c.regionInfos(true),
		InProgress: inProgress,
		Members:    slices.Clone(c.memberList),
	})
	if err != nil {
		c.problem(fmt.Errorf("%w: rebalance: %v", errStrategy, err))
		return
	}
	for _, s := range shards {
		r, ok := c.state.shards[s]
		if !ok || c.workers[s] != nil || !c.CanHost(r) {
			continue // unknown, already moving, or its region is on its way out anyway
		}
		c.startWorker(s, r, true)
	}
}
