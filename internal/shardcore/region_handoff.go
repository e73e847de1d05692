package shardcore

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// How a region loses no message when a shard moves (Akka's region drops what it
// buffered for the shard since BeginHandOff; Troupe delivers it, in each sender's
// order, at the shard's next home):
//
//  1. BeginHandOff: a region forgets the shard's home and buffers later messages. If it
//     had been forwarding the shard's messages to another region, it sends its
//     acknowledgement through that region, which passes it to the coordinator: since
//     messages between two regions arrive in order, the coordinator learns of the ack
//     only after every message forwarded before it reached the old home.
//  2. HandOff (to the old home O, once all acknowledged): O's shard stops its entities
//     and returns what it held undelivered (ShardTerminated's leftovers). O puts that
//     before its own buffer, and answers ShardStopped with Pending set when it holds
//     anything: it then owes the next home a hand-over.
//  3. The coordinator allocates the next home H and names O in HostShard.Predecessor.
//     H buffers every message for the shard until O's hand-over ends; O sends its
//     messages as a hand-over once it learns H (ActHandOver, then a done marker).
//     Handed-over messages go before anything H buffered itself.
//
// So a sender's messages, which all pass through its own region, reach H in order:
// those its region forwarded before the hand-off travel with O's hand-over, and those
// buffered after it follow. The guarantee assumes message order between any two
// regions, a hand-off that does not time out, and a coordinator that does not move
// during the hand-off; otherwise delivery degrades to Akka's best effort, still
// without dropping what the region buffered.

// shardHome records where s lives and delivers what waits for it.
func (r *RegionCore[M]) shardHome(s placement.ShardID, home placement.RegionID) {
	delete(r.ackedVia, s) // the hand-off is over: the shard has a home again
	if cur, ok := r.homes[s]; ok && cur == r.self && home != r.self {
		r.problem(fmt.Errorf("%w: shard %q hosted by %q, coordinator says %q", ErrShardHomeConflict, s, r.self, home))
		return
	}
	if home == r.self {
		if r.cfg.Proxy {
			r.problem(fmt.Errorf("%w: shard %q (ShardHome)", errProxyHost, s))
			return
		}
		if ls := r.local[s]; ls != nil && ls.handingOff {
			// The previous shard actor still stops; its ShardStopped will tell the
			// Coordinator, which then places the shard again.
			return
		}
		if r.shuttingDown && r.local[s] == nil {
			// A leaving region starts no shard. The coordinator gave it s before it
			// learned that the region leaves, and hands s off with its other shards
			// (see hostShard).
			return
		}
		r.homes[s] = r.self
		if r.local[s] == nil {
			r.startShard(s)
		}
		r.flush(s)
		return
	}
	r.homes[s] = home
	if !r.watched[home] {
		r.watched[home] = true
		r.act(RegionAction[M]{Kind: ActWatch, To: home})
	}
	r.flush(s)
}

// hostShard makes this region the home of s, started at once; with a predecessor, the
// shard gets the predecessor's hand-over before anything else.
func (r *RegionCore[M]) hostShard(s placement.ShardID, pred placement.RegionID) {
	if r.cfg.Proxy {
		r.problem(fmt.Errorf("%w: shard %q (HostShard)", errProxyHost, s))
		return
	}
	if r.shuttingDown {
		// The coordinator missed that this region leaves: remind it, and start no
		// shard; the coordinator hands s off with the region's other shards. The
		// predecessor, told that this region is the next home, sends its hand-over
		// here all the same: wait for it, so that it goes ahead of what this region
		// holds to the home after this one (a HandOff meanwhile answers Pending, and
		// the region does not stop before).
		r.act(RegionAction[M]{Kind: ActToCandidates, Proto: GracefulShutdownReq{}})
		r.awaitPredecessor(s, pred)
		return
	}
	r.homes[s] = r.self
	delete(r.owes, s) // what this region holds goes to its own shard
	delete(r.target, s)
	r.awaitPredecessor(s, pred)
	if ls := r.local[s]; ls != nil && ls.handingOff {
		// Start (and acknowledge) once the previous shard actor has stopped; the
		// Coordinator resends HostShard if that never happens.
		r.pendingHost[s] = true
		return
	}
	if r.local[s] == nil {
		r.startShard(s)
	}
	r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: ShardStarted{Shard: s}})
	r.flush(s)
}

// awaitPredecessor makes s wait for pred's hand-over, unless it has ended already. It
// watches pred: the wait ends when pred terminates (RegionTerminated), which a leaving
// region does only once its hand-over has been taken, and a crashed one will send
// none; or else after the hand-off timeout (TimerHandOverWait).
func (r *RegionCore[M]) awaitPredecessor(s placement.ShardID, pred placement.RegionID) {
	if pred != "" && pred != r.self && r.waiting[s] == "" && !r.overDone[s][pred] {
		r.waiting[s] = pred
		r.timers.start(&r.out.Timers, TimerKey{Kind: TimerHandOverWait, Shard: s}, r.cfg.HandOffTimeout, false)
		if !r.watched[pred] {
			r.watched[pred] = true
			r.act(RegionAction[M]{Kind: ActWatch, To: pred})
		}
	}
}

// ackRoute is the home a BeginHandOffAck went through, and the hand-off it answered.
type ackRoute struct {
	via placement.RegionID
	id  uint64
}

// beginHandOff forgets where s lives and acknowledges, through the old home when this
// region forwarded to it (see the overview above).
//
// The same BeginHandOff again (id not 0 and the last one seen for s: a coordinator
// asks again when the region registers) keeps the hand-overs that have ended: it may
// come after the old home's hand-over did (another connection), and the HostShard
// that follows it would then wait for a hand-over that has come already.
func (r *RegionCore[M]) beginHandOff(s placement.ShardID, id uint64) {
	delete(r.pendingHost, s)
	if id == 0 || r.begun[s] != id {
		delete(r.overDone, s) // a new hand-off: its predecessor hands over again
		r.begun[s] = id
	}
	ack := BeginHandOffAck{Shard: s, Region: r.self, ID: id}
	home, known := r.homes[s]
	delete(r.homes, s)
	if route, ok := r.ackedVia[s]; !known && ok {
		home, known = route.via, true // what it forwarded went there, and may be on its way still
	}
	if known && home != r.self {
		r.ackedVia[s] = ackRoute{via: home, id: id}
		r.act(RegionAction[M]{Kind: ActToRegion, To: home, Proto: ack})
		return
	}
	delete(r.ackedVia, s) // it was the home itself since: nothing it forwarded is on its way
	r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: ack})
}

// HandOff stops the local shard, or answers at once when there is none.
func (r *RegionCore[M]) handOff(s placement.ShardID) {
	if ls := r.local[s]; ls != nil {
		if !ls.handingOff {
			ls.handingOff = true
			r.act(RegionAction[M]{Kind: ActHandOffShard, Shard: s})
		}
		return
	}
	r.stoppedAfterHandOff(s)
}

// ShardTerminated: the local shard actor of s stopped, returning leftovers (messages it
// held undelivered, in the order it got them).
func (r *RegionCore[M]) ShardTerminated(s placement.ShardID, leftovers []M) RegionDecisions[M] {
	ls := r.local[s]
	if ls == nil {
		r.problem(fmt.Errorf("sharding: region: unknown shard %q terminated", s))
		for _, m := range leftovers {
			r.route(s, m)
		}
		return r.done()
	}
	delete(r.local, s)
	r.prependHandOver(s, leftovers)
	switch {
	case ls.handingOff && r.pendingHost[s]:
		delete(r.pendingHost, s)
		r.startShard(s)
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: ShardStarted{Shard: s}})
	case ls.handingOff:
		r.stoppedAfterHandOff(s)
	case r.homes[s] == r.self && !r.shuttingDown:
		// Stopped on its own (a failure, a lost lease): start again when needed.
		if r.buffers[s] != nil {
			r.startShard(s)
		} else if r.cfg.RememberEntities {
			r.timers.start(&r.out.Timers, TimerKey{Kind: TimerRestartShard, Shard: s}, r.cfg.ShardFailureBackoff, false)
		}
	default:
		if r.buffers[s] != nil {
			r.requestHomeIfUnknown(s)
		}
	}
	r.tryCompleteShutdown()
	return r.done()
}

// stoppedAfterHandOff answers HandOff: ShardStopped, with Pending when this region holds
// messages for the shard (or awaits some from a predecessor), which it then owes the
// next home.
func (r *RegionCore[M]) stoppedAfterHandOff(s placement.ShardID) {
	pending := r.buffers[s] != nil || r.waiting[s] != ""
	if pending {
		r.owes[s] = true
	}
	if r.registered {
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: ShardStopped{Shard: s, Pending: pending}})
	} else {
		r.unsent[s] = true
	}
	if pending {
		r.requestHomeIfUnknown(s)
	}
}

// prependHandOver puts msgs, in order, before everything buffered for s.
func (r *RegionCore[M]) prependHandOver(s placement.ShardID, msgs []M) {
	if len(msgs) == 0 {
		return
	}
	b := r.buffers[s]
	if b == nil {
		b = &shardBuffer[M]{}
		r.buffers[s] = b
	}
	b.msgs = append(append(make([]M, 0, len(msgs)+len(b.msgs)), msgs...), b.msgs...)
	b.handOver += len(msgs)
	r.total += len(msgs)
}

// relayKey names a relayed BeginHandOffAck: the shard and the region that sent it.
type relayKey struct {
	shard  placement.ShardID
	region placement.RegionID
}

// relayedAck is a relayed BeginHandOffAck and the retry tick at which it came.
type relayedAck struct {
	ack  BeginHandOffAck
	tick uint64
}

// RelayAck passes on a BeginHandOffAck that another region sent through this one, to
// the coordinator this region registered with, or once it has registered (the ack
// may overtake the RegisterAck).
//
// It keeps the ack for a while (relayed) and passes it on again whenever it
// registers: the coordinator it passed it to may have stopped without this region
// knowing yet (it learns that on another lane; or it took a stopped coordinator's
// late RegisterAck), and the acknowledging region, registered with the next
// Coordinator already, is not asked again: that coordinator's hand-off would wait
// for its timeout. The coordinator counts an ack once, and only for the hand-off
// whose ID it echoes. An ack without an ID (a coordinator without an epoch) is passed
// on once: it could be counted for a later hand-off of the shard.
func (r *RegionCore[M]) RelayAck(m BeginHandOffAck) RegionDecisions[M] {
	if m.ID != 0 || !r.registered {
		r.relayed[relayKey{shard: m.Shard, region: m.Region}] = relayedAck{ack: m, tick: r.ticks}
	}
	if r.registered {
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: m})
	}
	return r.done()
}

// passRelayed passes on the relayed acks that are kept, once registered.
func (r *RegionCore[M]) passRelayed() {
	keys := slices.SortedFunc(maps.Keys(r.relayed), func(a, b relayKey) int {
		return cmp.Or(cmp.Compare(a.shard, b.shard), cmp.Compare(a.region, b.region))
	})
	for _, k := range keys {
		a := r.relayed[k]
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: a.ack})
		if a.ack.ID == 0 {
			delete(r.relayed, k)
		}
	}
}

// forgetRelayed forgets the relayed acks kept for longer than the hand-off timeout,
// counted in retry ticks: their hand-off has ended one way or the other.
func (r *RegionCore[M]) forgetRelayed() {
	keep := uint64(r.cfg.HandOffTimeout/r.cfg.RetryInterval) + 1
	for k, a := range r.relayed {
		if r.ticks-a.tick > keep {
			delete(r.relayed, k)
		}
	}
}
