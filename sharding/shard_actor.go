package sharding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"go.uber.org/zap"
)

// shardActor is the shell around ShardCore: one shard of a region, at
// /system/sharding/<type>/<shard>, with its entities as children (named by their
// encoded IDs). With remember-entities it also runs the shard's store as a child.
type shardActor struct {
	pub    published // what this instance added to the type's gauges
	ext    *Sharding
	entry  *typeEntry
	cfg    *EntityConfig
	id     ShardID
	region actor.Ref
	log    *zap.Logger
	drops  *rateLog

	core    *shardcore.ShardCore[*delivery]
	self    actor.Ref
	fast    *fastPath  // shared with the region; holds the running entities (fastpath.go)
	spawned []EntityID // entities spawned by the decisions being carried out

	leaseWanted bool       // the shard waits for its lease before it starts
	lease       *leaseSlot // the lease acquired for this shard, shared with the acquiring goroutine

	store       actor.Ref                // remember-entities store
	storeOp     *shardcore.EntityStoreOp // write waiting for the store's answer
	loading     bool                     // load waiting for the store's answer
	storeBroken bool                     // the store stopped; it is started again after a pause
}

// entitySpawnFailed reports an entity that could not be spawned, as if it had stopped.
type entitySpawnFailed struct{ id EntityID }

// storeRetry restarts a remember-entities store that stopped.
type storeRetry struct{}

// rememberRetryDelay is how long a shard waits before it starts a failed
// remember-entities store again.
const rememberRetryDelay = time.Second

func shardProps(ext *Sharding, e *typeEntry, id ShardID, region actor.Ref, fast *fastPath) *actor.Props {
	return actor.PropsOf(func() actor.Actor {
		return &shardActor{ext: ext, entry: e, cfg: &e.cfg, id: id, region: region, drops: newRateLog(), fast: fast}
	})
}

func (s *shardActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *delivery:
		if m.start {
			s.apply(ctx, s.core.StartEntity(time.Now(), m.entity))
			if !m.sender.IsZero() {
				_ = m.sender.Send(StartEntityAck{ID: m.entity, Shard: s.id}, s.self)
			}
		} else {
			s.apply(ctx, s.core.Deliver(time.Now(), m.entity, m))
		}
		s.fast.handled.Add(1) // every delivery the region counted, once handled
	case passivateRequest:
		id, ok := s.entityOf(ctx.Sender())
		if !ok {
			s.log.Warn("sharding: Passivate from an actor that is not an entity of this shard", zap.Stringer("sender", ctx.Sender()))
			return
		}
		s.apply(ctx, s.core.Passivate(id, &delivery{entity: id, msg: m.stop}))
	case actor.Terminated:
		s.terminated(ctx, m.Ref)
	case entitySpawnFailed:
		s.apply(ctx, s.core.EntityTerminated(time.Now(), m.id))
	case timerFired:
		now := time.Now()
		if m.key.Kind == shardcore.TimerIdle {
			for _, id := range s.fast.usedSinceLastLook() {
				s.core.Touch(now, id)
			}
		}
		s.apply(ctx, s.core.Timer(now, m.key))
	case shardHandOff:
		s.apply(ctx, fastHandOff(s.fast, s.core, time.Now()))
	case getShardEntities:
		_ = ctx.Respond(shardEntities{shard: s.id, ids: s.running()})
	case rememberLoaded:
		if ctx.Sender() == s.store && s.loading {
			s.loading = false
			s.apply(ctx, s.core.EntitiesLoaded(time.Now(), m.ids))
		}
	case rememberWritten:
		if ctx.Sender() == s.store && s.storeOp != nil {
			s.storeOp = nil
			s.apply(ctx, s.core.Stored(time.Now()))
		}
	case rememberFailed:
		if ctx.Sender() == s.store && s.storeOp != nil {
			s.storeOp = nil
			s.apply(ctx, s.core.StoreFailed(m.err))
		}
	case storeRetry:
		s.storeBroken = false
		s.startStore(ctx)
		if s.loading {
			_ = s.store.Send(rememberLoad{}, s.self)
		}
		if s.storeOp != nil {
			_ = s.store.Send(rememberWrite{op: s.storeOp}, s.self)
		}
	case actor.Started:
		s.self = ctx.Self()
		s.log = ctx.Logger().With(zap.String("type", s.entry.name), zap.String("shard", string(s.id)))
		s.core = shardcore.NewShardCore[*delivery](s.id, s.cfg.shardSettings())
		fastStart(s.fast, s.core)
		if s.cfg.Lease != nil {
			s.leaseWanted = true
			s.acquireLease(ctx)
			return
		}
		s.apply(ctx, s.core.Start(time.Now()))
	case leaseAcquired:
		s.leaseAcquired(ctx, m)
	case leaseRetry:
		s.acquireLease(ctx)
	case leaseLost:
		s.log.Error("sharding: the shard lost its lease; stopping it with its entities", zap.Error(m.err))
		_ = ctx.Stop(s.self)
	case actor.Restarting:
		s.unpublish() // its entities stop with this instance
	case actor.Stopped:
		s.unpublish()
		s.fast.setOpen(false)
		s.releaseLease()
		if s.core != nil && !s.core.Stopped() {
			// Stopped without a hand-off (the region or system stops): what it held is lost.
			for _, m := range s.core.Held() {
				s.drop(ctx, m, fmt.Errorf("%w: shard %q stopped", shardcore.ErrStoppedLoss, s.id))
			}
		}
	}
}

// entityOf returns the ID of a child entity's Ref.
func (s *shardActor) entityOf(ref actor.Ref) (EntityID, bool) {
	name, ok := decodeName(ref.Name())
	if !ok {
		return "", false
	}
	id := EntityID(name)
	if cur, ok := s.fast.entities[id]; !ok || cur != ref {
		return "", false
	}
	return id, true
}

func (s *shardActor) terminated(ctx actor.Context, ref actor.Ref) {
	if ref == s.store {
		s.store = actor.Ref{}
		s.storeBroken = true
		s.log.Warn("sharding: remember-entities store stopped; starting it again shortly")
		ctx.StartSingleTimer(storeRetry{}, storeRetry{}, rememberRetryDelay)
		return
	}
	id, ok := s.entityOf(ref)
	if !ok {
		return
	}
	if s.ext.metrics != nil {
		s.entry.stats.entities.Add(-1)
	}
	s.apply(ctx, fastEntityStopped(s.fast, s.core, time.Now(), id))
}

// running returns the IDs of the entities whose incarnation runs, sorted.
func (s *shardActor) running() []EntityID {
	return slices.Sorted(maps.Keys(s.fast.entities))
}

func (s *shardActor) apply(ctx actor.Context, d shardcore.ShardDecisions[*delivery]) {
	for _, p := range d.Problems {
		s.log.Warn("sharding: shard", zap.Error(p))
	}
	for _, a := range d.Actions {
		s.act(ctx, a)
	}
	s.core.Recycle(d.Actions)
	if s.ext.metrics != nil {
		s.pub.sync(s.entry.stats, int64(s.core.Buffered()), s.core.Passivated())
	}
	// Entities spawned by these decisions have had what waited for them: those still
	// active may be reached directly from now on.
	fastListSpawned(s.fast, s.core, s.spawned)
	s.spawned = s.spawned[:0]
	if d.Load {
		s.loading = true
		s.startStore(ctx)
		if !s.store.IsZero() {
			_ = s.store.Send(rememberLoad{}, s.self)
		}
	}
	if d.Store != nil {
		s.storeOp = d.Store
		s.startStore(ctx)
		if !s.store.IsZero() {
			_ = s.store.Send(rememberWrite{op: d.Store}, s.self)
		}
	}
	applyTimers(ctx, d.Timers)
	for _, x := range d.Dropped {
		s.drop(ctx, x.Msg, x.Err)
	}
	if d.Ready {
		_ = s.region.Tell(shardReady{shard: s.id})
	}
	if d.Stopped {
		_ = s.region.Tell(shardLeftovers{shard: s.id, msgs: d.Leftovers})
		_ = ctx.Stop(s.self)
	}
}

func (s *shardActor) act(ctx actor.Context, a shardcore.ShardAction[*delivery]) {
	switch a.Kind {
	case shardcore.ShardSpawn:
		ref, err := ctx.Spawn(s.cfg.props(a.Entity), encodeName(string(a.Entity)))
		if err != nil {
			s.log.Error("sharding: cannot start entity", zap.String("entity", string(a.Entity)), zap.Error(err))
			_ = s.self.Tell(entitySpawnFailed{id: a.Entity})
			return
		}
		ctx.Watch(ref)
		s.fast.add(a.Entity, ref)
		s.spawned = append(s.spawned, a.Entity)
		s.entry.stats.entitiesStarted.Add(1)
		if s.ext.metrics != nil {
			s.entry.stats.entities.Add(1)
		}
	case shardcore.ShardDeliver:
		if !s.fast.toEntity(a.Entity, a.Msg.msg, a.Msg.sender, a.Msg.trace) {
			s.drop(ctx, a.Msg, fmt.Errorf("%w: entity %q has no actor", shardcore.ErrStoppedLoss, a.Entity))
		}
	case shardcore.ShardStopEntity:
		s.fast.stopEntity(a.Entity, a.Msg.msg, s.self)
	case shardcore.ShardKill:
		s.fast.setListed(a.Entity, false)
		if ref, ok := s.fast.entities[a.Entity]; ok {
			_ = ctx.Stop(ref)
		}
	}
}

// startStore starts the remember-entities store child unless it runs (or waits to be
// started again).
func (s *shardActor) startStore(ctx actor.Context) {
	if !s.store.IsZero() || s.storeBroken {
		return
	}
	ref, err := ctx.Spawn(rememberStoreProps(s.ext, s.entry, s.id), "")
	if err != nil {
		s.log.Error("sharding: cannot start the remember-entities store", zap.Error(err))
		s.storeBroken = true
		ctx.StartSingleTimer(storeRetry{}, storeRetry{}, rememberRetryDelay)
		return
	}
	ctx.Watch(ref)
	s.store = ref
}

// drop sends an undeliverable message to dead letters, counts and logs it.
func (s *shardActor) drop(ctx actor.Context, d *delivery, err error) {
	if isBufferFull(err) {
		s.entry.stats.bufferDropped.Add(1)
	} else {
		s.entry.stats.undelivered.Add(1)
	}
	msg := d.UserMessage()
	if d.start || d.msg != nil {
		ctx.System().PublishDeadLetter(ctx.Self(), msg, d.sender, err)
	}
	s.drops.warn(s.log, "sharding: message dropped; sent to dead letters", zap.String("entity", string(d.entity)),
		zap.String("message", fmt.Sprintf("%T", msg)), zap.Error(err))
}

// acquireLease asks for the shard's lease on a goroutine of its own; the answer comes
// back as leaseAcquired.
func (s *shardActor) acquireLease(ctx actor.Context) {
	owner := ctx.System().Address().HostPort()
	if owner == "" {
		owner = ctx.System().Address().String()
	}
	l, err := s.cfg.Lease(leaseName(s.entry.name, s.id), owner)
	if err != nil {
		s.log.Error("sharding: cannot create the shard's lease; retrying", zap.Error(err))
		ctx.StartSingleTimer(leaseRetry{}, leaseRetry{}, leaseRetryInterval)
		return
	}
	self := s.self
	if s.lease == nil {
		s.lease = &leaseSlot{}
	}
	slot := s.lease
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
		defer cancel()
		ok, err := l.Acquire(cctx, func(err error) { _ = self.Tell(leaseLost{err: err}) })
		if ok && err == nil && !slot.hold(l) {
			_, _ = l.Release(cctx) // the shard stopped meanwhile
			return
		}
		_ = self.Tell(leaseAcquired{lease: l, ok: ok, err: err})
	}()
}

func (s *shardActor) leaseAcquired(ctx actor.Context, m leaseAcquired) {
	if !s.leaseWanted {
		return
	}
	if !m.ok || m.err != nil {
		s.drops.warn(s.log, "sharding: the shard's lease is held elsewhere or unreachable; retrying",
			zap.Bool("held_elsewhere", m.err == nil), zap.Error(m.err))
		ctx.StartSingleTimer(leaseRetry{}, leaseRetry{}, leaseRetryInterval)
		return
	}
	s.leaseWanted = false
	s.apply(ctx, s.core.Start(time.Now()))
}

// releaseLease gives the lease up as the shard stops, on a goroutine of its own (also
// when the acquisition succeeded but its answer had not been handled yet).
func (s *shardActor) releaseLease() {
	if s.lease == nil {
		return
	}
	l := s.lease.close()
	if l == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
		defer cancel()
		_, _ = l.Release(ctx)
	}()
}

// leaseSlot hands an acquired lease from the acquiring goroutine to the shard, so that
// a lease acquired while (or after) the shard stops is released, never kept.
type leaseSlot struct {
	mu     sync.Mutex
	closed bool
	held   Lease
}

// hold records an acquired lease; false when the shard has stopped.
func (l *leaseSlot) hold(lease Lease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.held = lease
	return true
}

// close marks the shard stopped and returns the lease it holds, if any.
func (l *leaseSlot) close() Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	h := l.held
	l.held = nil
	return h
}

// unpublish takes back what this instance added to its type's gauges when it stops.
func (s *shardActor) unpublish() {
	if s.ext.metrics == nil {
		return
	}
	s.entry.stats.entities.Add(-int64(len(s.fast.entities)))
	s.pub.sync(s.entry.stats, 0, s.pub.passivations)
}
