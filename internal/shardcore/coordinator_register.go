package shardcore

import (
	"maps"
	"slices"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// How the coordinator core registers regions and proxies.

// endedRegions bounds coordinator.ended: a region's late Register comes soon after
// its end, and few other regions end meanwhile.
const endedRegions = 64

// regionEnded remembers that region (or proxy) r has ended.
func (c *Coordinator) regionEnded(r placement.RegionID) {
	if r != "" {
		c.ended = Remember(c.ended, r, endedRegions)
	}
}

// register registers a region or proxy, or acknowledges its registration again. A
// region that has ended is not registered again: its Register may come after its end
// (a region registers until answered, also while it leaves, and locally its
// Terminated goes ahead of the messages it sent), and the coordinator would give
// shards to a region that is gone, losing what other regions forward to it until its
// end is seen a second time. Region IDs name one incarnation: a region that starts
// again has another.
//
// A region that asked to leave before it registered was told that it gets no shard
// here (GracefulShutdown), and may have stopped on that: it is registered as leaving,
// and given no shard. (It registers to learn the homes of messages it holds, and asks
// to leave again once registered.)
func (c *Coordinator) register(from placement.RegionID, status member.MemberStatus, local, proxy bool) {
	if from == "" || status != member.Up && !local {
		return // the region retries once its member is Up here
	}
	if slices.Contains(c.ended, from) {
		return
	}
	if !proxy && slices.Contains(c.leftUnregistered, from) {
		c.graceful[from] = true // it was told it gets no shard here
	}
	if proxy {
		c.sendShardHomes(from)
		if _, ok := c.state.proxies[from]; ok {
			c.send(from, c.registerAck())
			c.resendBeginHandOffs(from)
			return
		}
		c.write(RegionProxyRegistered{Proxy: from})
		return
	}
	c.alive[from] = true
	if _, ok := c.state.regions[from]; ok {
		c.send(from, c.registerAck())
		c.resendBeginHandOffs(from)
		c.sendShardHomes(from)
		c.allocateRemembered()
		return
	}
	c.sendShardHomes(from)
	c.write(RegionRegistered{Region: from})
}

// leftBeforeRegistering remembers that region (or proxy) r asked to leave before it
// registered here: it was told that it gets no shard, and may stop on that, while a
// Register it sent after its request is on its way (it registers until answered, also
// while it leaves, to learn the homes of what it holds).
func (c *Coordinator) leftBeforeRegistering(r placement.RegionID) {
	if r != "" {
		c.leftUnregistered = Remember(c.leftUnregistered, r, endedRegions)
	}
}

// registerAck is the acknowledgement of a registration, naming this incarnation.
func (c *Coordinator) registerAck() RegisterAck {
	return RegisterAck{Epoch: c.cfg.HandOffEpoch}
}

// shutdownAck is the answer to a leaving region that hosts nothing here and will be
// given nothing, naming this incarnation.
func (c *Coordinator) shutdownAck() GracefulShutdownAck {
	return GracefulShutdownAck{Epoch: c.cfg.HandOffEpoch}
}

// resendBeginHandOffs sends BeginHandOff again, right after its RegisterAck, to a
// region or proxy that registers while hand-offs wait for its acknowledgement. A
// Coordinator that took over (it moved, or its node crashed) starts hand-offs with
// the regions of its stored state before they have registered with it; a region
// answers a BeginHandOff to the coordinator it is registered with, so its answer to
// one that came first went to the previous coordinator, or nowhere, and the hand-off
// would wait for its timeout. (A second BeginHandOff for the same hand-off changes
// nothing at the region but its answer, which this coordinator counts once.)
func (c *Coordinator) resendBeginHandOffs(to placement.RegionID) {
	for _, s := range slices.Sorted(maps.Keys(c.workers)) {
		if w := c.workers[s]; !w.done && !w.handOffSent && w.remaining[to] {
			c.send(to, BeginHandOff{Shard: s, ID: w.id})
		}
	}
}
