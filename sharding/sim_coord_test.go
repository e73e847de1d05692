package sharding

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/shardcore"
)

// The coordinator moving and crashing in the simulation (sim_test.go). The coordinator
// is a cluster singleton (coordinator_singleton.go): it runs on one node, and when it
// stops a new incarnation starts from the stored state (CoordState, as written through
// its store), on another node or, restarted by its backoff supervisor, on the same one.
// Each incarnation is a coordinator core of its own; nodes are numbered (K1, K2, ...)
// and are not the regions' nodes (see "Not modelled" below). Now and then (coordFault)
// one of three things happens to the running incarnation:
//
//   - a crash of its node: the core is dropped at once. What is on its way to the node
//     (every channel into it) is lost as dead letters; what it sent keeps travelling. A
//     store that was pending (written, not acknowledged) was applied or not, at random:
//     the write may have reached a majority or not. The cluster then tells every
//     region that the node is gone (a cluster event: the oldest member changes), and
//     the next incarnation starts on the next node after a random delay;
//   - a stop of the coordinator actor alone (a store it could not write): the same,
//     except that the node stays, what travels to it reaches the next incarnation if
//     it has started by then (messages to the singleton's path; those to the stopped
//     incarnation's Ref are dead letters), no cluster event comes, and the next
//     incarnation starts on the same node;
//   - a graceful move (the singleton's hand-over when its member leaves): the regions
//     see the node Leaving (a candidate still, ahead of the next oldest), the
//     termination message reaches the coordinator behind what arrived before it (what
//     arrives after is a dead letter), a pending store completes (it is kept: either
//     the coordinator waits for it before it stops, as the event-sourced one does, or
//     it stops at once and the write completes without it, as in distributed data;
//     chosen at random), then the regions see the node removed and the next
//     incarnation starts on the next node.
//
// The regions learn of it as the region actor does: a region watches the incarnation
// whose RegisterAck it got (regionActor.registered) and is told of its end on the
// system lane (CoordinatorLost, and its coordinator Ref becomes zero: what the core
// sends to the coordinator until the next RegisterAck is not sent at all,
// ActToCoordinator); a cluster event that changes the oldest coordinator node is
// CoordinatorLost as well (regionActor.clusterChanged, which keeps the Ref). Which
// coordinator messages a region takes is regionActor.fromAnother's rule (sim.fromAnother). Register
// and the graceful-shutdown request go to the candidates (the singleton's path on the
// nodes of the region's view), and reach whichever incarnation runs there when they
// arrive; everything else goes to the incarnation of the region's Ref. Messages from
// a region to a node travel on one channel, path- or Ref-addressed, as on one
// connection.
//
// A new incarnation gets the members (the regions' nodes that have not terminated) and
// the stored state, as coordShell.init and InStateLoaded; its single-shot timers fire
// when the simulated clock reaches them (coordClock: the state-init delay during the
// run; the hand-off timeout and HostShard resends once draining moves the clock on).
//
// Not modelled: the coordinator's node is not a region's node (in a cluster it runs a
// region of the type too, and a crash of that node loses what its region held: a
// documented loss the simulation does not cover); the remember-entities read of the
// coordinator (InRememberedShards); the removal margin and AddressTerminated.
//
// What it found, fixed: a new coordinator's hand-offs waited for their timeout, since
// regions answered BeginHandOff to the coordinator they were registered with
// (coordinator.resendBeginHandOffs); a coordinator re-homed a shard that a region was
// starting again on its own HostShard, and the shard ran in two regions (seed 185;
// coordinator.shardStopped); a region acted on a previous coordinator's ShardHomes
// that arrived after it had registered with the next one (seed 125;
// regionActor.fromAnother, which this simulation mirrors in applyCoord); a coordinator
// counted a region's relayed BeginHandOffAck of an earlier BeginHandOff for the same
// shard as the answer to its current one, sent HandOff before the region's forwards
// reached the old home, and the old home left with one of them on its way, lost (seed
// 1882; hand-offs now have an identity that the acknowledgement echoes,
// handOffWorker.id, from a random epoch per incarnation); a region answered the same
// BeginHandOff, asked again when it registered, straight to the coordinator, ahead of
// its first answer relayed through the old home behind its forwards, and the old home
// left with one of them on its way, lost (seed 2481; the region now answers it
// through the same home, RegionCore.ackedVia). Order is
// checked only without coordinator faults: it is promised only while the coordinator
// does not move during a hand-off.
//
// Found when 5,000 seeds, then 20,000, ran (2026-11-29), fixed: a region took a late
// RegisterAck of a coordinator that had stopped, dropped the running one's messages,
// and relayed two other regions' BeginHandOffAcks to the stopped one, where they were
// lost; the running one, with which those regions had registered already, never
// asked them again, and its hand-off timed out (seeds 610, 874 of the simulation
// before the regions' timers fired). An unregistered region now drops a RegisterAck
// of a coordinator it was told the end of, or from a node no longer in its view
// (regionActor.fromAnother, mirrored in sim.fromAnother), which still tells its core
// that a coordinator knows it (RegionCore.StaleRegisterAck); and it passes the acks
// it relayed during the last hand-off timeout on again whenever it registers
// (RegionCore.RelayAck). A region that had a predecessor's hand-over already took the
// same BeginHandOff again (asked again on registration, on another connection than
// the hand-over) as the start of a new hand-off, forgot the hand-over, and waited for
// it again until the hand-off timeout (seeds 599, 707, 1103 before; now the same
// hand-off ID keeps it, RegionCore.begun). A region answered another coordinator's
// BeginHandOff straight while what it had forwarded to the old home (on a late
// ShardHome) was still on its way, and the old home left before it arrived (seed
// 11318; it now answers through the same home until it learns a new one, and answers
// the coordinator itself when that home terminates, seed 9419).
//
// CI runs seeds 0 to 199. All of 0 to 39,999 pass (2026-11-29: no hand-off time-out,
// no hand-over wait that times out, no stall, no loss, no two incarnations at once;
// seeds 20,000 to 39,999 found three losses of leaving regions, see
// sim_leave_test.go):
//
//	nice -n 10 go test ./sharding -run TestSimulation -sharding.simseeds=40000
//
// A region waits for a predecessor's hand-over at most the hand-off timeout
// (TimerHandOverWait, which the simulation fires, and counts as a failure). It can
// still need it in one case these seeds did not meet: the coordinator crashes after
// it has named a region A as the next home, with B's hand-over to come, and before B
// learns to send it to A (HandOverTo: successors are not stored); B then sends it
// to whatever home the next coordinator names, and if that is no longer A (A was
// handed off meanwhile, owing B's messages on), A waits the hand-off timeout and then
// passes on what it holds, after B's.

// simCoord is one incarnation of the coordinator.
type simCoord struct {
	gen      int
	node     int
	core     *shardcore.Coordinator
	store    shardcore.CoordEvent // the pending store, nil when none
	stopping bool                 // its termination message came while a store was pending: it stops once that is done
	gone     bool
	watches  map[RegionID]bool                // regions it watches and has not been told the end of
	timers   map[shardcore.TimerKey]time.Time // single-shot timers running, by when they fire
}

func (c *simCoord) name() string { return fmt.Sprintf("C%d", c.gen) }

// live reports whether c takes input.
func (c *simCoord) live() bool { return c != nil && !c.gone && !c.stopping }

// simView is a region's view of the coordinator's nodes (memberView.oldest and
// coordinatorNodes).
type simView struct {
	oldest int
	cands  []int
}

// simCoords is the simulation's state and counts of the coordinator's incarnations.
type simCoords struct {
	stored   *shardcore.CoordState // the stored state
	view     simView               // the cluster's view, which the regions learn
	nextNode int
	gen      int
	startAt  int // the step at which the next incarnation starts (while none runs)
	startOn  int // and its node
	old      []*simCoord

	crashes, restarts, moves int
	storesLost, storesKept   int // pending stores at a crash or stop: not applied, applied
	deadLetters              int // messages that reached a coordinator node where none ran
	unsent                   int // ActToCoordinator with the zero Ref: not sent
	staleAcks                int // RegisterAcks an unregistered region dropped (fromAnother)
}

// addCounts adds o's counts to c's.
func (c *simCoords) addCounts(o simCoords) {
	c.crashes += o.crashes
	c.restarts += o.restarts
	c.moves += o.moves
	c.storesLost += o.storesLost
	c.storesKept += o.storesKept
	c.deadLetters += o.deadLetters
	c.unsent += o.unsent
	c.staleAcks += o.staleAcks
}

func nodeName(n int) string { return fmt.Sprintf("K%d", n) }

func (s *sim) newRegion(id RegionID) *simRegion {
	r := newSimRegion(id)
	r.oldest, r.cands = s.cs.view.oldest, slices.Clone(s.cs.view.cands)
	if s.fast != nil {
		s.fastRegion(r)
	}
	return r
}

// startCoord starts the next incarnation on node n, from the stored state.
func (s *sim) startCoord(n int) {
	s.cs.gen++
	c := &simCoord{
		gen: s.cs.gen, node: n,
		core: shardcore.NewCoordinator(shardcore.CoordSettings{RememberEntities: s.shardCfg.RememberEntities, HandOffEpoch: uint64(s.cs.gen) << 32},
			randomStrategy{rng: s.rng}),
		watches: map[RegionID]bool{},
		timers:  map[shardcore.TimerKey]time.Time{},
	}
	s.coord = c
	s.cs.startAt = -1
	var members []NodeInfo
	for i, x := range s.regions {
		if !x.gone {
			members = append(members, testNode(i+1))
		}
	}
	if len(s.regions) == 0 {
		members = testNodes(3)
	}
	s.note(func() string { return fmt.Sprintf("%s starts on %s", c.name(), nodeName(n)) })
	s.applyCoord(c, c.core.Step(shardcore.InMembers{Members: members}))
	s.applyCoord(c, c.core.Step(shardcore.InStateLoaded{State: s.cs.stored.Clone()}))
}

// coordClock fires the running coordinator's single-shot timers that are due, and
// starts the next incarnation when its time has come.
func (s *sim) coordClock() {
	if c := s.coord; (c == nil || c.gone) && s.cs.startAt >= 0 && s.steps >= s.cs.startAt {
		s.startCoord(s.cs.startOn)
	}
	c := s.coord
	if !c.live() {
		return
	}
	keys := slices.SortedFunc(maps.Keys(c.timers), func(a, b shardcore.TimerKey) int { return c.timers[a].Compare(c.timers[b]) })
	for _, k := range keys {
		if at, ok := c.timers[k]; ok && !at.After(s.now) && c.live() {
			delete(c.timers, k)
			s.applyCoord(c, c.core.Step(shardcore.InTimer{Key: k}))
		}
	}
}

// coordTimers records c's timer operations (the periodic rebalance tick fires at
// random steps, see step).
func (s *sim) coordTimers(c *simCoord, ops []shardcore.TimerOp) {
	for _, op := range ops {
		switch {
		case op.Cancel:
			delete(c.timers, op.Key)
		case !op.Periodic:
			c.timers[op.Key] = s.now.Add(op.After)
		}
	}
}

// CoordStore writes c's state change; its result comes back on a channel of its own.
func (s *sim) coordStore(c *simCoord, st *shardcore.CoordStore) {
	if c.store != nil {
		s.fail("two coordinator stores")
	}
	c.store = st.Event
	s.send("store", c.name(), func() {
		if c.gone {
			return // decided when it stopped
		}
		s.storeApplied(c)
		s.applyCoord(c, c.core.Step(shardcore.InStoreDone{}))
		if c.stopping && c.store == nil {
			s.coordStopped(c)
		}
	})
}

// storeApplied applies c's pending store to the stored state.
func (s *sim) storeApplied(c *simCoord) {
	if err := s.cs.stored.Apply(c.store); err != nil {
		s.fail("%s's store %T%+v does not apply to the stored state: %v", c.name(), c.store, c.store, err)
	}
	c.store = nil
}

// toCoordRef sends msg from region r to the incarnation it registered with, as the
// region actor sends ActToCoordinator: not at all when its Ref is zero.
func (s *sim) toCoordRef(r *simRegion, msg any) {
	if r.coordRef == 0 {
		s.cs.unsent++
		s.note(func() string { return fmt.Sprintf("%s: %T%+v not sent (no coordinator)", r.id, msg, msg) })
		return
	}
	c := s.coordGen(r.coordRef)
	s.send(string(r.id), nodeName(c.node), func() {
		s.atCoord(c.node, c, r.id, msg)
	})
}

// toCandidates sends msg from region r to the singleton's path on each node of its
// view.
func (s *sim) toCandidates(r *simRegion, msg any) {
	for _, n := range r.cands {
		s.send(string(r.id), nodeName(n), func() {
			s.atCoord(n, nil, r.id, msg)
		})
	}
}

// atCoord is the arrival at node n of a region's message to incarnation want (nil: to
// whichever runs on n).
func (s *sim) atCoord(n int, want *simCoord, from RegionID, msg any) {
	c := s.coord
	if !c.live() || c.node != n || want != nil && want != c {
		s.cs.deadLetters++
		s.note(func() string { return fmt.Sprintf("%s <- %s %T%+v: dead letter", nodeName(n), from, msg, msg) })
		return
	}
	s.note(func() string { return fmt.Sprintf("%s <- %s %T%+v", c.name(), from, msg, msg) })
	s.applyCoord(c, c.core.Step(shardcore.InRegionMsg{From: from, Msg: msg, Status: cluster.Up}))
}

func (s *sim) coordGen(gen int) *simCoord {
	if c := s.coord; c != nil && c.gen == gen {
		return c
	}
	for _, c := range s.cs.old {
		if c.gen == gen {
			return c
		}
	}
	s.fail("unknown coordinator incarnation %d", gen)
	return nil
}

// fromAnother reports whether region r drops msg from coordinator c, as
// regionActor.fromAnother: registered, what is not from the coordinator it registered
// with; not registered, a RegisterAck of a coordinator it was told the end of or from
// a node that is no longer in its view.
func (s *sim) fromAnother(r *simRegion, c *simCoord, msg any) bool {
	if !isCoordinatorMsg(msg) {
		return false
	}
	if r.core.Registered() {
		return r.coordRef != c.gen
	}
	_, ack := msg.(shardcore.RegisterAck)
	return ack && (r.goneCoords[c.gen] || !slices.Contains(r.cands, c.node))
}

// registeredWith: region r got a RegisterAck from c (regionActor.registered): it
// watches c instead of the coordinator it watched before.
func (s *sim) registeredWith(r *simRegion, c *simCoord) {
	if r.coordRef == c.gen {
		return
	}
	r.coordRef = c.gen
	if c.gone {
		s.coordEndNotice(r, c) // watching an actor that has stopped
	}
}

// coordEndNotice tells region r, on the system lane, that c has terminated.
func (s *sim) coordEndNotice(r *simRegion, c *simCoord) {
	s.send(nodeName(c.node)+" (system)", string(r.id), func() {
		if r.gone || r.coordRef != c.gen {
			return // unwatched
		}
		r.coordRef = 0
		r.goneCoords[c.gen] = true
		s.note(func() string { return fmt.Sprintf("%s <- Terminated(%s)", r.id, c.name()) })
		s.atRegion(r, "coordinator Terminated", nil, r.core.CoordinatorLost)
	})
}

// clusterEvent changes the cluster's view of the coordinator's nodes; each region
// learns it in order, on a channel of its own (regionActor.clusterChanged).
func (s *sim) clusterEvent(v simView) {
	s.cs.view = v
	for _, r := range s.liveRegions() {
		s.send("cluster", string(r.id), func() {
			if r.gone {
				return
			}
			r.cands = slices.Clone(v.cands)
			if v.oldest == r.oldest {
				return
			}
			r.oldest = v.oldest
			s.note(func() string { return fmt.Sprintf("%s <- cluster: oldest %s", r.id, nodeName(v.oldest)) })
			s.atRegion(r, "cluster event", nil, r.core.CoordinatorLost)
		})
	}
}

// coordFault crashes, stops or moves the running coordinator.
func (s *sim) coordFault() {
	c := s.coord
	if !c.live() {
		return
	}
	switch k := s.rng.IntN(3); k {
	case 0, 1:
		node := k == 0
		if node {
			s.cs.crashes++
		} else {
			s.cs.restarts++
		}
		s.note(func() string {
			if node {
				return fmt.Sprintf("%s crashes with its node %s", c.name(), nodeName(c.node))
			}
			return fmt.Sprintf("%s stops", c.name())
		})
		if c.store != nil {
			if s.rng.IntN(2) == 0 {
				s.cs.storesKept++
				s.storeApplied(c)
			} else {
				s.cs.storesLost++
				c.store = nil
			}
		}
		s.coordEnd(c)
		next := c.node
		if node {
			s.cs.nextNode++
			next = s.cs.nextNode
			s.clusterEvent(simView{oldest: next, cands: []int{next}})
		}
		s.cs.startOn, s.cs.startAt = next, s.steps+s.rng.IntN(100)
	default:
		s.cs.moves++
		s.cs.nextNode++
		next := s.cs.nextNode
		s.note(func() string {
			return fmt.Sprintf("%s moves from %s to %s", c.name(), nodeName(c.node), nodeName(next))
		})
		s.clusterEvent(simView{oldest: c.node, cands: []int{c.node, next}}) // Leaving
		s.cs.startOn, s.cs.startAt = next, -1
		s.send("singleton", c.name(), func() {
			if c.store != nil && s.rng.IntN(2) == 0 {
				c.stopping = true // it stops once the store is done
				return
			}
			s.coordStopped(c)
		})
	}
}

// coordStopped ends c after its graceful hand-over: a store still pending completes
// without it; the next incarnation starts once the regions may see the node removed.
func (s *sim) coordStopped(c *simCoord) {
	if c.store != nil {
		s.cs.storesKept++
		s.storeApplied(c)
	}
	s.note(func() string { return fmt.Sprintf("%s stopped (hand-over)", c.name()) })
	s.coordEnd(c)
	next := s.cs.startOn
	s.clusterEvent(simView{oldest: next, cands: []int{next}}) // removed
	s.cs.startAt = s.steps + s.rng.IntN(20)
}

// coordEnd drops incarnation c: the regions that watch it are told.
func (s *sim) coordEnd(c *simCoord) {
	c.gone, c.stopping = true, false
	s.cs.old = append(s.cs.old, c)
	for _, r := range s.liveRegions() {
		if r.coordRef == c.gen {
			s.coordEndNotice(r, c)
		}
	}
}
