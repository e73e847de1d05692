package sharding

import (
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// Coordinator defaults (Akka's).
const (
	defaultHandOffTimeout    = 60 * time.Second
	defaultShardStartTimeout = 10 * time.Second
	defaultRebalanceInterval = 10 * time.Second
	defaultStateInitDelay    = 500 * time.Millisecond
	// shardHomesBatch and shardHomesMaxMsgs bound the homes sent to a region that
	// registers: 500 per message, 10 messages; it asks for the others when it needs them.
	shardHomesBatch   = 500
	shardHomesMaxMsgs = 10
)

// coordSettings configures a coordinator core. Zero durations and counts mean the
// defaults.
type coordSettings struct {
	handOffTimeout    time.Duration // a hand-off gives up after this (60 s)
	shardStartTimeout time.Duration // HostShard is resent after this (10 s)
	rebalanceInterval time.Duration // rebalance tick (10 s)
	stateInitDelay    time.Duration // after loading a state, wait this for dead regions to be reported (500 ms)
	minMembers        int           // regions that must register before shards get homes (1)
	removalMargin     time.Duration // a removed node's regions are dropped this long after (0)
	rememberEntities  bool          // keep homeless shards and re-home them at once
	storeState        bool          // store decisions carry the whole next state (ddata mode)
	// handOffEpoch, when not 0, makes this incarnation name its hand-offs from it
	// (handOffWorker.id): a random number per incarnation, so that an acknowledgement
	// of another incarnation's BeginHandOff, or of an earlier hand-off of the same
	// shard, is not counted. Its RegisterAcks and GracefulShutdownAcks carry it too
	// (Epoch), so that a region tells this incarnation's acknowledgement from
	// another's.
	handOffEpoch uint64
}

func (s coordSettings) withDefaults() coordSettings {
	if s.handOffTimeout <= 0 {
		s.handOffTimeout = defaultHandOffTimeout
	}
	if s.shardStartTimeout <= 0 {
		s.shardStartTimeout = defaultShardStartTimeout
	}
	if s.rebalanceInterval <= 0 {
		s.rebalanceInterval = defaultRebalanceInterval
	}
	if s.stateInitDelay <= 0 {
		s.stateInitDelay = defaultStateInitDelay
	}
	if s.minMembers <= 0 {
		s.minMembers = 1
	}
	return s
}

// coordInput is one input to the coordinator core.
type coordInput interface{ isCoordInput() }

// inStateLoaded: the stored state was read (nil when none was stored). The core takes
// ownership of the state. Until it arrives, region messages are ignored (regions retry).
type inStateLoaded struct{ State *coordState }

// inStoreDone: the store decision of the last step was written.
type inStoreDone struct{}

// inStoreFailed: it was not; the core asks to write it again.
type inStoreFailed struct{ Err error }

// inRegionMsg: a protocol message (msg*) from a region or proxy. Status and Local
// describe the sender's member when the message arrived: registration is accepted only
// from an Up member or from the coordinator's own node.
type inRegionMsg struct {
	From   RegionID
	Msg    any
	Status cluster.MemberStatus
	Local  bool
}

// inRegionTerminated: the region or proxy actor is gone. NodeRemoved is true when it
// was inferred from its node's removal (actor.Terminated.AddressTerminated): the region
// is then dropped only after the removal margin.
type inRegionTerminated struct {
	Region      RegionID
	NodeRemoved bool
}

// inMembers: the current cluster members (the ones relevant to this entity type), as
// allocation strategies see them. Replaces the previous view.
type inMembers struct{ Members []NodeInfo }

// inTimer: a timer the core started fired.
type inTimer struct{ Key timerKey }

// inRememberedShards: shard IDs read from the remember-entities store; those without a
// home get one at once.
type inRememberedShards struct{ Shards []ShardID }

// inPrepareForShutdown: the whole cluster is shutting down; no new rebalance.
type inPrepareForShutdown struct{}

// inRebalanceDone is internal: a hand-off ended, successfully or not.
type inRebalanceDone struct {
	Shard ShardID
	OK    bool
}

func (inStateLoaded) isCoordInput()        {}
func (inStoreDone) isCoordInput()          {}
func (inStoreFailed) isCoordInput()        {}
func (inRegionMsg) isCoordInput()          {}
func (inRegionTerminated) isCoordInput()   {}
func (inMembers) isCoordInput()            {}
func (inTimer) isCoordInput()              {}
func (inRememberedShards) isCoordInput()   {}
func (inPrepareForShutdown) isCoordInput() {}
func (inRebalanceDone) isCoordInput()      {}

// coordDecisions is what one step asks the shell to do, in this order: store (if set),
// then sends in order, watches, timer operations in order; and log the problems.
type coordDecisions struct {
	// store, when set, must be written (the event as a journal entry, or state as the
	// whole register value when storeState is on); the shell answers inStoreDone or
	// inStoreFailed. Until then the core holds back its other inputs (it queues them).
	store *coordStore
	// sends are protocol messages for regions, proxies or StopShards requesters, sent
	// with the coordinator as sender, in this order.
	sends []coordSend
	// watch lists regions and proxies to watch; their end comes back as
	// inRegionTerminated.
	watch []RegionID
	// timers to start or cancel, in order.
	timers []timerOp
	// problems to log (warnings; errors for errInvalidEvent and errCorruptState).
	problems []error
}

// coordSend is one message to send.
type coordSend struct {
	to  RegionID
	msg any
}

// coordStore is one state change to write.
type coordStore struct {
	event coordEvent
	state *coordState // the state after event, when storeState is on
}

type coordPhase uint8

const (
	phaseWaitingForState coordPhase = iota // nothing loaded yet
	phaseInitializing                      // loaded; waiting stateInitDelay for dead regions
	phaseActive
)

// coordinator is the coordinator's protocol as a pure state machine (see step).
type coordinator struct {
	cfg      coordSettings
	strategy AllocationStrategy
	phase    coordPhase
	state    *coordState
	handOffs uint64 // hand-offs named so far (nextHandOffID)

	members     map[string]NodeInfo // by node address
	memberList  []NodeInfo
	haveMembers bool

	alive             map[RegionID]bool // regions registered with this incarnation
	allRegistered     bool              // minMembers reached once (or shards had homes already)
	graceful          map[RegionID]bool // regions (and proxies) shutting down gracefully
	terminating       map[RegionID]bool // regions whose removal waits (margin) or is being stored
	workers           map[ShardID]*handOffWorker
	unacked           map[ShardID]RegionID              // HostShard sent, ShardStarted not yet received
	predecessor       map[ShardID]RegionID              // region holding messages for the shard's next home
	successor         map[ShardID]map[RegionID]RegionID // predecessor -> the home that followed it
	stopWaiters       map[ShardID][]stopWaiter
	awaiting          map[ShardID][]RegionID // asked while the shard's home was being removed
	nextRequest       uint64
	preparingShutdown bool
	// ended holds the last regions and proxies that ended (at most endedRegions), as
	// their Terminated or RegionStopped told: a Register of theirs that comes after
	// that is ignored (see register).
	ended []RegionID
	// leftUnregistered holds the last regions and proxies (at most endedRegions) that
	// asked to leave before they registered here, and were told that they get no
	// shard (gracefulShutdown): a Register of theirs that comes after registers them
	// as leaving (see register).
	leftUnregistered []RegionID

	pending *pendingWrite
	queue   []coordInput
	timers  timerSet
	out     coordDecisions
}

// pendingWrite is the store decision the core waits for, with what to do after it.
type pendingWrite struct {
	event  coordEvent
	allocs []allocation // the shard homes event stores, in the order decided
	failed int          // how many times storing it failed so far
}

// allocation is one shard home being stored, with the regions to tell it to.
type allocation struct {
	shard      ShardID
	region     RegionID
	requesters []RegionID // ShardHome goes to these once stored
}

// stopWaiter is a StopShards requester waiting for a shard to stop.
type stopWaiter struct {
	replyTo RegionID
	request uint64
}

// newCoordinator returns a coordinator core waiting for its stored state. strategy nil
// means the default least-shard strategy.
func newCoordinator(cfg coordSettings, strategy AllocationStrategy) *coordinator {
	if strategy == nil {
		strategy = &LeastShardStrategy{cfg: LeastShardConfig{}.withDefaults()}
	}
	cfg = cfg.withDefaults()
	return &coordinator{
		cfg:         cfg,
		strategy:    strategy,
		state:       newCoordState(cfg.rememberEntities),
		members:     map[string]NodeInfo{},
		alive:       map[RegionID]bool{},
		graceful:    map[RegionID]bool{},
		terminating: map[RegionID]bool{},
		workers:     map[ShardID]*handOffWorker{},
		unacked:     map[ShardID]RegionID{},
		predecessor: map[ShardID]RegionID{},
		successor:   map[ShardID]map[RegionID]RegionID{},
		stopWaiters: map[ShardID][]stopWaiter{},
		awaiting:    map[ShardID][]RegionID{},
		timers:      timerSet{},
	}
}

// step feeds one input to the core and returns what the shell must do. Inputs other
// than store results and membership views wait in an internal queue while a store is
// pending (as Akka's coordinator stashes), except GetShardHome for a shard whose answer
// is already known; they are handled, in order, once the store is done.
func (c *coordinator) step(in coordInput) coordDecisions {
	c.accept(in)
	c.drain()
	return c.decisions()
}

// decisions returns the decisions taken since the last call, and forgets them.
func (c *coordinator) decisions() coordDecisions {
	out := c.out
	c.out = coordDecisions{}
	return out
}

// accept takes one input: it applies what cannot wait (a store's outcome, members,
// loaded state, a region's end) and queues the rest for drain.
func (c *coordinator) accept(in coordInput) {
	switch in := in.(type) {
	case inStoreDone:
		c.storeDone()
	case inStoreFailed:
		c.storeFailed(in.Err)
	case inMembers:
		c.setMembers(in.Members)
	case inStateLoaded:
		c.stateLoaded(in.State)
	case inRegionTerminated:
		c.regionEnded(in.Region)
		c.queue = append(c.queue, in)
	case inRegionMsg:
		if _, ok := in.Msg.(msgRegionStopped); ok {
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
	case inTimer:
		// A fire counts only if the timer still runs when it arrives; while it waits in
		// the queue the timer may be started again, which makes this fire stale (see
		// timer).
		periodic := c.timers[in.Key]
		switch {
		case !c.timers.fired(in.Key):
		case in.Key.kind == timerStateInit:
			c.activate()
		case periodic && slices.Contains(c.queue, coordInput(in)):
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
func (c *coordinator) answerWhilePending(in inRegionMsg) bool {
	m, ok := in.Msg.(msgGetShardHome)
	return ok && (c.answerHandOver(in.From, m) || c.answerKnown(in.From, m.Shard))
}

// queuedAlready reports whether the same GetShardHome from the same region waits in the
// queue.
func (c *coordinator) queuedAlready(in inRegionMsg) bool {
	m, ok := in.Msg.(msgGetShardHome)
	if !ok {
		return false
	}
	for _, q := range c.queue {
		if qm, ok := q.(inRegionMsg); ok && qm.From == in.From {
			if g, ok := qm.Msg.(msgGetShardHome); ok && g == m {
				return true
			}
		}
	}
	return false
}

// answerHandOver tells a region that owes a hand-over where to deliver it, when the
// region that followed it is known; it reports whether it did.
func (c *coordinator) answerHandOver(from RegionID, m msgGetShardHome) bool {
	if !m.HandOver || from == "" {
		return false
	}
	next, ok := c.successor[m.Shard][from]
	if ok {
		c.send(from, msgHandOverTo{Shard: m.Shard, Region: next})
	}
	return ok
}

// drain handles queued inputs until one starts a store or none can run.
func (c *coordinator) drain() {
	for c.handleNext() {
	}
}

// handleNext handles the next queued input that may run now, and reports whether
// there was one.
func (c *coordinator) handleNext() bool {
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
func (c *coordinator) runnable() int {
	switch c.phase {
	case phaseActive:
		if len(c.queue) > 0 {
			return 0
		}
	case phaseInitializing:
		for i, in := range c.queue {
			if _, ok := in.(inRegionTerminated); ok {
				return i
			}
		}
	}
	return -1
}

// handle runs one input; the core is not blocked.
func (c *coordinator) handle(in coordInput) {
	switch in := in.(type) {
	case inRegionMsg:
		c.regionMsg(in)
	case inRegionTerminated:
		c.regionTerminated(in.Region, in.NodeRemoved)
	case inTimer:
		c.timer(in.Key)
	case inRememberedShards:
		c.state.addUnallocated(in.Shards)
		c.allocateRemembered()
	case inPrepareForShutdown:
		c.preparingShutdown = true
		c.timers.cancel(&c.out.timers, timerKey{kind: timerRebalance})
	case inRebalanceDone:
		c.rebalanceDone(in.Shard, in.OK)
	}
}

func (c *coordinator) regionMsg(in inRegionMsg) {
	switch m := in.Msg.(type) {
	case msgRegister:
		c.register(in.From, in.Status, in.Local, false)
	case msgRegisterProxy:
		c.register(in.From, in.Status, in.Local, true)
	case msgGetShardHome:
		if !c.answerHandOver(in.From, m) {
			c.getShardHome(in.From, m.Shard)
		}
	case msgShardStarted:
		c.shardStarted(in.From, m.Shard)
	case msgBeginHandOffAck:
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
	case msgShardStopped:
		c.shardStopped(in.From, m.Shard, m.Pending)
	case msgGracefulShutdownReq:
		c.gracefulShutdown(in.From)
	case msgRegionStopped:
		c.regionGone(in.From)
	case msgStopShards:
		c.stopShards(in.From, m.Shards)
	default:
		c.problem(fmt.Errorf("sharding: coordinator ignores unknown message %T from %q", in.Msg, in.From))
	}
}

// timer handles a fire that was current when it arrived. A single-shot timer that runs
// again now was restarted after this fire arrived: the fire belongs to the old one.
func (c *coordinator) timer(key timerKey) {
	if periodic, running := c.timers[key]; running && !periodic {
		return
	}
	switch key.kind {
	case timerRebalance:
		c.rebalanceTick()
	case timerHandOff:
		if w := c.workers[key.shard]; w != nil && !w.done {
			w.done = true
			c.problem(fmt.Errorf("%w: shard %q from region %q after %v", errHandOffTimeout, key.shard, w.from, c.cfg.handOffTimeout))
			c.rebalanceDone(key.shard, false)
		}
	case timerHostShard:
		if r, ok := c.unacked[key.shard]; ok {
			if home, ok := c.state.shards[key.shard]; ok && home == r && c.workers[key.shard] == nil {
				c.sendHostShard(key.shard, r)
			} else {
				delete(c.unacked, key.shard)
			}
		}
	case timerRemovalMargin:
		c.regionGone(key.region)
	case timerStopShards:
		for s, ws := range c.stopWaiters {
			ws = slices.DeleteFunc(ws, func(w stopWaiter) bool { return w.request == key.n })
			if len(ws) == 0 {
				delete(c.stopWaiters, s)
			} else {
				c.stopWaiters[s] = ws
			}
		}
	}
}

// ---- state loading and storing ----

func (c *coordinator) stateLoaded(st *coordState) {
	if c.phase != phaseWaitingForState {
		c.problem(fmt.Errorf("sharding: coordinator state loaded twice; ignored"))
		return
	}
	if st == nil {
		st = newCoordState(c.cfg.rememberEntities)
	}
	st.withRememberEntities(c.cfg.rememberEntities)
	c.state = st
	// min-nr-of-members holds back the first allocations of a cluster that starts; a
	// coordinator that takes over a running cluster (shards have homes) does not wait
	// for that many regions again: the cluster may have shrunk below it meanwhile.
	if len(st.shards) > 0 {
		c.allRegistered = true
	}
	if st.isEmpty() {
		c.activate()
		return
	}
	c.phase = phaseInitializing
	for _, r := range st.sortedRegions() {
		c.out.watch = append(c.out.watch, r)
		if c.haveMembers && !c.isMemberNode(r) {
			c.queue = append(c.queue, inRegionTerminated{Region: r})
		}
	}
	for _, p := range st.sortedProxies() {
		c.out.watch = append(c.out.watch, p)
		if c.haveMembers && !c.isMemberNode(p) {
			c.queue = append(c.queue, inRegionTerminated{Region: p})
		}
	}
	c.timers.start(&c.out.timers, timerKey{kind: timerStateInit}, c.cfg.stateInitDelay, false)
}

// activate starts answering: HostShard for every known shard, homes for remembered
// shards, the rebalance tick.
func (c *coordinator) activate() {
	c.phase = phaseActive
	for _, s := range c.state.sortedShards() {
		c.sendHostShard(s, c.state.shards[s])
	}
	c.allocateRemembered()
	if !c.preparingShutdown {
		c.timers.start(&c.out.timers, timerKey{kind: timerRebalance}, c.cfg.rebalanceInterval, true)
	}
}

// write starts storing e; the core is blocked until inStoreDone. A handler writes at
// most once, as its last action.
func (c *coordinator) write(e coordEvent) { c.writePending(&pendingWrite{event: e}) }

// writePending starts storing p.event, and keeps p for when it is stored.
func (c *coordinator) writePending(p *pendingWrite) {
	if c.pending != nil {
		c.problem(fmt.Errorf("%w: %T while %T is pending (dropped)", errInvalidEvent, p.event, c.pending.event))
		return
	}
	if err := c.state.check(p.event); err != nil {
		c.problem(err)
		return
	}
	c.pending = p
	c.emitStore()
}

func (c *coordinator) emitStore() {
	st := &coordStore{event: c.pending.event}
	if c.cfg.storeState {
		st.state = c.state.clone()
		_ = st.state.apply(c.pending.event) // checked in write
	}
	c.out.store = st
}

func (c *coordinator) storeFailed(err error) {
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

func (c *coordinator) storeDone() {
	p := c.pending
	if p == nil {
		c.problem(fmt.Errorf("%w: completion reported with nothing pending", errStore))
		return
	}
	c.pending = nil
	if err := c.state.apply(p.event); err != nil {
		c.problem(err)
		return
	}
	switch e := p.event.(type) {
	case evRegionRegistered:
		c.out.watch = append(c.out.watch, e.Region)
		c.send(e.Region, c.registerAck())
		c.allocateRemembered()
	case evRegionProxyRegistered:
		c.out.watch = append(c.out.watch, e.Proxy)
		c.send(e.Proxy, c.registerAck())
	case evRegionTerminated:
		delete(c.graceful, e.Region)
		delete(c.terminating, e.Region)
		delete(c.alive, e.Region)
		for s, r := range c.unacked {
			if r == e.Region {
				delete(c.unacked, s)
				c.timers.cancel(&c.out.timers, timerKey{kind: timerHostShard, shard: s})
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
	case evRegionProxyTerminated:
		delete(c.graceful, e.Proxy)
		c.forgetRequester(e.Proxy)
	case evShardHomeAllocated, evShardHomesAllocated:
		for _, a := range p.allocs {
			c.homeStored(a)
		}
	case evShardHomeDeallocated:
		var from RegionID
		if w := c.workers[e.Shard]; w != nil {
			from = w.from
		}
		c.finishWorker(e.Shard)
		c.ackGraceful(from)
		c.allocateRemembered()
		// Re-home at once, so the shard (and with remember-entities its entities) is back
		// before the first message asks for it.
		c.queue = append(c.queue, inRegionMsg{Msg: msgGetShardHome{Shard: e.Shard}})
	}
}

// forgetRequester drops a region or proxy that is gone from the requesters awaiting a
// home.
func (c *coordinator) forgetRequester(r RegionID) {
	for s, rs := range c.awaiting {
		if rs = slices.DeleteFunc(rs, func(x RegionID) bool { return x == r }); len(rs) == 0 {
			delete(c.awaiting, s)
		} else {
			c.awaiting[s] = rs
		}
	}
}

// ---- registration and homes ----

// sendShardHomes tells a registering region where shards live, leaving out shards in
// hand-off and shards of regions being removed; at most 10 messages of 500 homes.
func (c *coordinator) sendShardHomes(to RegionID) {
	var batch []shardHomesEntry
	n, msgs := 0, 0
	flush := func() {
		if n > 0 {
			c.send(to, msgShardHomes{Homes: batch})
			msgs++
		}
		batch, n = nil, 0
	}
	for _, r := range c.state.sortedRegions() {
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
				batch = append(batch, shardHomesEntry{Region: r})
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

func (c *coordinator) getShardHome(from RegionID, s ShardID) {
	if s == "" || c.answerKnown(from, s) {
		return
	}
	cands := c.regionInfos(false)
	if len(cands) == 0 {
		c.noHome(from, s) // nobody can host now; the requester asks again
		return
	}
	b := &allocBatch{regions: cands, index: map[ShardID]int{}}
	if !c.allocate(b, from, s) {
		return
	}
	c.allocateQueued(b)
	c.writePending(b.pendingWrite())
}

// answerKnown handles a GetShardHome that needs no allocation: deferred while the
// shard is in hand-off, ignored until enough regions registered or while the home is
// being removed, answered when the home is known. It reports whether it handled it.
func (c *coordinator) answerKnown(from RegionID, s ShardID) bool {
	if w := c.workers[s]; w != nil {
		if from != "" && !slices.Contains(w.deferred, from) {
			w.deferred = append(w.deferred, from)
		}
		return true
	}
	if !c.allRegistered {
		if c.allRegistered = len(c.alive) >= c.cfg.minMembers; !c.allRegistered {
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
		c.send(from, msgShardHome{Shard: s, Region: r})
	}
	return true
}

// noHome handles a home request that gets no home now (no region can host, or the
// strategy gave none). A requester that stays asks again on its next retry tick; one
// that is leaving is told, so that it does not wait for a home until its shutdown times
// out: the strategy may never give the shard a home while it is the only region that
// would (a strategy that pins shards to one node, once that node leaves).
func (c *coordinator) noHome(from RegionID, s ShardID) {
	if from != "" && c.graceful[from] {
		c.send(from, msgNoShardHome{Shard: s})
	}
}

// canHost reports whether a region may receive a shard now.
func (c *coordinator) canHost(r RegionID) bool {
	_, ok := c.state.regions[r]
	return ok && !c.graceful[r] && !c.terminating[r]
}

// regionInfos describes the registered regions to the strategy: with all true every
// region (those that cannot host marked ShuttingDown), else only those that can host.
func (c *coordinator) regionInfos(all bool) []RegionInfo {
	var out []RegionInfo
	for _, r := range c.state.sortedRegions() {
		down := c.graceful[r] || c.terminating[r]
		if down && !all {
			continue
		}
		out = append(out, RegionInfo{
			Region:       r,
			Shards:       slices.Clone(c.state.regions[r]),
			Node:         c.members[nodeAddress(r)],
			ShuttingDown: down,
		})
	}
	return out
}

func (c *coordinator) shardStarted(from RegionID, s ShardID) {
	if r, ok := c.unacked[s]; ok && r == from {
		delete(c.unacked, s)
		c.timers.cancel(&c.out.timers, timerKey{kind: timerHostShard, shard: s})
		delete(c.predecessor, s)
	}
}

// sendHostShard tells r to host s (naming the region whose messages come first) and
// arranges the resend.
func (c *coordinator) sendHostShard(s ShardID, r RegionID) {
	m := msgHostShard{Shard: s}
	if p := c.predecessor[s]; p != r {
		m.Predecessor = p
	}
	c.send(r, m)
	c.unacked[s] = r
	c.timers.start(&c.out.timers, timerKey{kind: timerHostShard, shard: s}, c.cfg.shardStartTimeout, false)
}

// allocateRemembered queues a home request for every shard without a home (only with
// remember-entities, where the state keeps them).
func (c *coordinator) allocateRemembered() {
	if !c.cfg.rememberEntities {
		return
	}
	for _, s := range c.state.sortedUnallocated() {
		c.queue = append(c.queue, inRegionMsg{Msg: msgGetShardHome{Shard: s}})
	}
}

// ---- membership ----

func (c *coordinator) setMembers(ms []NodeInfo) {
	c.haveMembers = true
	c.memberList = slices.Clone(ms)
	c.members = make(map[string]NodeInfo, len(ms))
	for _, m := range ms {
		c.members[m.Address.Addr] = m
	}
}

// isMemberNode reports whether a region's node is a current member.
func (c *coordinator) isMemberNode(r RegionID) bool {
	m, ok := c.members[nodeAddress(r)]
	return ok && m.Status != cluster.Removed
}

// ---- output helpers ----

func (c *coordinator) send(to RegionID, msg any) {
	c.out.sends = append(c.out.sends, coordSend{to: to, msg: msg})
}

func (c *coordinator) problem(err error) {
	c.out.problems = append(c.out.problems, err)
}
