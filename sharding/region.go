package sharding

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Region defaults (Akka's).
const (
	defaultRetryInterval       = 2 * time.Second
	defaultBufferSize          = 100_000
	defaultShardFailureBackoff = 10 * time.Second
	minRegisterDelay           = 100 * time.Millisecond
)

// regionSettings configures a region core. Zero values mean the defaults.
type regionSettings struct {
	retryInterval       time.Duration // retry tick; registration backoff tops out here (2 s)
	bufferSize          int           // messages buffered in all, while homes are unknown (100 000)
	handOffTimeout      time.Duration // give up waiting for a predecessor's hand-over (60 s)
	shardFailureBackoff time.Duration // restart a shard that stopped on its own (10 s; remember-entities)
	rememberEntities    bool          // restart shards that stop on their own, after the backoff
	proxy               bool          // proxy-only: never hosts a shard
}

func (s regionSettings) withDefaults() regionSettings {
	if s.retryInterval <= 0 {
		s.retryInterval = defaultRetryInterval
	}
	if s.bufferSize <= 0 {
		s.bufferSize = defaultBufferSize
	}
	if s.handOffTimeout <= 0 {
		s.handOffTimeout = defaultHandOffTimeout
	}
	if s.shardFailureBackoff <= 0 {
		s.shardFailureBackoff = defaultShardFailureBackoff
	}
	return s
}

// regionActionKind says what a regionAction asks the shell to do.
type regionActionKind uint8

const (
	// actDeliver: give msg to the local shard actor of shard.
	actDeliver regionActionKind = iota + 1
	// actForward: forward msg (with its original sender) to region to.
	actForward
	// actStartShard: create the local shard actor of shard; it reports shardReady when
	// it can take messages and shardTerminated when it stops.
	actStartShard
	// actHandOffShard: tell the local shard actor of shard to hand off.
	actHandOffShard
	// actHandOver: send msgs to region to as the hand-over of shard (marked so that
	// region to knows them as such), in order, then the end-of-hand-over marker; region
	// to feeds them to its core as handOverIn, the marker as done.
	actHandOver
	// actToCoordinator: send proto to the coordinator this region registered with.
	actToCoordinator
	// actToRegion: send proto to region to.
	actToRegion
	// actRegister: send Register (RegisterProxy for a proxy) to the coordinator
	// candidates: the coordinator path on the oldest Up member of the role, and on older
	// members that are Leaving or Exiting.
	actRegister
	// actToCandidates: send proto to the coordinator candidates (as actRegister).
	actToCandidates
	// actWatch: watch region to; its end comes back as regionTerminated.
	actWatch
)

// regionAction is one thing to do; which fields matter depends on kind.
type regionAction[M any] struct {
	kind  regionActionKind
	shard ShardID
	to    RegionID
	msg   M
	msgs  []M
	proto any
}

// droppedMsg is a message the core could not keep: the shell sends it to dead letters,
// counts it and logs it (rate-limited), naming err.
type droppedMsg[M any] struct {
	shard ShardID
	msg   M
	err   error
}

// regionDecisions is what one input to a region core asks the shell to do.
type regionDecisions[M any] struct {
	actions  []regionAction[M] // in order
	timers   []timerOp         // in order
	dropped  []droppedMsg[M]
	problems []error // warnings; errShardHomeConflict is fatal for the region
	stop     bool    // stop the region actor now (its graceful shutdown is complete)
}

// localShard is a shard actor of this region.
type localShard struct {
	ready      bool // it reported shardReady: messages go to it directly
	handingOff bool // HandOff was passed to it
}

// shardBuffer holds a shard's messages while they cannot be delivered. The first
// handOver of them came in a hand-over from a predecessor (or back from this region's
// own stopped shard): they are older than the rest and go first.
type shardBuffer[M any] struct {
	msgs     []M
	handOver int
}

// regionCore is a region's routing state as a pure state machine: where each shard
// lives, which messages wait, registration with the coordinator, and the hand-off
// protocol that delivers every buffered message at the shard's next home in each
// sender's order. M is the shell's message envelope (message plus sender); the core
// never looks inside.
type regionCore[M any] struct {
	cfg  regionSettings
	self RegionID

	registered   bool
	nextRegDelay time.Duration
	// coordEpoch is the epoch of the coordinator incarnation this region registered
	// with last (its RegisterAck's): while registered, only a GracefulShutdownAck of
	// that incarnation counts. lostEpochs holds the last incarnations (at most
	// maxLostEpochs) it was registered with and lost (coordinatorLost): while it
	// registers again, their late GracefulShutdownAcks do not count (shutdownAck).
	coordEpoch uint64
	lostEpochs []uint64

	homes       map[ShardID]RegionID // known homes; self for shards hosted here
	local       map[ShardID]*localShard
	buffers     map[ShardID]*shardBuffer[M]
	total       int                  // messages in buffers
	owes        map[ShardID]bool     // told the coordinator Pending: the next home gets a hand-over from us
	target      map[ShardID]RegionID // where to deliver an owed hand-over (HandOverTo)
	waiting     map[ShardID]RegionID // predecessor whose hand-over must come first
	overDone    map[ShardID]map[RegionID]bool
	pendingHost map[ShardID]bool // HostShard while the old shard actor still stops
	unsent      map[ShardID]bool // ShardStopped(Pending) to send once registered
	// handedOver holds the hand-overs this region sent, each to the region that has not
	// acknowledged it yet (msgHandOverAck). A leaving region does not stop before they
	// are: its termination could reach the next home before the hand-over does (they
	// travel on different lanes), and the next home stops waiting for a predecessor
	// that has terminated, so it would deliver newer messages before the handed-over
	// ones.
	handedOver map[ShardID]RegionID
	// relayed holds the BeginHandOffAcks this region passed on (relayAck), for as long
	// as the hand-off timeout, and passes them on again when it registers (see
	// passRelayed).
	relayed map[relayKey]relayedAck
	ticks   uint64 // retry ticks so far
	// ackedVia holds, for a shard in hand-off, the home this region sent its
	// BeginHandOffAck through, and the ID it acknowledged. Until the region learns a
	// home again, a BeginHandOff that comes again (a coordinator asks again when the
	// region registers) or anew (another coordinator's, after the first moved or
	// crashed) is answered through the same home, so that the answer cannot overtake
	// the forwards the first one follows. When that home terminates, the region
	// answers the coordinator itself (regionTerminated): what went through the home
	// may be lost with it.
	ackedVia map[ShardID]ackRoute
	// begun holds the ID of the last BeginHandOff for each shard (beginHandOff).
	begun   map[ShardID]uint64
	watched map[RegionID]bool

	shuttingDown bool
	// everRegistered: a coordinator knows this region and may give it shards, so that
	// leaving, it waits for the coordinator's word that it hosts none (shutdownAcked),
	// and takes no late word of a coordinator it has lost (shutdownAck): the
	// coordinators' stored state knows the region, and while it registers again (its
	// coordinator crashed or moved) the next one may give it a shard, whatever an
	// earlier one said. A region that has sent Register but never heard RegisterAck
	// may be known too (its Register on its way): leaving, it waits for a
	// coordinator's word as well (one that had not registered it registers it only as
	// leaving, see coordinator.register), but only for twice the retry interval
	// (timerLeaveUnknown, which then counts as the word), since there may be no
	// coordinator at all. (It goes on registering while it leaves: a region that
	// holds messages needs a coordinator to learn their homes, or that they have
	// none.)
	everRegistered bool
	registerSent   bool
	shutdownAcked  bool
	stopped        bool

	timers timerSet
	out    regionDecisions[M]
}

// newRegionCore returns the core of region self.
func newRegionCore[M any](self RegionID, cfg regionSettings) *regionCore[M] {
	return &regionCore[M]{
		cfg:         cfg.withDefaults(),
		self:        self,
		homes:       map[ShardID]RegionID{},
		local:       map[ShardID]*localShard{},
		buffers:     map[ShardID]*shardBuffer[M]{},
		owes:        map[ShardID]bool{},
		target:      map[ShardID]RegionID{},
		waiting:     map[ShardID]RegionID{},
		overDone:    map[ShardID]map[RegionID]bool{},
		pendingHost: map[ShardID]bool{},
		unsent:      map[ShardID]bool{},
		handedOver:  map[ShardID]RegionID{},
		relayed:     map[relayKey]relayedAck{},
		ackedVia:    map[ShardID]ackRoute{},
		begun:       map[ShardID]uint64{},
		watched:     map[RegionID]bool{},
		timers:      timerSet{},
	}
}

// done returns the accumulated decisions and resets them.
func (r *regionCore[M]) done() regionDecisions[M] {
	out := r.out
	r.out = regionDecisions[M]{}
	return out
}

// start begins registration and the retry tick.
func (r *regionCore[M]) start() regionDecisions[M] {
	r.timers.start(&r.out.timers, timerKey{kind: timerRetry}, r.cfg.retryInterval, true)
	r.startRegistration()
	return r.done()
}

// deliver routes a message for shard s: to the local shard, to the shard's region, or
// into the buffer while neither can take it (asking the coordinator for the home when
// the first message is buffered).
func (r *regionCore[M]) deliver(s ShardID, msg M) regionDecisions[M] {
	if s == "" {
		r.drop(s, msg, errNoShardID)
	} else {
		r.route(s, msg)
	}
	return r.done()
}

// handOverIn takes messages that region from handed over for shard s: they are older
// than anything buffered here and go first. done marks the end of from's hand-over.
func (r *regionCore[M]) handOverIn(from RegionID, s ShardID, msgs []M, done bool) regionDecisions[M] {
	for _, m := range msgs {
		r.bufferHandOver(s, m)
	}
	if done {
		if from != "" && from != r.self {
			r.act(regionAction[M]{kind: actToRegion, to: from, proto: msgHandOverAck{Shard: s}})
		}
		if r.waiting[s] == from {
			r.endWait(s)
		} else {
			if r.overDone[s] == nil {
				r.overDone[s] = map[RegionID]bool{}
			}
			r.overDone[s][from] = true
		}
	}
	r.flush(s)
	return r.done()
}

// fromCoordinator handles a coordinator message (msg*).
func (r *regionCore[M]) fromCoordinator(msg any) regionDecisions[M] {
	switch m := msg.(type) {
	case msgRegisterAck:
		r.registerAck(m.Epoch)
	case msgShardHome:
		r.shardHome(m.Shard, m.Region)
	case msgShardHomes:
		for _, e := range m.Homes {
			for _, s := range e.Shards {
				r.shardHome(s, e.Region)
			}
		}
	case msgHostShard:
		r.hostShard(m.Shard, m.Predecessor)
	case msgBeginHandOff:
		r.beginHandOff(m.Shard, m.ID)
	case msgHandOff:
		r.handOff(m.Shard)
	case msgNoShardHome:
		r.noShardHome(m.Shard)
	case msgGracefulShutdownAck:
		r.shutdownAck(m.Epoch)
	case msgHandOverTo:
		if r.owes[m.Shard] {
			r.target[m.Shard] = m.Region
			r.flush(m.Shard)
		}
	default:
		r.problem(fmt.Errorf("sharding: region ignores unknown coordinator message %T", msg))
	}
	return r.done()
}

// staleRegisterAck: a RegisterAck came from a coordinator that has stopped or moved
// since (the shell drops it): the region does not register with it, but the
// coordinators' stored state knows the region (a coordinator acknowledges a
// registration once it is stored), so that leaving, the region waits for a
// coordinator's word that it hosts nothing (see everRegistered). That word from the
// same incarnation (epoch, when not 0) does not count either (lostEpochs): the next
// coordinator knows the region from the stored state and may give it a shard,
// whatever the stale one says.
func (r *regionCore[M]) staleRegisterAck(epoch uint64) regionDecisions[M] {
	r.everRegistered = true
	if epoch != 0 {
		r.lostEpochs = remember(r.lostEpochs, epoch, maxLostEpochs)
	}
	return r.done()
}

// shardReady: the local shard actor of s can take messages.
func (r *regionCore[M]) shardReady(s ShardID) regionDecisions[M] {
	if ls := r.local[s]; ls != nil {
		ls.ready = true
		r.flush(s)
	}
	return r.done()
}

// regionTerminated: another region is gone; forget the homes it had.
func (r *regionCore[M]) regionTerminated(gone RegionID) regionDecisions[M] {
	delete(r.watched, gone)
	for s, h := range r.homes {
		if h == gone {
			delete(r.homes, s)
		}
	}
	for s, t := range r.target {
		if t == gone {
			delete(r.target, s) // the owed hand-over goes to the next home instead
		}
	}
	for _, s := range slices.Sorted(maps.Keys(r.waiting)) {
		if r.waiting[s] == gone {
			r.endWait(s)
			r.flush(s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		r.requestHomeIfUnknown(s)
	}
	for s, to := range r.handedOver {
		if to == gone {
			delete(r.handedOver, s) // it will not answer: the hand-over went with it
		}
	}
	for _, s := range slices.Sorted(maps.Keys(r.ackedVia)) {
		if route := r.ackedVia[s]; route.via == gone {
			// What went through it may be lost with it, the acknowledgement too; the
			// forwards it follows are there, or lost.
			delete(r.ackedVia, s)
			if r.registered {
				r.act(regionAction[M]{kind: actToCoordinator, proto: msgBeginHandOffAck{Shard: s, Region: r.self, ID: route.id}})
			}
		}
	}
	for k := range r.relayed {
		if k.region == gone {
			delete(r.relayed, k) // a coordinator counts it as acknowledged
		}
	}
	r.tryCompleteShutdown()
	return r.done()
}

// handOverAcked: region from has taken the hand-over of s this region sent it.
func (r *regionCore[M]) handOverAcked(from RegionID, s ShardID) regionDecisions[M] {
	if r.handedOver[s] == from {
		delete(r.handedOver, s)
		r.tryCompleteShutdown()
	}
	return r.done()
}

// coordinatorLost: the coordinator terminated or moved; register again.
func (r *regionCore[M]) coordinatorLost() regionDecisions[M] {
	if r.registered {
		r.lostEpochs = remember(r.lostEpochs, r.coordEpoch, maxLostEpochs)
	}
	r.registered = false
	r.startRegistration()
	return r.done()
}

// gracefulShutdown starts handing off this region's shards; the region stops once it
// hosts none and holds no message.
func (r *regionCore[M]) gracefulShutdown() regionDecisions[M] {
	if !r.shuttingDown {
		r.shuttingDown = true
		if !r.everRegistered && r.registerSent && !r.cfg.proxy {
			r.timers.start(&r.out.timers, timerKey{kind: timerLeaveUnknown}, 2*r.cfg.retryInterval, false)
		}
		r.act(regionAction[M]{kind: actToCandidates, proto: msgGracefulShutdownReq{}})
		// Asked again now that the coordinator knows this region leaves: a shard that
		// gets no home is answered (msgNoShardHome) instead of being asked about until
		// the shutdown times out.
		for _, s := range r.shardsWanting() {
			r.requestHomeIfUnknown(s)
		}
		r.tryCompleteShutdown()
	}
	return r.done()
}

// maxLostEpochs bounds regionCore.lostEpochs: a lost coordinator's late messages reach
// the region soon after, and few incarnations end in that while.
const maxLostEpochs = 4

// shutdownAck handles a coordinator's word that this region, which leaves, hosts no
// shard there and will be given none (msgGracefulShutdownAck of the coordinator
// incarnation epoch). While registered, the region takes it only from the incarnation
// it registered with; while it registers again (its coordinator crashed or moved),
// not from one it lost (lostEpochs): that word is late, and says nothing of the next
// coordinator, which knows the region from the stored state and may have given it a
// shard. (The word of another incarnation holds: it knows the region from the stored
// state too, and answers a request the region sent it.) A region that never registered
// takes any: a coordinator that said so registers it afterwards only as leaving
// (coordinator.register). Whichever coordinator registers the region while it leaves
// is asked again (registerAck).
func (r *regionCore[M]) shutdownAck(epoch uint64) {
	if !r.shuttingDown {
		return
	}
	if r.registered && epoch != r.coordEpoch || !r.registered && slices.Contains(r.lostEpochs, epoch) {
		return
	}
	r.shutdownAcked = true
	r.tryCompleteShutdown()
}

// noShardHome handles the coordinator's word that no region can host s. A region that
// leaves drops what it holds for s, the hand-over it owes included, instead of
// waiting until its shutdown times out for a home that may never come; it stops once
// it holds nothing more. A region that stays keeps what it holds and asks again.
func (r *regionCore[M]) noShardHome(s ShardID) {
	if !r.shuttingDown || r.waiting[s] != "" {
		return
	}
	if _, known := r.homes[s]; known {
		return // the answer to a request before the home was known
	}
	if b := r.buffers[s]; b != nil {
		err := fmt.Errorf("%w: shard %q, while this region leaves", ErrNoRegion, s)
		for _, m := range b.msgs {
			r.drop(s, m, err)
		}
		r.total -= len(b.msgs)
		delete(r.buffers, s)
	}
	delete(r.owes, s)
	delete(r.target, s)
	r.tryCompleteShutdown()
}

// stopNow gives up: every buffered message is dropped (reported) and the region stops.
// For a graceful shutdown that did not finish in time.
func (r *regionCore[M]) stopNow() regionDecisions[M] {
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		for _, m := range r.buffers[s].msgs {
			r.drop(s, m, errStoppedLoss)
		}
	}
	clear(r.buffers)
	r.total = 0
	r.stopped = true
	r.out.stop = true
	return r.done()
}

// timer handles a fired timer.
func (r *regionCore[M]) timer(key timerKey) regionDecisions[M] {
	if !r.timers.fired(key) {
		return r.done()
	}
	switch key.kind {
	case timerRegisterRetry:
		if !r.registered {
			r.register()
			r.scheduleRegistration()
		}
	case timerRetry:
		r.ticks++
		r.forgetRelayed()
		if !r.registered {
			r.register()
		} else {
			for _, s := range r.shardsWanting() {
				r.requestHomeIfUnknown(s)
			}
		}
		if r.shuttingDown {
			r.act(regionAction[M]{kind: actToCandidates, proto: msgGracefulShutdownReq{}})
		}
		r.tryCompleteShutdown()
	case timerLeaveUnknown:
		if !r.everRegistered {
			r.shutdownAcked = true // no coordinator answered: none knows this region
			r.tryCompleteShutdown()
		}
	case timerHandOverWait:
		if p, ok := r.waiting[key.shard]; ok {
			r.problem(fmt.Errorf("%w: shard %q, predecessor %q, after %v; delivering what is here",
				errHandOverWait, key.shard, p, r.cfg.handOffTimeout))
			r.endWait(key.shard)
			r.flush(key.shard)
		}
	case timerRestartShard:
		if r.homes[key.shard] == r.self && r.local[key.shard] == nil && !r.shuttingDown {
			r.startShard(key.shard)
		}
	}
	return r.done()
}

// ---- registration ----

func (r *regionCore[M]) startRegistration() {
	r.nextRegDelay = max(minRegisterDelay, r.cfg.retryInterval/8)
	r.register()
	r.scheduleRegistration()
}

func (r *regionCore[M]) register() {
	r.registerSent = true
	r.act(regionAction[M]{kind: actRegister})
}

// scheduleRegistration arms the next registration attempt while the backoff is below the
// retry interval, doubling it; from then on the retry tick registers.
func (r *regionCore[M]) scheduleRegistration() {
	if r.nextRegDelay < r.cfg.retryInterval {
		r.timers.start(&r.out.timers, timerKey{kind: timerRegisterRetry}, r.nextRegDelay, false)
		r.nextRegDelay *= 2
	}
}

func (r *regionCore[M]) registerAck(epoch uint64) {
	again := r.registered // a second answer of the same coordinator
	r.registered, r.everRegistered = true, true
	r.coordEpoch = epoch
	r.lostEpochs = slices.DeleteFunc(r.lostEpochs, func(e uint64) bool { return e == epoch })
	r.timers.cancel(&r.out.timers, timerKey{kind: timerRegisterRetry})
	for _, s := range slices.Sorted(maps.Keys(r.unsent)) {
		r.act(regionAction[M]{kind: actToCoordinator, proto: msgShardStopped{Shard: s, Pending: r.owes[s]}})
	}
	clear(r.unsent)
	if !again {
		r.passRelayed()
	}
	if r.shuttingDown {
		// A coordinator that registers this region (again, or after it moved) no
		// longer counts it as leaving and may give it shards: an acknowledgement from
		// before says nothing about them. Ask again.
		r.shutdownAcked = false
		r.act(regionAction[M]{kind: actToCoordinator, proto: msgGracefulShutdownReq{}})
	}
	for _, s := range r.shardsWanting() {
		r.requestHomeIfUnknown(s)
	}
}

// shardsWanting returns the shards that have buffered messages or owe a hand-over.
func (r *regionCore[M]) shardsWanting() []ShardID {
	set := maps.Clone(r.owes)
	for s := range r.buffers {
		set[s] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (r *regionCore[M]) requestHomeIfUnknown(s ShardID) {
	if _, known := r.homes[s]; !known && r.registered {
		r.act(regionAction[M]{kind: actToCoordinator, proto: msgGetShardHome{Shard: s, HandOver: r.owes[s]}})
	}
}

// ---- routing ----

// route delivers msg for s directly when possible, else buffers it.
func (r *regionCore[M]) route(s ShardID, msg M) {
	home, known := r.homes[s]
	if known && r.buffers[s] == nil && r.waiting[s] == "" {
		if home != r.self {
			r.act(regionAction[M]{kind: actForward, shard: s, to: home, msg: msg})
			return
		}
		if ls := r.local[s]; ls != nil && ls.ready && !ls.handingOff {
			r.act(regionAction[M]{kind: actDeliver, shard: s, msg: msg})
			return
		}
	}
	if known && home == r.self && r.local[s] == nil {
		r.startShard(s)
	}
	r.buffer(s, msg)
}

// deliversLocally reports whether a message for shard s would go straight to s's
// actor here (what route does first), so that the shell may try its fast path.
func (r *regionCore[M]) deliversLocally(s ShardID) bool {
	_, _, local := r.firstRoute(s)
	return local
}

// firstRoute says what route does first with a message for shard s, with one
// look-up of s's home, for the shell's path of every message: forward when it would
// forward it to home, another region; local when it would send it straight to s's
// actor here (deliversLocally); neither when it would do anything else with it.
func (r *regionCore[M]) firstRoute(s ShardID) (home RegionID, forward, local bool) {
	home, known := r.homes[s]
	if !known || r.buffers[s] != nil || r.waiting[s] != "" {
		return "", false, false
	}
	if home != r.self {
		return home, true, false
	}
	ls := r.local[s]
	return "", false, ls != nil && ls.ready && !ls.handingOff
}

// buffer appends msg to s's buffer, or drops it when the region's buffers are full.
func (r *regionCore[M]) buffer(s ShardID, msg M) {
	if r.total >= r.cfg.bufferSize {
		r.drop(s, msg, fmt.Errorf("%w: %d messages buffered (shard %q)", ErrBufferFull, r.total, s))
		return
	}
	b := r.buffers[s]
	if b == nil {
		b = &shardBuffer[M]{}
		r.buffers[s] = b
		r.requestHomeIfUnknown(s)
	}
	b.msgs = append(b.msgs, msg)
	r.total++
}

// bufferHandOver puts a handed-over message after earlier handed-over ones but before
// every other buffered message. It is not bounded by the buffer size: another region
// accepted it already.
func (r *regionCore[M]) bufferHandOver(s ShardID, msg M) {
	b := r.buffers[s]
	if b == nil {
		b = &shardBuffer[M]{}
		r.buffers[s] = b
		r.requestHomeIfUnknown(s)
	}
	b.msgs = slices.Insert(b.msgs, b.handOver, msg)
	b.handOver++
	r.total++
}

// flush delivers s's buffer, and the hand-over this region owes for s, once they can
// go: never while a predecessor's hand-over is awaited; an owed hand-over (the whole
// buffer, then the end marker) to the region named by HandOverTo, or else to the known
// home; other messages to the local shard once it is ready, or as plain forwards to the
// home.
func (r *regionCore[M]) flush(s ShardID) {
	if r.waiting[s] != "" {
		return
	}
	if r.owes[s] {
		dest, ok := r.target[s]
		if !ok {
			dest, ok = r.homes[s]
		}
		if !ok {
			return
		}
		delete(r.owes, s)
		delete(r.target, s)
		if dest != r.self {
			var msgs []M
			if b := r.buffers[s]; b != nil {
				msgs = b.msgs
				r.total -= len(b.msgs)
				delete(r.buffers, s)
			}
			r.act(regionAction[M]{kind: actHandOver, shard: s, to: dest, msgs: msgs})
			r.handedOver[s] = dest
			r.tryCompleteShutdown()
			return
		}
	}
	home, known := r.homes[s]
	b := r.buffers[s]
	if !known || b == nil {
		return
	}
	if home == r.self {
		ls := r.local[s]
		if ls == nil {
			r.startShard(s)
			return
		}
		if !ls.ready || ls.handingOff {
			return
		}
		for _, m := range b.msgs {
			r.act(regionAction[M]{kind: actDeliver, shard: s, msg: m})
		}
	} else {
		for _, m := range b.msgs {
			r.act(regionAction[M]{kind: actForward, shard: s, to: home, msg: m})
		}
	}
	r.total -= len(b.msgs)
	delete(r.buffers, s)
	r.tryCompleteShutdown()
}

func (r *regionCore[M]) startShard(s ShardID) {
	if r.cfg.proxy {
		r.problem(fmt.Errorf("%w: shard %q", errProxyHost, s))
		return
	}
	r.local[s] = &localShard{}
	r.act(regionAction[M]{kind: actStartShard, shard: s})
}

// endWait stops waiting for s's predecessor (its hand-over ended, it is gone, or the
// wait timed out); a HostShard resend naming it later does not wait again.
func (r *regionCore[M]) endWait(s ShardID) {
	p, ok := r.waiting[s]
	if !ok {
		return
	}
	if r.overDone[s] == nil {
		r.overDone[s] = map[RegionID]bool{}
	}
	r.overDone[s][p] = true
	delete(r.waiting, s)
	r.timers.cancel(&r.out.timers, timerKey{kind: timerHandOverWait, shard: s})
	r.tryCompleteShutdown()
}

// tryCompleteShutdown stops a region that is shutting down once it hosts no shard,
// holds no message, owes no hand-over, awaits none, and has every hand-over it sent
// acknowledged, and (when a coordinator knows it) the coordinator has said that it
// hosts nothing there either (msgGracefulShutdownAck).
func (r *regionCore[M]) tryCompleteShutdown() {
	acked := r.shutdownAcked || r.cfg.proxy || !r.registerSent
	if r.shuttingDown && !r.stopped && acked && len(r.local) == 0 && r.total == 0 && len(r.owes) == 0 &&
		len(r.waiting) == 0 && len(r.handedOver) == 0 {
		r.stopped = true
		r.out.stop = true
	}
}

// ---- output helpers ----

// recycle takes back the actions of decisions the shell has carried out, so that the
// next decisions reuse their array instead of allocating one per message. The shell
// must not touch actions afterwards.
func (r *regionCore[M]) recycle(actions []regionAction[M]) { reuse(&r.out.actions, actions) }

func (r *regionCore[M]) act(a regionAction[M]) {
	r.out.actions = append(r.out.actions, a)
}

func (r *regionCore[M]) drop(s ShardID, msg M, err error) {
	r.out.dropped = append(r.out.dropped, droppedMsg[M]{shard: s, msg: msg, err: err})
}

func (r *regionCore[M]) problem(err error) {
	r.out.problems = append(r.out.problems, err)
}
