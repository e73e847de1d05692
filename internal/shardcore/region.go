package shardcore

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/troupe-go/troupe/sharding/placement"
)

// Region defaults (Akka's).
const (
	DefaultRetryInterval       = 2 * time.Second
	DefaultBufferSize          = 100_000
	DefaultShardFailureBackoff = 10 * time.Second
	minRegisterDelay           = 100 * time.Millisecond
)

// RegionSettings configures a region core. Zero values mean the defaults.
type RegionSettings struct {
	RetryInterval       time.Duration // retry tick; registration backoff tops out here (2 s)
	BufferSize          int           // messages buffered in all, while homes are unknown (100 000)
	HandOffTimeout      time.Duration // give up waiting for a predecessor's hand-over (60 s)
	ShardFailureBackoff time.Duration // restart a shard that stopped on its own (10 s; remember-entities)
	RememberEntities    bool          // restart shards that stop on their own, after the backoff
	Proxy               bool          // proxy-only: never hosts a shard
}

func (s RegionSettings) withDefaults() RegionSettings {
	if s.RetryInterval <= 0 {
		s.RetryInterval = DefaultRetryInterval
	}
	if s.BufferSize <= 0 {
		s.BufferSize = DefaultBufferSize
	}
	if s.HandOffTimeout <= 0 {
		s.HandOffTimeout = DefaultHandOffTimeout
	}
	if s.ShardFailureBackoff <= 0 {
		s.ShardFailureBackoff = DefaultShardFailureBackoff
	}
	return s
}

// RegionActionKind says what a RegionAction asks the shell to do.
type RegionActionKind uint8

const (
	// ActDeliver: give msg to the local shard actor of shard.
	ActDeliver RegionActionKind = iota + 1
	// ActForward: forward msg (with its original sender) to region to.
	ActForward
	// ActStartShard: create the local shard actor of shard; it reports ShardReady when
	// it can take messages and ShardTerminated when it stops.
	ActStartShard
	// ActHandOffShard: tell the local shard actor of shard to hand off.
	ActHandOffShard
	// ActHandOver: send msgs to region to as the hand-over of shard (marked so that
	// region to knows them as such), in order, then the end-of-hand-over marker; region
	// to feeds them to its core as HandOverIn, the marker as done.
	ActHandOver
	// ActToCoordinator: send proto to the coordinator this region registered with.
	ActToCoordinator
	// ActToRegion: send proto to region to.
	ActToRegion
	// ActRegister: send Register (RegisterProxy for a proxy) to the coordinator
	// candidates: the coordinator path on the oldest Up member of the role, and on older
	// members that are Leaving or Exiting.
	ActRegister
	// ActToCandidates: send proto to the coordinator candidates (as ActRegister).
	ActToCandidates
	// ActWatch: watch region to; its end comes back as RegionTerminated.
	ActWatch
)

// RegionAction is one thing to do; which fields matter depends on Kind.
type RegionAction[M any] struct {
	Kind  RegionActionKind   // what to do
	Shard placement.ShardID  // the shard it concerns
	To    placement.RegionID // the region to send to
	Msg   M                  // the message to deliver or forward
	Msgs  []M                // the messages of a hand-over
	Proto any                // a protocol message to send
}

// Dropped is a message the core could not keep: the shell sends it to dead letters,
// counts it and logs it (rate-limited), naming err.
type Dropped[M any] struct {
	Shard placement.ShardID // the shard it was for
	Msg   M                 // the message
	Err   error             // why it was dropped
}

// RegionDecisions is what one input to a region core asks the shell to do.
type RegionDecisions[M any] struct {
	Actions  []RegionAction[M] // in order
	Timers   []TimerOp         // in order
	Dropped  []Dropped[M]      // messages for dead letters
	Problems []error           // warnings; ErrShardHomeConflict is fatal for the region
	Stop     bool              // stop the region actor now (its graceful shutdown is complete)
}

// localShard is a shard actor of this region.
type localShard struct {
	ready      bool // it reported ShardReady: messages go to it directly
	handingOff bool // HandOff was passed to it
}

// shardBuffer holds a shard's messages while they cannot be delivered. The first
// handOver of them came in a hand-over from a predecessor (or back from this region's
// own stopped shard): they are older than the rest and go first.
type shardBuffer[M any] struct {
	msgs     []M
	handOver int
}

// RegionCore is a region's routing state as a pure state machine: where each shard
// lives, which messages wait, registration with the coordinator, and the hand-off
// protocol that delivers every buffered message at the shard's next home in each
// sender's order. M is the shell's message envelope (message plus sender); the core
// never looks inside.
type RegionCore[M any] struct {
	cfg  RegionSettings
	self placement.RegionID

	registered   bool
	nextRegDelay time.Duration
	// coordEpoch is the epoch of the coordinator incarnation this region registered
	// with last (its RegisterAck's): while registered, only a GracefulShutdownAck of
	// that incarnation counts. lostEpochs holds the last incarnations (at most
	// maxLostEpochs) it was registered with and lost (CoordinatorLost): while it
	// registers again, their late GracefulShutdownAcks do not count (shutdownAck).
	coordEpoch uint64
	lostEpochs []uint64

	homes       map[placement.ShardID]placement.RegionID // known homes; self for shards hosted here
	local       map[placement.ShardID]*localShard
	buffers     map[placement.ShardID]*shardBuffer[M]
	total       int                                      // messages in buffers
	owes        map[placement.ShardID]bool               // told the coordinator Pending: the next home gets a hand-over from us
	target      map[placement.ShardID]placement.RegionID // where to deliver an owed hand-over (HandOverTo)
	waiting     map[placement.ShardID]placement.RegionID // predecessor whose hand-over must come first
	overDone    map[placement.ShardID]map[placement.RegionID]bool
	pendingHost map[placement.ShardID]bool // HostShard while the old shard actor still stops
	unsent      map[placement.ShardID]bool // ShardStopped(Pending) to send once registered
	// handedOver holds the hand-overs this region sent, each to the region that has not
	// acknowledged it yet (HandOverAck). A leaving region does not stop before they
	// are: its termination could reach the next home before the hand-over does (they
	// travel on different lanes), and the next home stops waiting for a predecessor
	// that has terminated, so it would deliver newer messages before the handed-over
	// ones.
	handedOver map[placement.ShardID]placement.RegionID
	// relayed holds the BeginHandOffAcks this region passed on (RelayAck), for as long
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
	// answers the coordinator itself (RegionTerminated): what went through the home
	// may be lost with it.
	ackedVia map[placement.ShardID]ackRoute
	// begun holds the ID of the last BeginHandOff for each shard (beginHandOff).
	begun   map[placement.ShardID]uint64
	watched map[placement.RegionID]bool

	shuttingDown bool
	// everRegistered: a coordinator knows this region and may give it shards, so that
	// leaving, it waits for the coordinator's word that it hosts none (shutdownAcked),
	// and takes no late word of a coordinator it has lost (shutdownAck): the
	// coordinators' stored state knows the region, and while it registers again (its
	// Coordinator crashed or moved) the next one may give it a shard, whatever an
	// earlier one said. A region that has sent Register but never heard RegisterAck
	// may be known too (its Register on its way): leaving, it waits for a
	// Coordinator's word as well (one that had not registered it registers it only as
	// leaving, see coordinator.register), but only for twice the retry interval
	// (TimerLeaveUnknown, which then counts as the word), since there may be no
	// Coordinator at all. (It goes on registering while it leaves: a region that
	// holds messages needs a coordinator to learn their homes, or that they have
	// none.)
	everRegistered bool
	registerSent   bool
	shutdownAcked  bool
	stopped        bool

	timers timerSet
	out    RegionDecisions[M]
}

// NewRegionCore returns the core of region self.
func NewRegionCore[M any](self placement.RegionID, cfg RegionSettings) *RegionCore[M] {
	return &RegionCore[M]{
		cfg:         cfg.withDefaults(),
		self:        self,
		homes:       map[placement.ShardID]placement.RegionID{},
		local:       map[placement.ShardID]*localShard{},
		buffers:     map[placement.ShardID]*shardBuffer[M]{},
		owes:        map[placement.ShardID]bool{},
		target:      map[placement.ShardID]placement.RegionID{},
		waiting:     map[placement.ShardID]placement.RegionID{},
		overDone:    map[placement.ShardID]map[placement.RegionID]bool{},
		pendingHost: map[placement.ShardID]bool{},
		unsent:      map[placement.ShardID]bool{},
		handedOver:  map[placement.ShardID]placement.RegionID{},
		relayed:     map[relayKey]relayedAck{},
		ackedVia:    map[placement.ShardID]ackRoute{},
		begun:       map[placement.ShardID]uint64{},
		watched:     map[placement.RegionID]bool{},
		timers:      timerSet{},
	}
}

// done returns the accumulated decisions and resets them.
func (r *RegionCore[M]) done() RegionDecisions[M] {
	out := r.out
	r.out = RegionDecisions[M]{}
	return out
}

// start begins registration and the retry tick.
func (r *RegionCore[M]) Start() RegionDecisions[M] {
	r.timers.start(&r.out.Timers, TimerKey{Kind: TimerRetry}, r.cfg.RetryInterval, true)
	r.startRegistration()
	return r.done()
}

// deliver routes a message for shard s: to the local shard, to the shard's region, or
// into the buffer while neither can take it (asking the coordinator for the home when
// the first message is buffered).
func (r *RegionCore[M]) Deliver(s placement.ShardID, msg M) RegionDecisions[M] {
	if s == "" {
		r.drop(s, msg, errNoShardID)
	} else {
		r.route(s, msg)
	}
	return r.done()
}

// HandOverIn takes messages that region from handed over for shard s: they are older
// than anything buffered here and go first. done marks the end of from's hand-over.
func (r *RegionCore[M]) HandOverIn(from placement.RegionID, s placement.ShardID, msgs []M, done bool) RegionDecisions[M] {
	for _, m := range msgs {
		r.bufferHandOver(s, m)
	}
	if done {
		if from != "" && from != r.self {
			r.act(RegionAction[M]{Kind: ActToRegion, To: from, Proto: HandOverAck{Shard: s}})
		}
		if r.waiting[s] == from {
			r.endWait(s)
		} else {
			if r.overDone[s] == nil {
				r.overDone[s] = map[placement.RegionID]bool{}
			}
			r.overDone[s][from] = true
		}
	}
	r.flush(s)
	return r.done()
}

// FromCoordinator handles a coordinator message (msg*).
func (r *RegionCore[M]) FromCoordinator(msg any) RegionDecisions[M] {
	switch m := msg.(type) {
	case RegisterAck:
		r.registerAck(m.Epoch)
	case ShardHome:
		r.shardHome(m.Shard, m.Region)
	case ShardHomes:
		for _, e := range m.Homes {
			for _, s := range e.Shards {
				r.shardHome(s, e.Region)
			}
		}
	case HostShard:
		r.hostShard(m.Shard, m.Predecessor)
	case BeginHandOff:
		r.beginHandOff(m.Shard, m.ID)
	case HandOff:
		r.handOff(m.Shard)
	case NoShardHome:
		r.noShardHome(m.Shard)
	case GracefulShutdownAck:
		r.shutdownAck(m.Epoch)
	case HandOverTo:
		if r.owes[m.Shard] {
			r.target[m.Shard] = m.Region
			r.flush(m.Shard)
		}
	default:
		r.problem(fmt.Errorf("sharding: region ignores unknown coordinator message %T", msg))
	}
	return r.done()
}

// StaleRegisterAck: a RegisterAck came from a coordinator that has stopped or moved
// since (the shell drops it): the region does not register with it, but the
// coordinators' stored state knows the region (a coordinator acknowledges a
// registration once it is stored), so that leaving, the region waits for a
// Coordinator's word that it hosts nothing (see everRegistered). That word from the
// same incarnation (epoch, when not 0) does not count either (lostEpochs): the next
// Coordinator knows the region from the stored state and may give it a shard,
// whatever the stale one says.
func (r *RegionCore[M]) StaleRegisterAck(epoch uint64) RegionDecisions[M] {
	r.everRegistered = true
	if epoch != 0 {
		r.lostEpochs = Remember(r.lostEpochs, epoch, maxLostEpochs)
	}
	return r.done()
}

// ShardReady: the local shard actor of s can take messages.
func (r *RegionCore[M]) ShardReady(s placement.ShardID) RegionDecisions[M] {
	if ls := r.local[s]; ls != nil {
		ls.ready = true
		r.flush(s)
	}
	return r.done()
}

// RegionTerminated: another region is gone; forget the homes it had.
func (r *RegionCore[M]) RegionTerminated(gone placement.RegionID) RegionDecisions[M] {
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
				r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: BeginHandOffAck{Shard: s, Region: r.self, ID: route.id}})
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

// HandOverAcked: region from has taken the hand-over of s this region sent it.
func (r *RegionCore[M]) HandOverAcked(from placement.RegionID, s placement.ShardID) RegionDecisions[M] {
	if r.handedOver[s] == from {
		delete(r.handedOver, s)
		r.tryCompleteShutdown()
	}
	return r.done()
}

// CoordinatorLost: the coordinator terminated or moved; register again.
func (r *RegionCore[M]) CoordinatorLost() RegionDecisions[M] {
	if r.registered {
		r.lostEpochs = Remember(r.lostEpochs, r.coordEpoch, maxLostEpochs)
	}
	r.registered = false
	r.startRegistration()
	return r.done()
}

// GracefulShutdown starts handing off this region's shards; the region stops once it
// hosts none and holds no message.
func (r *RegionCore[M]) GracefulShutdown() RegionDecisions[M] {
	if !r.shuttingDown {
		r.shuttingDown = true
		if !r.everRegistered && r.registerSent && !r.cfg.Proxy {
			r.timers.start(&r.out.Timers, TimerKey{Kind: TimerLeaveUnknown}, 2*r.cfg.RetryInterval, false)
		}
		r.act(RegionAction[M]{Kind: ActToCandidates, Proto: GracefulShutdownReq{}})
		// Asked again now that the coordinator knows this region leaves: a shard that
		// gets no home is answered (NoShardHome) instead of being asked about until
		// the shutdown times out.
		for _, s := range r.shardsWanting() {
			r.requestHomeIfUnknown(s)
		}
		r.tryCompleteShutdown()
	}
	return r.done()
}

// maxLostEpochs bounds RegionCore.lostEpochs: a lost coordinator's late messages reach
// the region soon after, and few incarnations end in that while.
const maxLostEpochs = 4

// shutdownAck handles a coordinator's word that this region, which leaves, hosts no
// shard there and will be given none (GracefulShutdownAck of the coordinator
// incarnation epoch). While registered, the region takes it only from the incarnation
// it registered with; while it registers again (its coordinator crashed or moved),
// not from one it lost (lostEpochs): that word is late, and says nothing of the next
// Coordinator, which knows the region from the stored state and may have given it a
// shard. (The word of another incarnation holds: it knows the region from the stored
// state too, and answers a request the region sent it.) A region that never registered
// takes any: a coordinator that said so registers it afterwards only as leaving
// (coordinator.register). Whichever coordinator registers the region while it leaves
// is asked again (registerAck).
func (r *RegionCore[M]) shutdownAck(epoch uint64) {
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
func (r *RegionCore[M]) noShardHome(s placement.ShardID) {
	if !r.shuttingDown || r.waiting[s] != "" {
		return
	}
	if _, known := r.homes[s]; known {
		return // the answer to a request before the home was known
	}
	if b := r.buffers[s]; b != nil {
		err := fmt.Errorf("%w: shard %q, while this region leaves", placement.ErrNoRegion, s)
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

// StopNow gives up: every buffered message is dropped (reported) and the region stops.
// For a graceful shutdown that did not finish in time.
func (r *RegionCore[M]) StopNow() RegionDecisions[M] {
	for _, s := range slices.Sorted(maps.Keys(r.buffers)) {
		for _, m := range r.buffers[s].msgs {
			r.drop(s, m, ErrStoppedLoss)
		}
	}
	clear(r.buffers)
	r.total = 0
	r.stopped = true
	r.out.Stop = true
	return r.done()
}

// timer handles a fired timer.
func (r *RegionCore[M]) Timer(key TimerKey) RegionDecisions[M] {
	if !r.timers.fired(key) {
		return r.done()
	}
	switch key.Kind {
	case TimerRegisterRetry:
		if !r.registered {
			r.register()
			r.scheduleRegistration()
		}
	case TimerRetry:
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
			r.act(RegionAction[M]{Kind: ActToCandidates, Proto: GracefulShutdownReq{}})
		}
		r.tryCompleteShutdown()
	case TimerLeaveUnknown:
		if !r.everRegistered {
			r.shutdownAcked = true // no coordinator answered: none knows this region
			r.tryCompleteShutdown()
		}
	case TimerHandOverWait:
		if p, ok := r.waiting[key.Shard]; ok {
			r.problem(fmt.Errorf("%w: shard %q, predecessor %q, after %v; delivering what is here",
				errHandOverWait, key.Shard, p, r.cfg.HandOffTimeout))
			r.endWait(key.Shard)
			r.flush(key.Shard)
		}
	case TimerRestartShard:
		if r.homes[key.Shard] == r.self && r.local[key.Shard] == nil && !r.shuttingDown {
			r.startShard(key.Shard)
		}
	}
	return r.done()
}

// ---- registration ----

func (r *RegionCore[M]) startRegistration() {
	r.nextRegDelay = max(minRegisterDelay, r.cfg.RetryInterval/8)
	r.register()
	r.scheduleRegistration()
}

func (r *RegionCore[M]) register() {
	r.registerSent = true
	r.act(RegionAction[M]{Kind: ActRegister})
}

// scheduleRegistration arms the next registration attempt while the backoff is below the
// retry interval, doubling it; from then on the retry tick registers.
func (r *RegionCore[M]) scheduleRegistration() {
	if r.nextRegDelay < r.cfg.RetryInterval {
		r.timers.start(&r.out.Timers, TimerKey{Kind: TimerRegisterRetry}, r.nextRegDelay, false)
		r.nextRegDelay *= 2
	}
}

func (r *RegionCore[M]) registerAck(epoch uint64) {
	again := r.registered // a second answer of the same coordinator
	r.registered, r.everRegistered = true, true
	r.coordEpoch = epoch
	r.lostEpochs = slices.DeleteFunc(r.lostEpochs, func(e uint64) bool { return e == epoch })
	r.timers.cancel(&r.out.Timers, TimerKey{Kind: TimerRegisterRetry})
	for _, s := range slices.Sorted(maps.Keys(r.unsent)) {
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: ShardStopped{Shard: s, Pending: r.owes[s]}})
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
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: GracefulShutdownReq{}})
	}
	for _, s := range r.shardsWanting() {
		r.requestHomeIfUnknown(s)
	}
}

// shardsWanting returns the shards that have buffered messages or owe a hand-over.
func (r *RegionCore[M]) shardsWanting() []placement.ShardID {
	set := maps.Clone(r.owes)
	for s := range r.buffers {
		set[s] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func (r *RegionCore[M]) requestHomeIfUnknown(s placement.ShardID) {
	if _, known := r.homes[s]; !known && r.registered {
		r.act(RegionAction[M]{Kind: ActToCoordinator, Proto: GetShardHome{Shard: s, HandOver: r.owes[s]}})
	}
}

// ---- routing ----

// route delivers msg for s directly when possible, else buffers it.
func (r *RegionCore[M]) route(s placement.ShardID, msg M) {
	home, known := r.homes[s]
	if known && r.buffers[s] == nil && r.waiting[s] == "" {
		if home != r.self {
			r.act(RegionAction[M]{Kind: ActForward, Shard: s, To: home, Msg: msg})
			return
		}
		if ls := r.local[s]; ls != nil && ls.ready && !ls.handingOff {
			r.act(RegionAction[M]{Kind: ActDeliver, Shard: s, Msg: msg})
			return
		}
	}
	if known && home == r.self && r.local[s] == nil {
		r.startShard(s)
	}
	r.buffer(s, msg)
}

// DeliversLocally reports whether a message for shard s would go straight to s's
// actor here (what route does first), so that the shell may try its fast path.
func (r *RegionCore[M]) DeliversLocally(s placement.ShardID) bool {
	_, _, local := r.FirstRoute(s)
	return local
}

// FirstRoute says what route does first with a message for shard s, with one
// look-up of s's home, for the shell's path of every message: forward when it would
// forward it to home, another region; local when it would send it straight to s's
// actor here (DeliversLocally); neither when it would do anything else with it.
func (r *RegionCore[M]) FirstRoute(s placement.ShardID) (home placement.RegionID, forward, local bool) {
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
func (r *RegionCore[M]) buffer(s placement.ShardID, msg M) {
	if r.total >= r.cfg.BufferSize {
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
func (r *RegionCore[M]) bufferHandOver(s placement.ShardID, msg M) {
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
func (r *RegionCore[M]) flush(s placement.ShardID) {
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
			r.act(RegionAction[M]{Kind: ActHandOver, Shard: s, To: dest, Msgs: msgs})
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
			r.act(RegionAction[M]{Kind: ActDeliver, Shard: s, Msg: m})
		}
	} else {
		for _, m := range b.msgs {
			r.act(RegionAction[M]{Kind: ActForward, Shard: s, To: home, Msg: m})
		}
	}
	r.total -= len(b.msgs)
	delete(r.buffers, s)
	r.tryCompleteShutdown()
}

func (r *RegionCore[M]) startShard(s placement.ShardID) {
	if r.cfg.Proxy {
		r.problem(fmt.Errorf("%w: shard %q", errProxyHost, s))
		return
	}
	r.local[s] = &localShard{}
	r.act(RegionAction[M]{Kind: ActStartShard, Shard: s})
}

// endWait stops waiting for s's predecessor (its hand-over ended, it is gone, or the
// wait timed out); a HostShard resend naming it later does not wait again.
func (r *RegionCore[M]) endWait(s placement.ShardID) {
	p, ok := r.waiting[s]
	if !ok {
		return
	}
	if r.overDone[s] == nil {
		r.overDone[s] = map[placement.RegionID]bool{}
	}
	r.overDone[s][p] = true
	delete(r.waiting, s)
	r.timers.cancel(&r.out.Timers, TimerKey{Kind: TimerHandOverWait, Shard: s})
	r.tryCompleteShutdown()
}

// tryCompleteShutdown stops a region that is shutting down once it hosts no shard,
// holds no message, owes no hand-over, awaits none, and has every hand-over it sent
// acknowledged, and (when a coordinator knows it) the coordinator has said that it
// hosts nothing there either (GracefulShutdownAck).
func (r *RegionCore[M]) tryCompleteShutdown() {
	acked := r.shutdownAcked || r.cfg.Proxy || !r.registerSent
	if r.shuttingDown && !r.stopped && acked && len(r.local) == 0 && r.total == 0 && len(r.owes) == 0 &&
		len(r.waiting) == 0 && len(r.handedOver) == 0 {
		r.stopped = true
		r.out.Stop = true
	}
}

// ---- output helpers ----

// recycle takes back the actions of decisions the shell has carried out, so that the
// next decisions reuse their array instead of allocating one per message. The shell
// must not touch actions afterwards.
func (r *RegionCore[M]) Recycle(actions []RegionAction[M]) { reuse(&r.out.Actions, actions) }

func (r *RegionCore[M]) act(a RegionAction[M]) {
	r.out.Actions = append(r.out.Actions, a)
}

func (r *RegionCore[M]) drop(s placement.ShardID, msg M, err error) {
	r.out.Dropped = append(r.out.Dropped, Dropped[M]{Shard: s, Msg: msg, Err: err})
}

func (r *RegionCore[M]) problem(err error) {
	r.out.Problems = append(r.out.Problems, err)
}
