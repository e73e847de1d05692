package sharding

import (
	"fmt"
	"github.com/troupe-go/troupe/internal/shardcore"
	"maps"
	"slices"
)

// Graceful leaves in the simulation (sim_test.go). Now and then, while three regions
// run and none is leaving, one begins a graceful shutdown as the region actor does on
// GracefulShutdown (RegionCore.GracefulShutdown): it asks the coordinator to hand its
// shards off, hands over what it buffered to each shard's next home, and terminates
// when its core says stop (d.stop). Later a new region, on a node of its own, joins, so
// that a run sees several leaves; at least two regions always stay.
//
// A region that terminates does what the region actor does (regionActor.stopped): it
// sends RegionStopped to the coordinator it registered with, on the user lane (the
// channel from the region to the coordinator, behind everything it sent before). Each
// actor that watches it is told of its end on a channel of its own, separate from the
// user-message channels: remote delivers Terminated on its system lane, another
// connection than the user messages', and locally a system message goes ahead of the
// mailbox. So the notice may overtake what the region sent before it stopped. The
// watchers are the coordinator (it watches every region it registered: CoordDecisions'
// watch) and the regions that watch it (ActWatch: those that learned it as a home);
// watching a region that has terminated yields the notice at once, as in actor.Watch.
//
// Once terminated, a region's core is never stepped again: whatever reaches it is a
// dead letter, as for any stopped actor (for a region on another node: remote's dead
// letters for the batch, see the package doc). A dead letter that carries an entity's
// message (a forward, a hand-over, a tell) fails the run as a lost message; a protocol
// message is only noted (the coordinator's messages, acknowledgements), and a lost one
// that matters shows up as a hand-off that never ends (drain).
//
// A sender's messages to its own region travel on a channel while the region stays;
// once the region leaves they are taken at once, and a region begins to leave only when
// none of its senders' messages is on the way to it: a message told to a region that
// stops before it reads it is a documented loss (a dead letter), not one the protocol
// prevents. When its region terminates, a sender goes on under a new name at a region
// that stays: its earlier messages may still be on their way from the old region
// (forwards), and the new region's would legitimately overtake them.
//
// What this exercises, by the protections it depends on:
//
//   - f7f6117 (a leaving region stops only after the next home acknowledged each
//     hand-over it sent, HandOverAck, or terminated): a leaving region hands over
//     what it buffered for a shard to the shard's next home, which waits for it
//     (HostShard's Predecessor) and buffers newer messages meanwhile. The region's
//     termination notice, on its own channel, could reach the next home before the
//     hand-over; RegionTerminated ends the wait and the newer messages go first. With the
//     protection disabled (tryCompleteShutdown not waiting for handedOver), seeds 12,
//     91, 117, 185 and 195 of the 200 failed with "received out of order" when this was
//     written (seed 12: R1 hands s0 over to R3 and terminates; R3 is told before the
//     hand-over arrives and delivers X30:13 before X30:6).
//   - 1dbae2e (a leaving region stops only after the coordinator's
//     GracefulShutdownAck): a region asks to leave while the coordinator gives it a
//     shard (a rebalance, or a re-home, crossing its request), and other regions forward
//     messages for that shard to it. A region that stopped as soon as it hosted nothing
//     itself lost them. With the protection disabled (tryCompleteShutdown not waiting
//     for shutdownAcked), seeds 91, 131 and 154 failed with a lost message, a dead
//     letter at a region that has terminated, when this was written (seed 154: R2,
//     hosting nothing, leaves while the coordinator gives it s0; R1 forwards to it).
//   - Found by these leaves and fixed with them: a region that left before its
//     RegisterAck stopped at once while its Register was on its way, and what other
//     regions then forwarded to it was lost (seeds 8, 63 and 186; it now waits for the
//     coordinator's word, RegionCore.registerSent); a leaving region refused a
//     HostShard but hosted the shard on the ShardHome answering its own request,
//     without the predecessor's hand-over first (seed 59), and could stop before that
//     hand-over reached it (it now awaits the predecessor without hosting the shard,
//     hostShard).
//   - Found once the simulation fired the regions' registration backoff (more
//     Registers on their way), fixed: a leaving region's Register that reached the
//     coordinator after the region's termination notice registered the region again,
//     and the coordinator gave it shards: what other regions forwarded to it was lost
//     (seeds 5152 and 7048 of 20,000; the coordinator now ignores a Register of a
//     region it has seen end, coordinator.ended). Before those timers fired it was
//     seeds 6499 and 18942 (and 16098 of the coordinator faults).
//   - Found by seeds 20,000 to 39,999 of the coordinator faults, fixed: a leaving
//     region stopped on a GracefulShutdownAck that did not cover a later
//     registration. In seeds 22834 and 30126 a joined region that had not registered
//     yet asked to leave and then sent Register again (it goes on registering while
//     it leaves); the coordinator answered the request "not registered here", then
//     registered the region on the Register behind it and gave it a shard, and the
//     region had stopped on the answer (a coordinator now registers a region it
//     answered so only as leaving, coordinator.leftUnregistered). In seed 39399 a
//     region registered with a coordinator that crashed took that coordinator's late
//     GracefulShutdownAck while it registered again, and stopped while the next
//     coordinator had registered it and given it a shard (the acknowledgement now
//     carries the coordinator incarnation's epoch, as the RegisterAck does, and a
//     region takes, registered, only its coordinator's, and not that of one it lost:
//     RegionCore.shutdownAck). All of seeds 0 to 39,999 of both simulations pass since
//     (2026-11-29).
//
// Not closed, and documented as a loss (docs/sharding.md, "What can be lost"): a
// region that never registered stops on one coordinator incarnation's word while a
// Register of its own is still on its way to the next, which registers it; these
// seeds have not met it.

// simLeaves is the simulation's state and counts of leaves and joins.
type simLeaves struct {
	started     int // graceful shutdowns begun
	terminated  int // regions that terminated
	joined      int // regions that joined
	handOvers   int // hand-overs sent by a region while it was leaving
	overtaken   int // termination notices that overtook messages from the region to the watcher
	deadLetters int // protocol messages that reached a region after it terminated
	nextSender  int
}

// addCounts adds o's counts to l's.
func (l *simLeaves) addCounts(o simLeaves) {
	l.started += o.started
	l.terminated += o.terminated
	l.joined += o.joined
	l.handOvers += o.handOvers
	l.overtaken += o.overtaken
	l.deadLetters += o.deadLetters
}

// liveRegions returns the regions that have not terminated.
func (s *sim) liveRegions() []*simRegion {
	var out []*simRegion
	for _, r := range s.regions {
		if !r.gone {
			out = append(out, r)
		}
	}
	return out
}

// atRegion is the arrival of a message at region r: f steps r's core. At a region that
// has terminated the message is a dead letter (f does not run): the run fails if it
// carries entity messages (carried), which would be lost.
func (s *sim) atRegion(r *simRegion, what string, carried []simMsg, f func() shardcore.RegionDecisions[simMsg]) {
	if r.gone {
		if len(carried) > 0 {
			s.fail("%s reached region %s after it terminated: dead letter, %v lost", what, r.id, carried)
		}
		s.leaves.deadLetters++
		s.note(func() string { return fmt.Sprintf("%s: dead letter (%s, terminated)", what, r.id) })
		return
	}
	s.applyRegion(r, f())
}

// leaveOrJoin begins a region's graceful shutdown while three regions run and none
// leaves, and lets a new region join while fewer than three run.
func (s *sim) leaveOrJoin() {
	live := s.liveRegions()
	if len(live) < 3 {
		s.join()
		return
	}
	var cands []*simRegion
	for _, r := range live {
		if r.leaving {
			return // one at a time: at least two regions stay
		}
		if !s.tellsOnTheWay(r) {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return
	}
	r := cands[s.rng.IntN(len(cands))]
	r.leaving = true
	s.leaves.started++
	s.note(func() string { return fmt.Sprintf("%s <- GracefulShutdown", r.id) })
	s.atRegion(r, "GracefulShutdown", nil, r.core.GracefulShutdown)
}

// tellsOnTheWay reports whether a message of one of r's senders is on its way to r.
func (s *sim) tellsOnTheWay(r *simRegion) bool {
	for x, at := range s.senderAt {
		// (An EntityRef sender's pending sends run on its channel to "send".)
		if at == r && (len(s.chans[chanKey{x, string(r.id)}]) > 0 || len(s.chans[chanKey{x, "send"}]) > 0) {
			return true
		}
	}
	return false
}

// join starts a region on a new node; the coordinator's view of the members gains it.
func (s *sim) join() {
	r := s.newRegion(reg(len(s.regions) + 1))
	s.regions = append(s.regions, r)
	s.leaves.joined++
	var members []NodeInfo
	for i, x := range s.regions {
		if !x.gone {
			members = append(members, testNode(i+1))
		}
	}
	s.note(func() string { return fmt.Sprintf("%s joins", r.id) })
	if c := s.coord; c.live() {
		s.applyCoord(c, c.core.Step(shardcore.InMembers{Members: members}))
	}
	s.atRegion(r, "start", nil, r.core.Start)
}

// terminate ends region r, whose core said stop: as the region actor's stopped, it
// tells the coordinator on the user lane; each watcher gets the notice on the system
// lane; its senders go on under new names at regions that stay.
func (s *sim) terminate(r *simRegion) {
	if !r.leaving {
		s.fail("region %s stopped, but it was not leaving", r.id)
	}
	for _, id := range slices.Sorted(maps.Keys(r.shards)) {
		if sh := r.shards[id]; !sh.done {
			s.fail("region %s stopped while its shard actor %s runs", r.id, sh.name)
		}
	}
	// What it holds would be lost with it. (Whether it waited for the acknowledgements
	// of its hand-overs is not checked here: the checks of the deliveries show it.)
	if c := r.core; c.Buffered() != 0 || c.Owed() != 0 {
		s.fail("region %s stopped holding %d messages: %v", r.id, c.Buffered(), c.Holding())
	}
	r.gone = true
	s.leaves.terminated++
	if s.fast != nil {
		s.fastRegionGone(r)
	}
	s.note(func() string { return fmt.Sprintf("%s terminates", r.id) })
	// As regionActor.stopped: to the coordinator it registered with, if any.
	s.toCoordRef(r, shardcore.RegionStopped{})
	if c := s.coord; c != nil && !c.gone && c.watches[r.id] {
		s.coordNotice(c, r.id)
	}
	for _, w := range s.liveRegions() {
		if w.watches[r.id] {
			s.regionNotice(w, r.id)
		}
	}
	var stay []*simRegion
	for _, x := range s.liveRegions() {
		if !x.leaving {
			stay = append(stay, x)
		}
	}
	for i, x := range s.senders {
		if s.senderAt[x] != r {
			continue
		}
		s.leaves.nextSender++
		y := fmt.Sprintf("Y%d", s.leaves.nextSender)
		s.senders[i] = y
		s.senderAt[y] = stay[s.rng.IntN(len(stay))]
		delete(s.senderAt, x)
		if s.fast != nil && s.fast.refSender[x] {
			s.fast.refSender[y] = true
		}
	}
}

// sysLane is the channel that carries region id's termination notices.
func sysLane(id RegionID) string { return string(id) + " (system)" }

// coordWatch: coordinator c watches region id.
func (s *sim) coordWatch(c *simCoord, id RegionID) {
	if c.watches[id] {
		return
	}
	c.watches[id] = true
	if s.region(id).gone {
		s.coordNotice(c, id)
	}
}

// coordNotice sends coordinator c the end of region id; it is lost if c has stopped.
func (s *sim) coordNotice(c *simCoord, id RegionID) {
	s.send(sysLane(id), c.name(), func() {
		if !c.live() || !c.watches[id] {
			return
		}
		delete(c.watches, id)
		s.note(func() string { return fmt.Sprintf("%s <- Terminated(%s)", c.name(), id) })
		s.applyCoord(c, c.core.Step(shardcore.InRegionTerminated{Region: id}))
	})
}

// regionWatch: region r watches region to.
func (s *sim) regionWatch(r *simRegion, to RegionID) {
	if r.watches[to] {
		return
	}
	r.watches[to] = true
	if s.region(to).gone {
		s.regionNotice(r, to)
	}
}

// regionNotice sends region w the end of region gone. It counts the notices that
// overtake a message from gone to w.
func (s *sim) regionNotice(w *simRegion, gone RegionID) {
	s.send(sysLane(gone), string(w.id), func() {
		if w.gone || !w.watches[gone] {
			return
		}
		delete(w.watches, gone)
		if len(s.chans[chanKey{string(gone), string(w.id)}]) > 0 {
			s.leaves.overtaken++
		}
		s.note(func() string { return fmt.Sprintf("%s <- Terminated(%s)", w.id, gone) })
		s.atRegion(w, "Terminated", nil, func() shardcore.RegionDecisions[simMsg] { return w.core.RegionTerminated(gone) })
	})
}
