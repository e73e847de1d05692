package sharding

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Shard defaults (Akka's).
const (
	defaultEntityRestartBackoff = 10 * time.Second
	// handOffStopMargin: entities that ignore the hand-off stop message are stopped hard
	// after max(handoff-timeout - handOffStopMargin, minForceStop).
	handOffStopMargin = 5 * time.Second
	minForceStop      = time.Second
)

// shardSettings configures a shard core. Zero values mean the defaults.
type shardSettings[M any] struct {
	rememberEntities     bool          // entities are recorded in a durable store and restarted
	handOffTimeout       time.Duration // 60 s; entities are stopped hard 5 s before it (at least after 1 s)
	entityRestartBackoff time.Duration // a remembered entity that stops on its own restarts after this (10 s)
	idleTimeout          time.Duration // passivate entities idle this long; 0: never (not with remember-entities)
	activeLimit          int           // passivate the least recently used beyond this many; 0: no limit (not with remember-entities)
	bufferSize           int           // messages waiting for entities, in all (100 000)
	stopMessage          M             // sent to entities at hand-off and at automatic passivation
}

func (s shardSettings[M]) withDefaults() shardSettings[M] {
	if s.handOffTimeout <= 0 {
		s.handOffTimeout = defaultHandOffTimeout
	}
	if s.entityRestartBackoff <= 0 {
		s.entityRestartBackoff = defaultEntityRestartBackoff
	}
	if s.bufferSize <= 0 {
		s.bufferSize = defaultBufferSize
	}
	if s.idleTimeout < 0 {
		s.idleTimeout = 0
	}
	if s.activeLimit < 0 {
		s.activeLimit = 0
	}
	return s
}

// forceStopAfter is how long a hand-off waits for entities to obey the stop message.
func (s shardSettings[M]) forceStopAfter() time.Duration {
	return max(s.handOffTimeout-handOffStopMargin, minForceStop)
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
// entity's next incarnation (rare) live in shardCore.held, and whether it is in the
// least-recently-used list follows from its links.
type entity[M any] struct {
	id         EntityID
	lastActive int64 // when it last got a message, in Unix nanoseconds
	// prev and next link the entity into shardCore.lru while it is active: an
	// intrusive list costs no allocation per entity.
	prev, next *entity[M]
	state      entityState
	restart    bool // StartEntity while passivating: start again even without messages
}

// buf returns the messages held for e's next incarnation.
func (s *shardCore[M]) buf(e *entity[M]) []queued[M] { return s.held[e] }

// holds reports whether messages are held for e's next incarnation.
func (s *shardCore[M]) holds(e *entity[M]) bool { return len(s.held[e]) > 0 }

// takeBuf returns the messages held for e and holds none any more.
func (s *shardCore[M]) takeBuf(e *entity[M]) []queued[M] {
	b := s.held[e]
	delete(s.held, e)
	return b
}

// shardActionKind says what a shardAction asks the shell to do.
type shardActionKind uint8

const (
	// shardSpawn: start the entity actor (a child named by the entity ID) and watch it;
	// its end comes back as entityTerminated.
	shardSpawn shardActionKind = iota + 1
	// shardDeliver: give msg to the entity.
	shardDeliver
	// shardStopEntity: send msg (a stop message) to the entity.
	shardStopEntity
	// shardKill: stop the entity actor now (it ignored the hand-off stop message).
	shardKill
)

// shardAction is one thing to do for one entity.
type shardAction[M any] struct {
	kind   shardActionKind
	entity EntityID
	msg    M
}

// entityStoreOp is one write to the remember-entities store.
type entityStoreOp struct {
	started []EntityID
	stopped []EntityID
}

// shardDecisions is what one input to a shard core asks the shell to do.
type shardDecisions[M any] struct {
	actions []shardAction[M] // in order
	// store, when set, is a write to the remember-entities store; the shell answers
	// stored or storeFailed. At most one write is outstanding.
	store *entityStoreOp
	// load asks for the remembered entity IDs; the shell answers entitiesLoaded.
	load bool
	// ready: tell the region the shard takes messages (region shardReady).
	ready bool
	// stopped: the shard is done (after a hand-off): stop the shard actor and give
	// leftovers, the messages it held undelivered in arrival order, to the region
	// (region shardTerminated).
	stopped   bool
	leftovers []M
	timers    []timerOp
	dropped   []droppedMsg[M]
	problems  []error
}

type shardPhase uint8

const (
	shardLoading    shardPhase = iota // waiting for the remembered entity IDs
	shardRunning                      // taking messages
	shardHandingOff                   // stopping its entities
	shardStopped                      // done
)

// shardCore is a shard's entity bookkeeping as a pure state machine: which entities run,
// which are stopping or waiting for the durable store, the messages that wait for an
// entity's next incarnation, passivation (explicit, idle, and least-recently-used beyond
// a limit), restart of remembered entities, and hand-off. Time is an input.
type shardCore[M any] struct {
	id    ShardID
	cfg   shardSettings[M]
	phase shardPhase

	entities   map[EntityID]*entity[M]
	held       map[*entity[M]][]queued[M] // messages for entities' next incarnations
	lru        lruList[M]                 // active entities, most recently used at the front
	live       int                        // incarnations running (active or passivating)
	buffered   int                        // messages held, in all
	passivated uint64                     // entities stopped by passivation (not by hand-off), for the metrics
	seq        uint64
	early      []queued[M]           // messages that came while loading
	extra      []queued[M]           // messages for unknown entities during a hand-off
	earlyIDs   map[uint64]EntityID   // entity of each early message
	writing    *entityStoreOp        // the store write in flight
	starts     map[EntityID]struct{} // starts to record in the next write
	stops      map[EntityID]struct{} // stops to record in the next write

	timers timerSet
	out    shardDecisions[M]
}

// newShardCore returns the core of shard id.
func newShardCore[M any](id ShardID, cfg shardSettings[M]) *shardCore[M] {
	return &shardCore[M]{
		id:       id,
		cfg:      cfg.withDefaults(),
		entities: map[EntityID]*entity[M]{},
		held:     map[*entity[M]][]queued[M]{},
		earlyIDs: map[uint64]EntityID{},
		starts:   map[EntityID]struct{}{},
		stops:    map[EntityID]struct{}{},
		timers:   timerSet{},
	}
}

func (s *shardCore[M]) done() shardDecisions[M] {
	out := s.out
	s.out = shardDecisions[M]{}
	return out
}

// automatic reports whether idle and least-recently-used passivation apply (not with
// remember-entities, as in Akka: remembered entities are meant to stay up).
func (s *shardCore[M]) automatic() bool { return !s.cfg.rememberEntities }

// start begins the shard: with remember-entities it asks for the remembered IDs first.
func (s *shardCore[M]) start(now time.Time) shardDecisions[M] {
	if s.cfg.rememberEntities {
		s.phase = shardLoading
		s.out.load = true
	} else {
		s.run(now)
	}
	return s.done()
}

// entitiesLoaded starts the remembered entities and opens the shard.
func (s *shardCore[M]) entitiesLoaded(now time.Time, ids []EntityID) shardDecisions[M] {
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
func (s *shardCore[M]) run(now time.Time) {
	s.phase = shardRunning
	s.out.ready = true
	if s.automatic() && s.cfg.idleTimeout > 0 {
		s.timers.start(&s.out.timers, timerKey{kind: timerIdle}, s.cfg.idleTimeout/2, true)
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
func (s *shardCore[M]) deliver(now time.Time, id EntityID, msg M) shardDecisions[M] {
	if id == "" {
		s.drop(msg, errNoShardID)
		return s.done()
	}
	if s.phase == shardStopped {
		s.drop(msg, fmt.Errorf("%w: shard %q has stopped", errStoppedLoss, s.id))
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
func (s *shardCore[M]) room(msg M) bool {
	if s.buffered < s.cfg.bufferSize {
		return true
	}
	s.drop(msg, fmt.Errorf("%w: shard %q holds %d messages", ErrBufferFull, s.id, s.buffered))
	return false
}

func (s *shardCore[M]) drop(msg M, err error) {
	s.out.dropped = append(s.out.dropped, droppedMsg[M]{shard: s.id, msg: msg, err: err})
}

// deliverTo delivers q to entity id or holds it; fresh messages are held only while the
// shard has room.
func (s *shardCore[M]) deliverTo(now time.Time, id EntityID, q queued[M], fresh bool) {
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
		if s.cfg.rememberEntities {
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

// startEntity starts an entity without a message (StartEntity, or a remembered entity
// restarting elsewhere).
func (s *shardCore[M]) startEntity(now time.Time, id EntityID) shardDecisions[M] {
	if id == "" || s.phase != shardRunning {
		return s.done()
	}
	e := s.entityFor(id)
	switch e.state {
	case entNone:
		if s.cfg.rememberEntities {
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
func (s *shardCore[M]) passivate(id EntityID, stopMsg M) shardDecisions[M] {
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

// entityTerminated: the entity's incarnation stopped.
func (s *shardCore[M]) entityTerminated(now time.Time, id EntityID) shardDecisions[M] {
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
	case was == entPassivating && s.cfg.rememberEntities:
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
	case s.cfg.rememberEntities:
		// Stopped without passivating: restart after the backoff.
		e.state = entWaitingRestart
		s.timers.start(&s.out.timers, timerKey{kind: timerEntityRestart, entity: e.id}, s.cfg.entityRestartBackoff, false)
	default:
		e.state = entNone
		s.tidy(e)
	}
	return s.done()
}

// setActiveLimit changes the most entities that may run at once (0: no limit); the
// least recently used beyond it are passivated now.
func (s *shardCore[M]) setActiveLimit(n int) shardDecisions[M] {
	s.cfg.activeLimit = max(n, 0)
	s.enforceLimit()
	return s.done()
}

// timer handles a fired timer.
func (s *shardCore[M]) timer(now time.Time, key timerKey) shardDecisions[M] {
	if !s.timers.fired(key) {
		return s.done()
	}
	switch key.kind {
	case timerEntityRestart:
		if e := s.entities[key.entity]; e != nil && e.state == entWaitingRestart && s.phase == shardRunning {
			s.spawn(now, e)
		}
	case timerIdle:
		s.passivateIdle(now)
	case timerForceStop:
		if s.phase == shardHandingOff {
			var ids []EntityID
			for _, id := range slices.Sorted(maps.Keys(s.entities)) {
				if st := s.entities[id].state; st == entActive || st == entPassivating {
					ids = append(ids, id)
					s.act(shardAction[M]{kind: shardKill, entity: id})
				}
			}
			s.problem(fmt.Errorf("%w: shard %q, %d entities after %v: %v", errForcedStop, s.id, len(ids), s.cfg.forceStopAfter(), ids))
			s.finish()
		}
	}
	return s.done()
}

// ---- helpers ----

func (s *shardCore[M]) entityFor(id EntityID) *entity[M] {
	e := s.entities[id]
	if e == nil {
		e = &entity[M]{id: id}
		s.entities[id] = e
	}
	return e
}

// tidy forgets an entity that has nothing left.
func (s *shardCore[M]) tidy(e *entity[M]) {
	if e.state == entNone && !s.holds(e) && !e.restart {
		delete(s.entities, e.id)
	}
}

// spawn starts a new incarnation of e.
func (s *shardCore[M]) spawn(now time.Time, e *entity[M]) {
	if e.state == entWaitingRestart {
		s.timers.cancel(&s.out.timers, timerKey{kind: timerEntityRestart, entity: e.id})
	}
	e.state = entActive
	e.lastActive = now.UnixNano()
	s.lru.pushFront(e)
	s.live++
	s.act(shardAction[M]{kind: shardSpawn, entity: e.id})
	s.enforceLimit()
}

// touch marks the active entity id used at now (its region delivered to it directly).
func (s *shardCore[M]) touch(now time.Time, id EntityID) {
	if e := s.entities[id]; e != nil && e.state == entActive {
		s.markUsed(now, e)
	}
}

// markUsed records that the active entity e got a message at now.
func (s *shardCore[M]) markUsed(now time.Time, e *entity[M]) {
	e.lastActive = now.UnixNano()
	if s.lru.has(e) {
		s.lru.moveToFront(e)
	}
}

// fastPathAllowed reports whether the region may deliver to this shard's active
// entities directly: not with an active-entity limit, whose least-recently-used order
// must see every delivery.
func (s *shardCore[M]) fastPathAllowed() bool {
	return !s.automatic() || s.cfg.activeLimit == 0
}

// give delivers msg to the active entity e and marks it used.
func (s *shardCore[M]) give(now time.Time, e *entity[M], msg M) {
	s.act(shardAction[M]{kind: shardDeliver, entity: e.id, msg: msg})
	s.markUsed(now, e)
}

// hold keeps q for e's next incarnation (a fresh message only while there is room) and
// reports whether it did.
func (s *shardCore[M]) hold(e *entity[M], q queued[M], fresh bool) bool {
	if fresh && !s.room(q.msg) {
		s.tidy(e)
		return false
	}
	s.held[e] = append(s.held[e], q)
	s.buffered++
	return true
}

// flush delivers what waited for e, in order.
func (s *shardCore[M]) flush(now time.Time, e *entity[M]) {
	buf := s.takeBuf(e)
	s.buffered -= len(buf)
	for _, q := range buf {
		s.deliverTo(now, e.id, q, false)
	}
}

// stopEntity sends msg to the active entity e, which should then stop.
func (s *shardCore[M]) stopEntity(e *entity[M], msg M) {
	if s.phase == shardRunning {
		s.passivated++
	}
	e.state = entPassivating
	s.unlink(e)
	s.act(shardAction[M]{kind: shardStopEntity, entity: e.id, msg: msg})
}

// unlink takes e out of the least-recently-used list.
func (s *shardCore[M]) unlink(e *entity[M]) {
	if s.lru.has(e) {
		s.lru.remove(e)
	}
}

// enforceLimit passivates the least recently used entities beyond the active limit.
func (s *shardCore[M]) enforceLimit() {
	if !s.automatic() || s.cfg.activeLimit == 0 || s.phase == shardHandingOff {
		return
	}
	for s.lru.n > s.cfg.activeLimit {
		s.stopEntity(s.lru.tail, s.cfg.stopMessage)
	}
}

// passivateIdle passivates the entities that got no message for idleTimeout.
func (s *shardCore[M]) passivateIdle(now time.Time) {
	if s.phase != shardRunning {
		return
	}
	idleSince := now.Add(-s.cfg.idleTimeout).UnixNano()
	for e := s.lru.tail; e != nil; {
		if e.lastActive > idleSince {
			break // the list is in order of use
		}
		prev := e.prev
		s.stopEntity(e, s.cfg.stopMessage)
		e = prev
	}
}

// recycle takes back the actions of decisions the shell has carried out (as
// regionCore.recycle).
func (s *shardCore[M]) recycle(actions []shardAction[M]) { reuse(&s.out.actions, actions) }

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

func (s *shardCore[M]) act(a shardAction[M]) {
	s.out.actions = append(s.out.actions, a)
}

func (s *shardCore[M]) problem(err error) {
	s.out.problems = append(s.out.problems, err)
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
