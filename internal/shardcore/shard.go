package shardcore

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/troupe-go/troupe/sharding/placement"
)

// Shard defaults (Akka's).
const (
	DefaultEntityRestartBackoff = 10 * time.Second
	// handOffStopMargin: entities that ignore the hand-off stop message are stopped hard
	// after max(handoff-timeout - handOffStopMargin, minForceStop).
	handOffStopMargin = 5 * time.Second
	minForceStop      = time.Second
)

// ShardSettings configures a shard core. Zero values mean the defaults.
type ShardSettings[M any] struct {
	RememberEntities     bool          // entities are recorded in a durable store and restarted
	HandOffTimeout       time.Duration // 60 s; entities are stopped hard 5 s before it (at least after 1 s)
	EntityRestartBackoff time.Duration // a remembered entity that stops on its own restarts after this (10 s)
	IdleTimeout          time.Duration // passivate entities idle this long; 0: never (not with remember-entities)
	ActiveLimit          int           // passivate the least recently used beyond this many; 0: no limit (not with remember-entities)
	BufferSize           int           // messages waiting for entities, in all (100 000)
	StopMessage          M             // sent to entities at hand-off and at automatic passivation
}

func (s ShardSettings[M]) withDefaults() ShardSettings[M] {
	if s.HandOffTimeout <= 0 {
		s.HandOffTimeout = DefaultHandOffTimeout
	}
	if s.EntityRestartBackoff <= 0 {
		s.EntityRestartBackoff = DefaultEntityRestartBackoff
	}
	if s.BufferSize <= 0 {
		s.BufferSize = DefaultBufferSize
	}
	if s.IdleTimeout < 0 {
		s.IdleTimeout = 0
	}
	if s.ActiveLimit < 0 {
		s.ActiveLimit = 0
	}
	return s
}

// forceStopAfter is how long a hand-off waits for entities to obey the stop message.
func (s ShardSettings[M]) forceStopAfter() time.Duration {
	return max(s.HandOffTimeout-handOffStopMargin, minForceStop)
}

// entityState is where an entity is in its life.
type entityState uint8

const (
	// entNone: no incarnation and nothing pending; only kept for buffered messages
	// during a hand-off.
	entNone entityState = iota
	// entActive: an incarnation runs and takes messages.
	entActive
	// entPassivating: its stop message was sent; messages wait for the next incarnation.
	entPassivating
	// entRememberingStart: waiting for the store to confirm the start (remember-entities);
	// messages wait.
	entRememberingStart
	// entRememberingStop: stopped after passivating; waiting for the store to confirm the
	// stop (remember-entities); messages wait and restart it afterwards.
	entRememberingStop
	// entWaitingRestart: a remembered entity stopped without passivating; it restarts
	// after the entity restart backoff, or at once when a message comes.
	entWaitingRestart
)

var entityStateNames = [...]string{"none", "active", "passivating", "remembering-start", "remembering-stop", "waiting-restart"}

func (s entityState) String() string {
	if int(s) < len(entityStateNames) {
		return entityStateNames[s]
	}
	return fmt.Sprintf("entityState(%d)", s)
}

// queued is a message waiting in the shard, numbered in arrival order.
type queued[M any] struct {
	seq uint64
	msg M
}

// entity is the shard's record of one entity. A million idle entities are a headline
// figure, so the record is 48 bytes, an allocator size class: the messages held for an
// entity's next incarnation (rare) live in ShardCore.held, and whether it is in the
// least-recently-used list follows from its links.
type entity[M any] struct {
	id         placement.EntityID
	lastActive int64 // when it last got a message, in Unix nanoseconds
	// prev and next link the entity into ShardCore.lru while it is active: an
	// intrusive list costs no allocation per entity.
	prev, next *entity[M]
	state      entityState
	restart    bool // StartEntity while passivating: start again even without messages
}

// buf returns the messages held for e's next incarnation.
func (s *ShardCore[M]) buf(e *entity[M]) []queued[M] { return s.held[e] }

// holds reports whether messages are held for e's next incarnation.
func (s *ShardCore[M]) holds(e *entity[M]) bool { return len(s.held[e]) > 0 }

// takeBuf returns the messages held for e and holds none any more.
func (s *ShardCore[M]) takeBuf(e *entity[M]) []queued[M] {
	b := s.held[e]
	delete(s.held, e)
	return b
}

// ShardActionKind says what a ShardAction asks the shell to do.
type ShardActionKind uint8

const (
	// ShardSpawn: start the entity actor (a child named by the entity ID) and watch it;
	// its end comes back as EntityTerminated.
	ShardSpawn ShardActionKind = iota + 1
	// ShardDeliver: give msg to the entity.
	ShardDeliver
	// ShardStopEntity: send msg (a stop message) to the entity.
	ShardStopEntity
	// ShardKill: stop the entity actor now (it ignored the hand-off stop message).
	ShardKill
)

// ShardAction is one thing to do for one entity.
type ShardAction[M any] struct {
	Kind   ShardActionKind    // what to do
	Entity placement.EntityID // the entity
	Msg    M                  // the message to deliver, or the stop message
}

// EntityStoreOp is one write to the remember-entities store.
type EntityStoreOp struct {
	Started []placement.EntityID // entities to record as started
	Stopped []placement.EntityID // entities to record as stopped
}

// ShardDecisions is what one input to a shard core asks the shell to do.
type ShardDecisions[M any] struct {
	Actions []ShardAction[M] // in order
	// Store, when set, is a write to the remember-entities store; the shell answers
	// stored or StoreFailed. At most one write is outstanding.
	Store *EntityStoreOp
	// Load asks for the remembered entity IDs; the shell answers EntitiesLoaded.
	Load bool
	// Ready: tell the region the shard takes messages (region ShardReady).
	Ready bool
	// Stopped: the shard is done (after a hand-off): stop the shard actor and give
	// leftovers, the messages it held undelivered in arrival order, to the region
	// (region ShardTerminated).
	Stopped   bool
	Leftovers []M          // see Stopped
	Timers    []TimerOp    // in order
	Dropped   []Dropped[M] // messages for dead letters
	Problems  []error      // warnings
}

type shardPhase uint8

const (
	shardLoading    shardPhase = iota // waiting for the remembered entity IDs
	shardRunning                      // taking messages
	shardHandingOff                   // stopping its entities
	shardStopped                      // done
)

// ShardCore is a shard's entity bookkeeping as a pure state machine: which entities run,
// which are stopping or waiting for the durable store, the messages that wait for an
// entity's next incarnation, passivation (explicit, idle, and least-recently-used beyond
// a limit), restart of remembered entities, and hand-off. Time is an input.
type ShardCore[M any] struct {
	id    placement.ShardID
	cfg   ShardSettings[M]
	phase shardPhase

	entities   map[placement.EntityID]*entity[M]
	held       map[*entity[M]][]queued[M] // messages for entities' next incarnations
	lru        lruList[M]                 // active entities, most recently used at the front
	live       int                        // incarnations running (active or passivating)
	buffered   int                        // messages held, in all
	passivated uint64                     // entities stopped by passivation (not by hand-off), for the metrics
	seq        uint64
	early      []queued[M]                     // messages that came while loading
	extra      []queued[M]                     // messages for unknown entities during a hand-off
	earlyIDs   map[uint64]placement.EntityID   // entity of each early message
	writing    *EntityStoreOp                  // the store write in flight
	starts     map[placement.EntityID]struct{} // starts to record in the next write
	stops      map[placement.EntityID]struct{} // stops to record in the next write

	timers timerSet
	out    ShardDecisions[M]
}

// NewShardCore returns the core of shard id.
func NewShardCore[M any](id placement.ShardID, cfg ShardSettings[M]) *ShardCore[M] {
	return &ShardCore[M]{
		id:       id,
		cfg:      cfg.withDefaults(),
		entities: map[placement.EntityID]*entity[M]{},
		held:     map[*entity[M]][]queued[M]{},
		earlyIDs: map[uint64]placement.EntityID{},
		starts:   map[placement.EntityID]struct{}{},
		stops:    map[placement.EntityID]struct{}{},
		timers:   timerSet{},
	}
}

func (s *ShardCore[M]) done() ShardDecisions[M] {
	out := s.out
	s.out = ShardDecisions[M]{}
	return out
}

// automatic reports whether idle and least-recently-used passivation apply (not with
// Remember-entities, as in Akka: remembered entities are meant to stay up).
func (s *ShardCore[M]) automatic() bool { return !s.cfg.RememberEntities }

// start begins the shard: with remember-entities it asks for the remembered IDs first.
func (s *ShardCore[M]) Start(now time.Time) ShardDecisions[M] {
	if s.cfg.RememberEntities {
		s.phase = shardLoading
		s.out.Load = true
	} else {
		s.run(now)
	}
	return s.done()
}

// EntitiesLoaded starts the remembered entities and opens the shard.
func (s *ShardCore[M]) EntitiesLoaded(now time.Time, ids []placement.EntityID) ShardDecisions[M] {
	if s.phase == shardStopped {
		return s.done() // handed off while loading; the IDs load again at the next home
	}
	if s.phase != shardLoading {
		s.problem(fmt.Errorf("%w: entity IDs loaded twice (shard %q)", errEntityState, s.id))
		return s.done()
	}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		if id != "" {
			s.spawn(now, s.entityFor(id))
		}
	}
	s.run(now)
	return s.done()
}

// run opens the shard for messages and replays what came while loading.
func (s *ShardCore[M]) run(now time.Time) {
	s.phase = shardRunning
	s.out.Ready = true
	if s.automatic() && s.cfg.IdleTimeout > 0 {
		s.timers.start(&s.out.Timers, TimerKey{Kind: TimerIdle}, s.cfg.IdleTimeout/2, true)
	}
	early := s.early
	s.early = nil
	for _, q := range early {
		s.buffered--
		id := s.earlyIDs[q.seq]
		delete(s.earlyIDs, q.seq)
		s.deliverTo(now, id, q, false)
	}
}

// deliver routes a message to its entity: at once when it runs; kept for the next
// incarnation while it stops or its start is being recorded; starting it when it has no
// incarnation.
func (s *ShardCore[M]) Deliver(now time.Time, id placement.EntityID, msg M) ShardDecisions[M] {
	if id == "" {
		s.drop(msg, errNoShardID)
		return s.done()
	}
	if s.phase == shardStopped {
		s.drop(msg, fmt.Errorf("%w: shard %q has stopped", ErrStoppedLoss, s.id))
		return s.done()
	}
	s.seq++
	q := queued[M]{seq: s.seq, msg: msg}
	if s.phase == shardLoading {
		if s.room(msg) {
			s.earlyIDs[q.seq] = id
			s.early = append(s.early, q)
			s.buffered++
		}
		return s.done()
	}
	s.deliverTo(now, id, q, true)
	return s.done()
}

// room reports whether one more message may be held, dropping msg when not.
func (s *ShardCore[M]) room(msg M) bool {
	if s.buffered < s.cfg.BufferSize {
		return true
	}
	s.drop(msg, fmt.Errorf("%w: shard %q holds %d messages", ErrBufferFull, s.id, s.buffered))
	return false
}

func (s *ShardCore[M]) drop(msg M, err error) {
	s.out.Dropped = append(s.out.Dropped, Dropped[M]{Shard: s.id, Msg: msg, Err: err})
}

// deliverTo delivers q to entity id or holds it; fresh messages are held only while the
// shard has room.
func (s *ShardCore[M]) deliverTo(now time.Time, id placement.EntityID, q queued[M], fresh bool) {
	if s.phase == shardHandingOff || s.phase == shardStopped {
		if e := s.entities[id]; e != nil {
			s.hold(e, q, fresh)
		} else if !fresh || s.room(q.msg) {
			s.extra = append(s.extra, q)
			s.buffered++
		}
		return
	}
	e := s.entityFor(id)
	switch e.state {
	case entActive:
		s.give(now, e, q.msg)
	case entPassivating, entRememberingStart, entRememberingStop:
		s.hold(e, q, fresh)
	case entWaitingRestart:
		s.spawn(now, e)
		s.give(now, e, q.msg)
	case entNone:
		if s.cfg.RememberEntities {
			if s.hold(e, q, fresh) {
				s.recordStart(e)
				s.writeNext()
			}
		} else {
			s.spawn(now, e)
			s.give(now, e, q.msg)
		}
	}
}

// StartEntity starts an entity without a message (StartEntity, or a remembered entity
// restarting elsewhere).
func (s *ShardCore[M]) StartEntity(now time.Time, id placement.EntityID) ShardDecisions[M] {
	if id == "" || s.phase != shardRunning {
		return s.done()
	}
	e := s.entityFor(id)
	switch e.state {
	case entNone:
		if s.cfg.RememberEntities {
			s.recordStart(e)
			s.writeNext()
		} else {
			s.spawn(now, e)
		}
	case entWaitingRestart:
		s.spawn(now, e)
	case entPassivating, entRememberingStop:
		e.restart = true
	}
	return s.done()
}

// passivate: the entity asks to be stopped with stopMsg; messages that come until it has
// stopped wait for its next incarnation.
func (s *ShardCore[M]) Passivate(id placement.EntityID, stopMsg M) ShardDecisions[M] {
	e := s.entities[id]
	switch {
	case s.phase != shardRunning:
		// A hand-off already stops it.
	case e == nil || e.state != entActive && e.state != entPassivating:
		s.problem(fmt.Errorf("%w: passivation of entity %q in state %v (shard %q)", errEntityState, id, stateOf(e), s.id))
	case e.state == entActive:
		s.stopEntity(e, stopMsg)
	}
	return s.done()
}

func stateOf[M any](e *entity[M]) entityState {
	if e == nil {
		return entNone
	}
	return e.state
}

// EntityTerminated: the entity's incarnation stopped.
func (s *ShardCore[M]) EntityTerminated(now time.Time, id placement.EntityID) ShardDecisions[M] {
	if s.phase == shardStopped {
		return s.done() // stopped hard at the end of a hand-off
	}
	e := s.entities[id]
	if e == nil || e.state != entActive && e.state != entPassivating {
		s.problem(fmt.Errorf("%w: termination of entity %q in state %v (shard %q)", errEntityState, id, stateOf(e), s.id))
		return s.done()
	}
	s.live--
	s.unlink(e)
	was := e.state
	if s.phase == shardHandingOff {
		e.state = entNone
		s.tidy(e)
		if s.live == 0 {
			s.finish()
		}
		return s.done()
	}
	switch {
	case was == entPassivating && s.cfg.RememberEntities:
		e.state = entRememberingStop
		s.stops[e.id] = struct{}{}
		s.writeNext()
	case was == entPassivating:
		e.state = entNone
		if s.holds(e) || e.restart {
			e.restart = false
			s.spawn(now, e)
			s.flush(now, e)
		}
		s.tidy(e)
	case s.cfg.RememberEntities:
		// Stopped without passivating: restart after the backoff.
		e.state = entWaitingRestart
		s.timers.start(&s.out.Timers, TimerKey{Kind: TimerEntityRestart, Entity: e.id}, s.cfg.EntityRestartBackoff, false)
	default:
		e.state = entNone
		s.tidy(e)
	}
	return s.done()
}

// setActiveLimit changes the most entities that may run at once (0: no limit); the
// least recently used beyond it are passivated now.
func (s *ShardCore[M]) setActiveLimit(n int) ShardDecisions[M] {
	s.cfg.ActiveLimit = max(n, 0)
	s.enforceLimit()
	return s.done()
}

// timer handles a fired timer.
func (s *ShardCore[M]) Timer(now time.Time, key TimerKey) ShardDecisions[M] {
	if !s.timers.fired(key) {
		return s.done()
	}
	switch key.Kind {
	case TimerEntityRestart:
		if e := s.entities[key.Entity]; e != nil && e.state == entWaitingRestart && s.phase == shardRunning {
			s.spawn(now, e)
		}
	case TimerIdle:
		s.passivateIdle(now)
	case TimerForceStop:
		if s.phase == shardHandingOff {
			var ids []placement.EntityID
			for _, id := range slices.Sorted(maps.Keys(s.entities)) {
				if st := s.entities[id].state; st == entActive || st == entPassivating {
					ids = append(ids, id)
					s.act(ShardAction[M]{Kind: ShardKill, Entity: id})
				}
			}
			s.problem(fmt.Errorf("%w: shard %q, %d entities after %v: %v", errForcedStop, s.id, len(ids), s.cfg.forceStopAfter(), ids))
			s.finish()
		}
	}
	return s.done()
}

// ---- helpers ----

func (s *ShardCore[M]) entityFor(id placement.EntityID) *entity[M] {
	e := s.entities[id]
	if e == nil {
		e = &entity[M]{id: id}
		s.entities[id] = e
	}
	return e
}

// tidy forgets an entity that has nothing left.
func (s *ShardCore[M]) tidy(e *entity[M]) {
	if e.state == entNone && !s.holds(e) && !e.restart {
		delete(s.entities, e.id)
	}
}

// spawn starts a new incarnation of e.
func (s *ShardCore[M]) spawn(now time.Time, e *entity[M]) {
	if e.state == entWaitingRestart {
		s.timers.cancel(&s.out.Timers, TimerKey{Kind: TimerEntityRestart, Entity: e.id})
	}
	e.state = entActive
	e.lastActive = now.UnixNano()
	s.lru.pushFront(e)
	s.live++
	s.act(ShardAction[M]{Kind: ShardSpawn, Entity: e.id})
	s.enforceLimit()
}

// touch marks the active entity id used at now (its region delivered to it directly).
func (s *ShardCore[M]) Touch(now time.Time, id placement.EntityID) {
	if e := s.entities[id]; e != nil && e.state == entActive {
		s.markUsed(now, e)
	}
}

// markUsed records that the active entity e got a message at now.
func (s *ShardCore[M]) markUsed(now time.Time, e *entity[M]) {
	e.lastActive = now.UnixNano()
	if s.lru.has(e) {
		s.lru.moveToFront(e)
	}
}

// FastPathAllowed reports whether the region may deliver to this shard's active
// entities directly: not with an active-entity limit, whose least-recently-used order
// must see every delivery.
func (s *ShardCore[M]) FastPathAllowed() bool {
	return !s.automatic() || s.cfg.ActiveLimit == 0
}

// give delivers msg to the active entity e and marks it used.
func (s *ShardCore[M]) give(now time.Time, e *entity[M], msg M) {
	s.act(ShardAction[M]{Kind: ShardDeliver, Entity: e.id, Msg: msg})
	s.markUsed(now, e)
}

// hold keeps q for e's next incarnation (a fresh message only while there is room) and
// reports whether it did.
func (s *ShardCore[M]) hold(e *entity[M], q queued[M], fresh bool) bool {
	if fresh && !s.room(q.msg) {
		s.tidy(e)
		return false
	}
	s.held[e] = append(s.held[e], q)
	s.buffered++
	return true
}

// flush delivers what waited for e, in order.
func (s *ShardCore[M]) flush(now time.Time, e *entity[M]) {
	buf := s.takeBuf(e)
	s.buffered -= len(buf)
	for _, q := range buf {
		s.deliverTo(now, e.id, q, false)
	}
}

// stopEntity sends msg to the active entity e, which should then stop.
func (s *ShardCore[M]) stopEntity(e *entity[M], msg M) {
	if s.phase == shardRunning {
		s.passivated++
	}
	e.state = entPassivating
	s.unlink(e)
	s.act(ShardAction[M]{Kind: ShardStopEntity, Entity: e.id, Msg: msg})
}

// unlink takes e out of the least-recently-used list.
func (s *ShardCore[M]) unlink(e *entity[M]) {
	if s.lru.has(e) {
		s.lru.remove(e)
	}
}

// enforceLimit passivates the least recently used entities beyond the active limit.
func (s *ShardCore[M]) enforceLimit() {
	if !s.automatic() || s.cfg.ActiveLimit == 0 || s.phase == shardHandingOff {
		return
	}
	for s.lru.n > s.cfg.ActiveLimit {
		s.stopEntity(s.lru.tail, s.cfg.StopMessage)
	}
}

// passivateIdle passivates the entities that got no message for IdleTimeout.
func (s *ShardCore[M]) passivateIdle(now time.Time) {
	if s.phase != shardRunning {
		return
	}
	idleSince := now.Add(-s.cfg.IdleTimeout).UnixNano()
	for e := s.lru.tail; e != nil; {
		if e.lastActive > idleSince {
			break // the list is in order of use
		}
		prev := e.prev
		s.stopEntity(e, s.cfg.StopMessage)
		e = prev
	}
}

// recycle takes back the actions of decisions the shell has carried out (as
// RegionCore.recycle).
func (s *ShardCore[M]) Recycle(actions []ShardAction[M]) { reuse(&s.out.Actions, actions) }

// maxRecycled bounds the action arrays the cores keep for reuse (one large burst does
// not pin a large array).
const maxRecycled = 64

// reuse makes a carried-out array of actions the next decisions' array, when those
// have none yet and it is small, after releasing what it holds.
func reuse[A any](next *[]A, done []A) {
	if *next == nil && cap(done) > 0 && cap(done) <= maxRecycled {
		clear(done)
		*next = done[:0]
	}
}

func (s *ShardCore[M]) act(a ShardAction[M]) {
	s.out.Actions = append(s.out.Actions, a)
}

func (s *ShardCore[M]) problem(err error) {
	s.out.Problems = append(s.out.Problems, err)
}

// byArrival orders queued messages by arrival.
func byArrival[M any](a, b queued[M]) int { return cmp.Compare(a.seq, b.seq) }

// lruList is the intrusive list of a shard's active entities, most recently used at
// the front.
type lruList[M any] struct {
	head, tail *entity[M]
	n          int
}

// has reports whether e is in the list: a linked entity other than the head has a
// previous one.
func (l *lruList[M]) has(e *entity[M]) bool { return e.prev != nil || l.head == e }

func (l *lruList[M]) pushFront(e *entity[M]) {
	e.prev, e.next = nil, l.head
	if l.head != nil {
		l.head.prev = e
	} else {
		l.tail = e
	}
	l.head = e
	l.n++
}

func (l *lruList[M]) remove(e *entity[M]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
	l.n--
}

func (l *lruList[M]) moveToFront(e *entity[M]) {
	if l.head == e {
		return
	}
	l.remove(e)
	l.pushFront(e)
}
