package shardcore

import (
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// Coordinator defaults (Akka's).
const (
	DefaultHandOffTimeout    = 60 * time.Second
	DefaultShardStartTimeout = 10 * time.Second
	DefaultRebalanceInterval = 10 * time.Second
	defaultStateInitDelay    = 500 * time.Millisecond
	// shardHomesBatch and shardHomesMaxMsgs bound the homes sent to a region that
	// registers: 500 per message, 10 messages; it asks for the others when it needs them.
	shardHomesBatch   = 500
	shardHomesMaxMsgs = 10
)

// CoordSettings configures a coordinator core. Zero durations and counts mean the
// defaults.
type CoordSettings struct {
	HandOffTimeout    time.Duration // a hand-off gives up after this (60 s)
	ShardStartTimeout time.Duration // HostShard is resent after this (10 s)
	RebalanceInterval time.Duration // rebalance tick (10 s)
	StateInitDelay    time.Duration // after loading a state, wait this for dead regions to be reported (500 ms)
	MinMembers        int           // regions that must register before shards get homes (1)
	RemovalMargin     time.Duration // a removed node's regions are dropped this long after (0)
	RememberEntities  bool          // keep homeless shards and re-home them at once
	StoreState        bool          // store decisions carry the whole next state (ddata mode)
	// HandOffEpoch, when not 0, makes this incarnation name its hand-offs from it
	// (handOffWorker.id): a random number per incarnation, so that an acknowledgement
	// of another incarnation's BeginHandOff, or of an earlier hand-off of the same
	// shard, is not counted. Its RegisterAcks and GracefulShutdownAcks carry it too
	// (Epoch), so that a region tells this incarnation's acknowledgement from
	// another's.
	HandOffEpoch uint64
}

func (s CoordSettings) withDefaults() CoordSettings {
	if s.HandOffTimeout <= 0 {
		s.HandOffTimeout = DefaultHandOffTimeout
	}
	if s.ShardStartTimeout <= 0 {
		s.ShardStartTimeout = DefaultShardStartTimeout
	}
	if s.RebalanceInterval <= 0 {
		s.RebalanceInterval = DefaultRebalanceInterval
	}
	if s.StateInitDelay <= 0 {
		s.StateInitDelay = defaultStateInitDelay
	}
	if s.MinMembers <= 0 {
		s.MinMembers = 1
	}
	return s
}

// CoordInput is one input to the coordinator core.
type CoordInput interface{ isCoordInput() }

// InStateLoaded: the stored state was read (nil when none was stored). The core takes
// ownership of the state. Until it arrives, region messages are ignored (regions retry).
type InStateLoaded struct{ State *CoordState }

// InStoreDone: the store decision of the last step was written.
type InStoreDone struct{}

// InStoreFailed: it was not; the core asks to write it again.
type InStoreFailed struct{ Err error }

// InRegionMsg: a protocol message (msg*) from a region or proxy. Status and Local
// describe the sender's member when the message arrived: registration is accepted only
// from an Up member or from the coordinator's own node.
type InRegionMsg struct {
	From   placement.RegionID
	Msg    any
	Status member.MemberStatus
	Local  bool
}

// InRegionTerminated: the region or proxy actor is gone. NodeRemoved is true when it
// was inferred from its node's removal (actor.Terminated.AddressTerminated): the region
// is then dropped only after the removal margin.
type InRegionTerminated struct {
	Region      placement.RegionID
	NodeRemoved bool
}

// InMembers: the current cluster members (the ones relevant to this entity type), as
// allocation strategies see them. Replaces the previous view.
type InMembers struct{ Members []placement.NodeInfo }

// InTimer: a timer the core started fired.
type InTimer struct{ Key TimerKey }

// InRememberedShards: shard IDs read from the remember-entities store; those without a
// home get one at once.
type InRememberedShards struct{ Shards []placement.ShardID }

// InPrepareForShutdown: the whole cluster is shutting down; no new rebalance.
type InPrepareForShutdown struct{}

// inRebalanceDone is internal: a hand-off ended, successfully or not.
type inRebalanceDone struct {
	Shard placement.ShardID
	OK    bool
}

func (InStateLoaded) isCoordInput()        {}
func (InStoreDone) isCoordInput()          {}
func (InStoreFailed) isCoordInput()        {}
func (InRegionMsg) isCoordInput()          {}
func (InRegionTerminated) isCoordInput()   {}
func (InMembers) isCoordInput()            {}
func (InTimer) isCoordInput()              {}
func (InRememberedShards) isCoordInput()   {}
func (InPrepareForShutdown) isCoordInput() {}
func (inRebalanceDone) isCoordInput()      {}

// CoordDecisions is what one step asks the shell to do, in this order: store (if set),
// then sends in order, watches, timer operations in order; and log the problems.
type CoordDecisions struct {
	// Store, when set, must be written (the event as a journal entry, or state as the
	// whole register value when StoreState is on); the shell answers InStoreDone or
	// InStoreFailed. Until then the core holds back its other inputs (it queues them).
	Store *CoordStore
	// Sends are protocol messages for regions, proxies or StopShards requesters, sent
	// with the coordinator as sender, in this order.
	Sends []CoordSend
	// Watch lists regions and proxies to watch; their end comes back as
	// InRegionTerminated.
	Watch []placement.RegionID
	// Timers to start or cancel, in order.
	Timers []TimerOp
	// Problems to log (warnings; errors for ErrInvalidEvent and ErrCorruptState).
	Problems []error
}

// CoordSend is one message to send.
type CoordSend struct {
	To  placement.RegionID // the region, proxy or StopShards requester
	Msg any                // a protocol message
}

// CoordStore is one state change to write.
type CoordStore struct {
	Event CoordEvent  // the event to journal
	State *CoordState // the state after Event, when StoreState is on
}

type coordPhase uint8

const (
	phaseWaitingForState coordPhase = iota // nothing loaded yet
	phaseInitializing                      // loaded; waiting StateInitDelay for dead regions
	phaseActive
)

// Coordinator is the coordinator's protocol as a pure state machine (see step).
type Coordinator struct {
	cfg      CoordSettings
	strategy placement.AllocationStrategy
	phase    coordPhase
	state    *CoordState
	handOffs uint64 // hand-offs named so far (nextHandOffID)

	members     map[string]placement.NodeInfo // by node address
	memberList  []placement.NodeInfo
	haveMembers bool

	alive             map[placement.RegionID]bool // regions registered with this incarnation
	allRegistered     bool                        // MinMembers reached once (or shards had homes already)
	graceful          map[placement.RegionID]bool // regions (and proxies) shutting down gracefully
	terminating       map[placement.RegionID]bool // regions whose removal waits (margin) or is being stored
	workers           map[placement.ShardID]*handOffWorker
	unacked           map[placement.ShardID]placement.RegionID                        // HostShard sent, ShardStarted not yet received
	predecessor       map[placement.ShardID]placement.RegionID                        // region holding messages for the shard's next home
	successor         map[placement.ShardID]map[placement.RegionID]placement.RegionID // predecessor -> the home that followed it
	stopWaiters       map[placement.ShardID][]stopWaiter
	awaiting          map[placement.ShardID][]placement.RegionID // asked while the shard's home was being removed
	nextRequest       uint64
	preparingShutdown bool
	// ended holds the last regions and proxies that ended (at most endedRegions), as
	// their Terminated or RegionStopped told: a Register of theirs that comes after
	// that is ignored (see register).
	ended []placement.RegionID
	// leftUnregistered holds the last regions and proxies (at most endedRegions) that
	// asked to leave before they registered here, and were told that they get no
	// shard (GracefulShutdown): a Register of theirs that comes after registers them
	// as leaving (see register).
	leftUnregistered []placement.RegionID

	pending *pendingWrite
	queue   []CoordInput
	timers  timerSet
	out     CoordDecisions
}

// pendingWrite is the store decision the core waits for, with what to do after it.
type pendingWrite struct {
	event  CoordEvent
	allocs []allocation // the shard homes event stores, in the order decided
	failed int          // how many times storing it failed so far
}

// allocation is one shard home being stored, with the regions to tell it to.
type allocation struct {
	shard      placement.ShardID
	region     placement.RegionID
	requesters []placement.RegionID // ShardHome goes to these once stored
}

// stopWaiter is a StopShards requester waiting for a shard to stop.
type stopWaiter struct {
	replyTo placement.RegionID
	request uint64
}

// NewCoordinator returns a coordinator core waiting for its stored state. strategy nil
// means the default least-shard strategy.
func NewCoordinator(cfg CoordSettings, strategy placement.AllocationStrategy) *Coordinator {
	if strategy == nil {
		strategy = NewLeastShard(LeastShardSettings{})
	}
	cfg = cfg.withDefaults()
	return &Coordinator{
		cfg:         cfg,
		strategy:    strategy,
		state:       NewCoordState(cfg.RememberEntities),
		members:     map[string]placement.NodeInfo{},
		alive:       map[placement.RegionID]bool{},
		graceful:    map[placement.RegionID]bool{},
		terminating: map[placement.RegionID]bool{},
		workers:     map[placement.ShardID]*handOffWorker{},
		unacked:     map[placement.ShardID]placement.RegionID{},
		predecessor: map[placement.ShardID]placement.RegionID{},
		successor:   map[placement.ShardID]map[placement.RegionID]placement.RegionID{},
		stopWaiters: map[placement.ShardID][]stopWaiter{},
		awaiting:    map[placement.ShardID][]placement.RegionID{},
		timers:      timerSet{},
	}
}

// step feeds one input to the core and returns what the shell must do. Inputs other
// than store results and membership views wait in an internal queue while a store is
// pending (as Akka's coordinator stashes), except GetShardHome for a shard whose answer
// is already known; they are handled, in order, once the store is done.
func (c *Coordinator) Step(in CoordInput) CoordDecisions {
	c.accept(in)
	c.drain()
	return c.decisions()
}

// decisions returns the decisions taken since the last call, and forgets them.
func (c *Coordinator) decisions() CoordDecisions {
	out := c.out
	c.out = CoordDecisions{}
	return out
}

// accept takes one input: it applies what cannot wait (a store's outcome, members,
// loaded state, a region's end) and queues the rest for drain.
func (c *Coordinator) accept(in CoordInput) {
	switch in := in.(type) {
	case InStoreDone:
		c.storeDone()
	case InStoreFailed:
		c.storeFailed(in.Err)
	case InMembers:
		c.setMembers(in.Members)
	case InStateLoaded:
		c.stateLoaded(in.State)
	case InRegionTerminated:
		c.regionEnded(in.Region)
		c.queue = append(c.queue, in)
	case InRegionMsg:
		if _, ok := in.Msg.(RegionStopped); ok {
			c.regionEnded(in.From)
		}
		switch {
		case c.phase == phaseWaitingForState:
			// Regions retry every message the coordinator does not answer.
		case c.pending != nil && c.phase == phaseActive && c.answerWhilePending(in):
		case c.queuedAlready(in):
			// Regions repeat GetShardHome every retry tick; one queued copy is answered.
		default:
			c.queue = append(c.queue, in)
		}
	case InTimer:
		// A fire counts only if the timer still runs when it arrives; while it waits in
		// the queue the timer may be started again, which makes this fire stale (see
		// timer).
		periodic := c.timers[in.Key]
		switch {
		case !c.timers.fired(in.Key):
		case in.Key.Kind == TimerStateInit:
			c.activate()
		case periodic && slices.Contains(c.queue, CoordInput(in)):
			// One queued tick is enough.
		default:
			c.queue = append(c.queue, in)
		}
	default:
		c.queue = append(c.queue, in)
	}
}

// answerWhilePending handles a GetShardHome during a pending store when that needs no
// state change; it reports whether it did.
func (c *Coordinator) answerWhilePending(in InRegionMsg) bool {
	m, ok := in.Msg.(GetShardHome)
	return ok && (c.answerHandOver(in.From, m) || c.answerKnown(in.From, m.Shard))
}

// queuedAlready reports whether the same GetShardHome from the same region waits in the
// queue.
func (c *Coordinator) queuedAlready(in InRegionMsg) bool {
	m, ok := in.Msg.(GetShardHome)
	if !ok {
		return false
	}
	for _, q := range c.queue {
		if qm, ok := q.(InRegionMsg); ok && qm.From == in.From {
			if g, ok := qm.Msg.(GetShardHome); ok && g == m {
				return true
			}
		}
	}
	return false
}

// answerHandOver tells a region that owes a hand-over where to deliver it, when the
// region that followed it is known; it reports whether it did.
func (c *Coordinator) answerHandOver(from placement.RegionID, m GetShardHome) bool {
	if !m.HandOver || from == "" {
		return false
	}
	next, ok := c.successor[m.Shard][from]
	if ok {
		c.send(from, HandOverTo{Shard: m.Shard, Region: next})
	}
	return ok
}

// drain handles queued inputs until one starts a store or none can run.
func (c *Coordinator) drain() {
	for c.handleNext() {
	}
}

// handleNext handles the next queued input that may run now, and reports whether
// there was one.
func (c *Coordinator) handleNext() bool {
	if c.pending != nil {
		return false
	}
	i := c.runnable()
	if i < 0 {
		return false
	}
	in := c.queue[i]
	c.queue = slices.Delete(c.queue, i, i+1)
	c.handle(in)
	return true
}

// runnable returns the index of the next queued input that may run now, or -1. While
// initializing only terminations run, so that regions that died while no coordinator
// ran are removed before HostShard goes out.
func (c *Coordinator) runnable() int {
	switch c.phase {
	case phaseActive:
		if len(c.queue) > 0 {
			return 0
		}
	case phaseInitializing:
		for i, in := range c.queue {
			if _, ok := in.(InRegionTerminated); ok {
				return i
			}
		}
	}
	return -1
}

// handle runs one input; the core is not blocked.
func (c *Coordinator) handle(in CoordInput) {
	switch in := in.(type) {
	case InRegionMsg:
		c.regionMsg(in)
	case InRegionTerminated:
		c.regionTerminated(in.Region, in.NodeRemoved)
	case InTimer:
		c.timer(in.Key)
	case InRememberedShards:
		c.state.addUnallocated(in.Shards)
		c.allocateRemembered()
	case InPrepareForShutdown:
		c.preparingShutdown = true
		c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerRebalance})
	case inRebalanceDone:
		c.rebalanceDone(in.Shard, in.OK)
	}
}

func (c *Coordinator) regionMsg(in InRegionMsg) {
	switch m := in.Msg.(type) {
	case Register:
		c.register(in.From, in.Status, in.Local, false)
	case RegisterProxy:
		c.register(in.From, in.Status, in.Local, true)
	case GetShardHome:
		if !c.answerHandOver(in.From, m) {
			c.getShardHome(in.From, m.Shard)
		}
	case ShardStarted:
		c.shardStarted(in.From, m.Shard)
	case BeginHandOffAck:
		region := m.Region
		if region == "" {
			region = in.From
		}
		if w := c.workers[m.Shard]; w != nil && w.id != m.ID {
			// It answers another BeginHandOff for the shard: one of an earlier hand-off,
			// or of another coordinator, relayed late. Counting it could send HandOff
			// before the region's forwards have reached the shard's home.
			break
		}
		c.handOffAcked(region, m.Shard)
	case ShardStopped:
		c.shardStopped(in.From, m.Shard, m.Pending)
	case GracefulShutdownReq:
		c.gracefulShutdown(in.From)
	case RegionStopped:
		c.regionGone(in.From)
	case StopShards:
		c.stopShards(in.From, m.Shards)
	default:
		c.problem(fmt.Errorf("sharding: coordinator ignores unknown message %T from %q", in.Msg, in.From))
	}
}

// timer handles a fire that was current when it arrived. A single-shot timer that runs
// again now was restarted after this fire arrived: the fire belongs to the old one.
func (c *Coordinator) timer(key TimerKey) {
	if periodic, running := c.timers[key]; running && !periodic {
		return
	}
	switch key.Kind {
	case TimerRebalance:
		c.rebalanceTick()
	case TimerHandOff:
		if w := c.workers[key.Shard]; w != nil && !w.done {
			w.done = true
			c.problem(fmt.Errorf("%w: shard %q from region %q after %v", errHandOffTimeout, key.Shard, w.from, c.cfg.HandOffTimeout))
			c.rebalanceDone(key.Shard, false)
		}
	case TimerHostShard:
		if r, ok := c.unacked[key.Shard]; ok {
			if home, ok := c.state.shards[key.Shard]; ok && home == r && c.workers[key.Shard] == nil {
				c.sendHostShard(key.Shard, r)
			} else {
				delete(c.unacked, key.Shard)
			}
		}
	case TimerRemovalMargin:
		c.regionGone(key.Region)
	case TimerStopShards:
		for s, ws := range c.stopWaiters {
			ws = slices.DeleteFunc(ws, func(w stopWaiter) bool { return w.request == key.N })
			if len(ws) == 0 {
				delete(c.stopWaiters, s)
			} else {
				c.stopWaiters[s] = ws
			}
		}
	}
}

// ---- registration and homes ----

// sendShardHomes tells a registering region where shards live, leaving out shards in
// hand-off and shards of regions being removed; at most 10 messages of 500 homes.
func (c *Coordinator) sendShardHomes(to placement.RegionID) {
	var batch []ShardHomesEntry
	n, msgs := 0, 0
	flush := func() {
		if n > 0 {
			c.send(to, ShardHomes{Homes: batch})
			msgs++
		}
		batch, n = nil, 0
	}
	for _, r := range c.state.SortedRegions() {
		if c.terminating[r] {
			continue
		}
		for _, s := range c.state.regions[r] {
			if c.workers[s] != nil {
				continue
			}
			if msgs == shardHomesMaxMsgs {
				return
			}
			if len(batch) == 0 || batch[len(batch)-1].Region != r {
				batch = append(batch, ShardHomesEntry{Region: r})
			}
			e := &batch[len(batch)-1]
			e.Shards = append(e.Shards, s)
			if n++; n == shardHomesBatch {
				flush()
			}
		}
	}
	if msgs < shardHomesMaxMsgs {
		flush()
	}
}

func (c *Coordinator) getShardHome(from placement.RegionID, s placement.ShardID) {
	if s == "" || c.answerKnown(from, s) {
		return
	}
	cands := c.regionInfos(false)
	if len(cands) == 0 {
		c.noHome(from, s) // nobody can host now; the requester asks again
		return
	}
	b := &allocBatch{regions: cands, index: map[placement.ShardID]int{}}
	if !c.allocate(b, from, s) {
		return
	}
	c.allocateQueued(b)
	c.writePending(b.pendingWrite())
}

// answerKnown handles a GetShardHome that needs no allocation: deferred while the
// shard is in hand-off, ignored until enough regions registered or while the home is
// being removed, answered when the home is known. It reports whether it handled it.
func (c *Coordinator) answerKnown(from placement.RegionID, s placement.ShardID) bool {
	if w := c.workers[s]; w != nil {
		if from != "" && !slices.Contains(w.deferred, from) {
			w.deferred = append(w.deferred, from)
		}
		return true
	}
	if !c.allRegistered {
		if c.allRegistered = len(c.alive) >= c.cfg.MinMembers; !c.allRegistered {
			return true
		}
	}
	r, ok := c.state.shards[s]
	if !ok {
		return false
	}
	switch {
	case from == "":
	case c.terminating[r]:
		// Told once the shard has its next home, so that the region need not wait for
		// its next retry.
		if !slices.Contains(c.awaiting[s], from) {
			c.awaiting[s] = append(c.awaiting[s], from)
		}
	default:
		c.send(from, ShardHome{Shard: s, Region: r})
	}
	return true
}

// noHome handles a home request that gets no home now (no region can host, or the
// strategy gave none). A requester that stays asks again on its next retry tick; one
// that is leaving is told, so that it does not wait for a home until its shutdown times
// out: the strategy may never give the shard a home while it is the only region that
// would (a strategy that pins shards to one node, once that node leaves).
func (c *Coordinator) noHome(from placement.RegionID, s placement.ShardID) {
	if from != "" && c.graceful[from] {
		c.send(from, NoShardHome{Shard: s})
	}
}

// CanHost reports whether a region may receive a shard now.
func (c *Coordinator) CanHost(r placement.RegionID) bool {
	_, ok := c.state.regions[r]
	return ok && !c.graceful[r] && !c.terminating[r]
}

// regionInfos describes the registered regions to the strategy: with all true every
// region (those that cannot host marked ShuttingDown), else only those that can host.
func (c *Coordinator) regionInfos(all bool) []placement.RegionInfo {
	var out []placement.RegionInfo
	for _, r := range c.state.SortedRegions() {
		down := c.graceful[r] || c.terminating[r]
		if down && !all {
			continue
		}
		out = append(out, placement.RegionInfo{
			Region:       r,
			Shards:       slices.Clone(c.state.regions[r]),
			Node:         c.members[NodeAddress(r)],
			ShuttingDown: down,
		})
	}
	return out
}

func (c *Coordinator) shardStarted(from placement.RegionID, s placement.ShardID) {
	if r, ok := c.unacked[s]; ok && r == from {
		delete(c.unacked, s)
		c.timers.cancel(&c.out.Timers, TimerKey{Kind: TimerHostShard, Shard: s})
		delete(c.predecessor, s)
	}
}

// sendHostShard tells r to host s (naming the region whose messages come first) and
// arranges the resend.
func (c *Coordinator) sendHostShard(s placement.ShardID, r placement.RegionID) {
	m := HostShard{Shard: s}
	if p := c.predecessor[s]; p != r {
		m.Predecessor = p
	}
	c.send(r, m)
	c.unacked[s] = r
	c.timers.start(&c.out.Timers, TimerKey{Kind: TimerHostShard, Shard: s}, c.cfg.ShardStartTimeout, false)
}

// allocateRemembered queues a home request for every shard without a home (only with
// Remember-entities, where the state keeps them).
func (c *Coordinator) allocateRemembered() {
	if !c.cfg.RememberEntities {
		return
	}
	for _, s := range c.state.sortedUnallocated() {
		c.queue = append(c.queue, InRegionMsg{Msg: GetShardHome{Shard: s}})
	}
}

// ---- membership ----

func (c *Coordinator) setMembers(ms []placement.NodeInfo) {
	c.haveMembers = true
	c.memberList = slices.Clone(ms)
	c.members = make(map[string]placement.NodeInfo, len(ms))
	for _, m := range ms {
		c.members[m.Address.Addr] = m
	}
}

// isMemberNode reports whether a region's node is a current member.
func (c *Coordinator) isMemberNode(r placement.RegionID) bool {
	m, ok := c.members[NodeAddress(r)]
	return ok && m.Status != member.Removed
}

// ---- output helpers ----

func (c *Coordinator) send(to placement.RegionID, msg any) {
	c.out.Sends = append(c.out.Sends, CoordSend{To: to, Msg: msg})
}

func (c *Coordinator) problem(err error) {
	c.out.Problems = append(c.out.Problems, err)
}
