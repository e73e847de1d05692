package sharding

import (
	"errors"
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

// regionActor is the shell around RegionCore: the region (or proxy) of one entity type
// on one node, at /system/sharding/<type> (or <type>Proxy). It places incoming messages
// with the extractor, hosts its shards as children, talks to the coordinator and to the
// other regions, and does what its core decides.
type regionActor struct {
	pub   published // what this instance added to the type's gauges
	ext   *Sharding
	entry *typeEntry
	cfg   *EntityConfig
	proxy bool
	log   *zap.Logger
	drops *rateLog

	core   *shardcore.RegionCore[*delivery]
	self   actor.Ref
	selfID RegionID
	view   *memberView
	solo   bool // no cluster

	coordinator actor.Ref
	shards      map[ShardID]actor.Ref
	fast        map[ShardID]*fastPath // per local shard: direct delivery to its running entities
	shardIDs    map[actor.Ref]ShardID
	leftovers   map[ShardID][]*delivery
	regions     map[RegionID]actor.Ref // other regions, resolved
	regionIDs   map[actor.Ref]RegionID // watched regions
	oldest      string                 // the node the coordinator should run on

	// goneCoordinators holds the last coordinators this region registered with and saw
	// terminate, whose late RegisterAcks it drops (fromAnother).
	goneCoordinators []actor.Ref

	// lastRegion is the last region forwardRegion found in regions; cleared when that
	// region is deleted from regions (regions gains entries, and never changes one).
	lastRegion struct {
		id  RegionID
		ref actor.Ref
	}

	// unroutable collects, while one decision is carried out, the messages forwarded to
	// a region that cannot be resolved (an earlier incarnation of a restarted node): its
	// homes are forgotten and the messages routed again once the decision is done.
	unroutable []*delivery
	deadHomes  []RegionID
	// dead holds regions that could not be resolved: homes naming them are ignored (the
	// region asks again at its next retry) until the coordinator learns they are gone.
	dead map[RegionID]bool

	codec *serialization.Codec // decodes received batches (the outbox has its own, to encode)
	out   *outbox              // forwards to regions on other nodes, not yet sent
}

func regionProps(ext *Sharding, e *typeEntry) *actor.Props {
	drops := newRateLog()
	p := actor.PropsOf(func() actor.Actor {
		return &regionActor{ext: ext, entry: e, cfg: &e.cfg, proxy: e.proxy, drops: drops}
	})
	// A shard that fails stops (its entities with it); the region starts it again
	// when a message comes (or, with remember-entities, after the shard failure backoff).
	p.Strategy = supervision.OneForOne{MaxRetries: -1}
	return p
}

// Receive handles a message. While it handles anything but a delivery, EntityRefs
// may not add to the outbox (which it flushes first): what the message changes about
// a shard's route is known before they may again (see outbox).
func (r *regionActor) Receive(ctx actor.Context) {
	gated := !keepsOutbox(ctx.Message())
	if gated {
		r.out.shut()
	}
	if r.handle(ctx) {
		r.refreshAllRoutes()
	}
	if gated {
		r.out.reopen()
	}
}

// handle handles one message; it reports whether the message may have changed how
// any shard is routed (see refreshRoute). Messages about one shard refresh that one
// themselves: with a thousand local shards, refreshing all at each allocation made
// the start of a region quadratic.
//
// Before any message but a delivery the region has flushed its outbox (Receive): what
// it forwarded goes before whatever it does next.
func (r *regionActor) handle(ctx actor.Context) (changed bool) {
	if r.fromAnother(ctx.Message(), ctx.Sender()) {
		if ack, ok := ctx.Message().(shardcore.RegisterAck); ok {
			r.apply(ctx, r.core.StaleRegisterAck(ack.Epoch))
		}
		return false
	}
	switch m := ctx.Message().(type) {
	case flushDeliveries:
		r.out.flushOwn()
		return false
	case *msgDeliveries:
		r.fromRegionBatch(ctx, m)
		return false
	case actor.Started:
		r.started(ctx)
	case actor.Stopped:
		r.unpublish()
		r.stopped(ctx)
		return false
	case actor.Restarting:
		r.unpublish() // its shards stop with this instance
	case actor.Stopping:
	case timerFired:
		r.apply(ctx, r.core.Timer(m.key))
	case *msgDelivery:
		r.fromRegion(ctx, m)
		r.refreshRoute(m.Shard)
		return false
	case msgHandOverDone:
		r.apply(ctx, r.core.HandOverIn(r.idOf(ctx.Sender()), m.Shard, nil, true))
		r.refreshRoute(m.Shard)
		return false
	case shardcore.HandOverAck:
		r.apply(ctx, r.core.HandOverAcked(r.idOf(ctx.Sender()), m.Shard))
		return false
	case shardcore.RegisterAck:
		r.registered(ctx)
		r.apply(ctx, r.core.FromCoordinator(m))
	case shardcore.ShardHome:
		if !r.dead[m.Region] {
			r.apply(ctx, r.core.FromCoordinator(m))
		}
		r.refreshRoute(m.Shard)
		return false
	case shardcore.ShardHomes:
		r.apply(ctx, r.core.FromCoordinator(r.liveHomes(m)))
	case shardcore.GracefulShutdownAck:
		r.apply(ctx, r.core.FromCoordinator(m))
	case shardcore.HostShard, shardcore.BeginHandOff, shardcore.HandOff, shardcore.HandOverTo, shardcore.NoShardHome:
		r.apply(ctx, r.core.FromCoordinator(m))
		r.refreshRoute(shardOfCoordinatorMsg(m))
		return false
	case shardcore.BeginHandOffAck:
		r.apply(ctx, r.core.RelayAck(m))
	case shardReady:
		r.apply(ctx, r.core.ShardReady(m.shard))
		r.refreshRoute(m.shard)
		return false
	case shardLeftovers:
		r.leftovers[m.shard] = m.msgs
	case actor.Terminated:
		r.terminated(ctx, m)
	case GracefulShutdown:
		r.log.Debug("sharding: region shutting down gracefully")
		r.apply(ctx, r.core.GracefulShutdown())
	case StopShards, *StopShards, GetCurrentRegions:
		r.toCoordinator(ctx)
		return false
	case GetShardRegionState:
		r.queryShards(ctx, false)
		return false
	case GetShardRegionStats:
		r.queryShards(ctx, true)
		return false
	case GetClusterShardingStats:
		r.queryCluster(ctx, m)
		return false
	case refMessage:
		r.placeEnvelope(ctx, m.env)
		m.route.viaRegion.Add(-1) // handed on: its shard's EntityRefs may go direct again
		return false
	default:
		if r.view.apply(m) {
			r.clusterChanged(ctx)
			return true
		}
		r.place(ctx, m)
		return false
	}
	return true
}

// keepsOutbox reports whether the region handles msg without flushing its outbox
// first: msg is a delivery (from a user, an EntityRef or another region), which the
// region may add to it, or the region's flush, which flushes it itself. Any other
// message is the region's own, or a cluster event, and flushes it, and so is a user
// message placed by the extractor, which the region cannot tell from those before
// placing it.
func keepsOutbox(msg any) bool {
	switch msg.(type) {
	case refMessage, Envelope, *Envelope, *msgDelivery, *msgDeliveries, flushDeliveries:
		return true
	}
	return false
}

// shardOfCoordinatorMsg returns the shard a coordinator message about one shard is
// about.
func shardOfCoordinatorMsg(m any) ShardID {
	switch m := m.(type) {
	case shardcore.HostShard:
		return m.Shard
	case shardcore.BeginHandOff:
		return m.Shard
	case shardcore.HandOff:
		return m.Shard
	case shardcore.HandOverTo:
		return m.Shard
	case shardcore.NoShardHome:
		return m.Shard
	}
	return ""
}

// refreshRoute tells senders outside the region how it would now route shard s's
// messages: whether it would deliver them to the local shard itself (fastPath.local),
// and whether it would forward them to a region on another node, which EntityRefs may
// then add to the outbox themselves (outbox.direct).
func (r *regionActor) refreshRoute(s ShardID) {
	r.refreshLocal(s)
	to, ok := r.directHome(s)
	r.out.setDirect(s, to, ok)
}

// refreshLocal is refreshRoute's half for the local shard's fast path.
func (r *regionActor) refreshLocal(s ShardID) {
	if fp := r.fast[s]; fp != nil {
		fp.setLocal(r.core.DeliversLocally(s))
	}
}

// directHome returns the region on another node that the region would forward shard
// s's messages to now, as route does, or false.
func (r *regionActor) directHome(s ShardID) (actor.Ref, bool) {
	home, forward, _ := r.core.FirstRoute(s)
	if !forward {
		return actor.Ref{}, false
	}
	to, ok := r.forwardRegion(home)
	return to, ok && !to.IsLocal()
}

// retireFastPath closes shard s's fast path for good (its shard has stopped, or the
// region): EntityRefs that hold it look up its successor.
func (r *regionActor) retireFastPath(s ShardID) {
	if fp := r.fast[s]; fp != nil {
		fp.retire()
		delete(r.fast, s)
		r.entry.fast.Delete(s)
	}
}

// refreshAllRoutes is refreshRoute for every shard, after a message that may have
// changed any of them.
func (r *regionActor) refreshAllRoutes() {
	for s := range r.fast {
		r.refreshLocal(s)
	}
	o := r.out
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.direct)
	for s := range r.core.HomeShards() {
		to, ok := r.directHome(s)
		o.putDirect(s, to, ok)
	}
}

func (r *regionActor) started(ctx actor.Context) {
	r.self = ctx.Self()
	r.selfID = RegionID(r.self.URI())
	r.log = ctx.Logger().With(zap.String("type", r.entry.name))
	r.core = shardcore.NewRegionCore[*delivery](r.selfID, r.cfg.regionSettings(r.proxy))
	r.shards = map[ShardID]actor.Ref{}
	r.fast = map[ShardID]*fastPath{}
	r.shardIDs = map[actor.Ref]ShardID{}
	r.leftovers = map[ShardID][]*delivery{}
	r.regions = map[RegionID]actor.Ref{}
	r.regionIDs = map[actor.Ref]RegionID{}
	r.dead = map[RegionID]bool{}
	if c := clusterFor(ctx.System()); c != nil {
		r.view = newMemberView()
		r.view.apply(c.State())
		c.Subscribe(r.self)
	} else {
		r.view = soloView(ctx.System())
		r.solo = true
	}
	r.oldest = r.view.oldest(r.cfg.Role)
	r.codec = r.ext.reg.NewCodec(refResolver{ctx.System()})
	r.out = newOutbox(r, r.ext.reg.NewCodec(refResolver{ctx.System()}), deliveriesLimit(ctx.System()))
	if old := r.entry.outbox.Swap(r.out); old != nil {
		old.close() // an earlier incarnation's: what EntityRefs added to it goes now
	}
	r.apply(ctx, r.core.Start())
}

func (r *regionActor) stopped(ctx actor.Context) {
	unsubscribe(ctx.System(), r.self)
	for s := range r.fast {
		r.retireFastPath(s)
	}
	if !r.coordinator.IsZero() {
		_ = r.coordinator.Send(shardcore.RegionStopped{}, r.self)
	}
	if r.core != nil && !r.core.Stopped() {
		d := r.core.StopNow()
		d.Stop = false
		r.apply(ctx, d)
	}
	if r.out != nil { // nil if the region failed before it started
		r.out.close() // no flush of its own comes any more, and no EntityRef may add
		r.entry.outbox.CompareAndSwap(r.out, nil)
	}
}

func (r *regionActor) terminated(ctx actor.Context, t actor.Terminated) {
	switch {
	case t.Ref == r.coordinator:
		r.coordinatorGone(t.Ref)
		r.coordinator = actor.Ref{}
		r.apply(ctx, r.core.CoordinatorLost())
	default:
		if s, ok := r.shardIDs[t.Ref]; ok {
			delete(r.shardIDs, t.Ref)
			if r.shards[s] == t.Ref {
				delete(r.shards, s)
				if r.ext.metrics != nil {
					r.entry.stats.shards.Add(-1)
				}
				r.retireFastPath(s)
			}
			left := r.leftovers[s]
			delete(r.leftovers, s)
			r.apply(ctx, r.core.ShardTerminated(s, left))
			return
		}
		if id, ok := r.regionIDs[t.Ref]; ok {
			delete(r.regionIDs, t.Ref)
			r.forgetRegion(id)
			r.apply(ctx, r.core.RegionTerminated(id))
		}
	}
}

// place routes a message from a user: Envelope and StartEntity by their ID, others
// through the extractor.
func (r *regionActor) place(ctx actor.Context, msg any) {
	var local delivery // on the stack: the fast path needs no delivery of its own
	if err := r.extract(msg, &local); err != nil {
		r.unplaceable(ctx, msg, err)
		return
	}
	local.trace = traceOf(ctx)
	r.route(ctx, &local)
}

// placeEnvelope routes env, from an EntityRef, as place routes an Envelope, without
// making an interface of it (an allocation per message).
func (r *regionActor) placeEnvelope(ctx actor.Context, env Envelope) {
	var local delivery
	if err := r.extractEnvelope(env, &local); err != nil {
		r.unplaceable(ctx, env, err)
		return
	}
	local.trace = traceOf(ctx)
	r.route(ctx, &local)
}

// route delivers local, a message from a user whose entity and shard are known, to
// its shard here or forwards it to the shard's region, or hands it to the core.
func (r *regionActor) route(ctx actor.Context, local *delivery) {
	home, forward, here := r.core.FirstRoute(local.shard)
	if here {
		local.sender = ctx.Sender()
		if r.fast[local.shard].tryDeliver(local) {
			return
		}
	}
	if forward && !local.start {
		// A message for a shard on another node goes into that region's batch as the core
		// would forward it, without a delivery of its own.
		if to, ok := r.forwardRegion(home); ok && !to.IsLocal() {
			local.sender = ctx.Sender()
			r.forwardBatched(ctx, to, local)
			return
		}
	}
	d := new(delivery)
	*d = *local
	d.sender = ctx.Sender()
	r.apply(ctx, r.core.Deliver(d.shard, d))
	r.refreshRoute(d.shard)
}

// forwardRegion returns the Ref of region id when it is resolved, as r.regions does,
// remembering the last one asked for: a stream of messages to one node's shards asks
// for the same region each time, and a region's ID (its full path) is a long key.
func (r *regionActor) forwardRegion(id RegionID) (actor.Ref, bool) {
	if id == r.lastRegion.id && id != "" {
		return r.lastRegion.ref, true
	}
	ref, ok := r.regions[id]
	if ok {
		r.lastRegion.id, r.lastRegion.ref = id, ref
	}
	return ref, ok
}

// forgetRegion removes region id, which has terminated, from the regions resolved.
func (r *regionActor) forgetRegion(id RegionID) {
	delete(r.regions, id)
	if r.lastRegion.id == id {
		r.lastRegion.id, r.lastRegion.ref = "", actor.Ref{}
	}
}

// unplaceable sends msg, which the region cannot place (err says why), to dead
// letters.
func (r *regionActor) unplaceable(ctx actor.Context, msg any, err error) {
	r.entry.stats.unplaceable.Add(1)
	ctx.System().PublishDeadLetter(ctx.Self(), msg, ctx.Sender(), err)
	r.drops.warn(r.log, "sharding: message cannot be placed; sent to dead letters",
		zap.String("message", fmt.Sprintf("%T", msg)), zap.Stringer("sender", ctx.Sender()), zap.Error(err))
}

// extract sets d's entity, message and shard from msg, with the extractor, or says
// why it cannot (an extractor that panics cannot).
func (r *regionActor) extract(msg any, d *delivery) (err error) {
	defer extractorPanic(&err)
	switch m := msg.(type) {
	case Envelope:
		return r.extractEnvelope(m, d)
	case *Envelope:
		return r.extractEnvelope(*m, d)
	case StartEntity:
		d.entity, d.start = m.ID, true
	case *StartEntity:
		d.entity, d.start = m.ID, true
	default:
		d.entity, d.msg = r.cfg.Extractor.Extract(msg)
	}
	if d.entity == "" {
		return fmt.Errorf("%w: no entity ID for %T", ErrUnplaceable, msg)
	}
	return r.shardOf(d)
}

// extractEnvelope is extract for an Envelope, which needs no interface made of it.
func (r *regionActor) extractEnvelope(env Envelope, d *delivery) (err error) {
	defer extractorPanic(&err)
	if env.EntityID == "" {
		return fmt.Errorf("%w: no entity ID for %T", ErrUnplaceable, env)
	}
	d.entity, d.msg = env.EntityID, env.Message
	return r.shardOf(d)
}

// extractorPanic, deferred, turns a panic of the extractor into an ErrUnplaceable
// error.
func extractorPanic(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: the extractor panicked: %v", ErrUnplaceable, p)
	}
}

// shardOf sets the shard of d, whose entity is set, with the extractor.
func (r *regionActor) shardOf(d *delivery) error {
	if d.msg == nil && !d.start {
		return fmt.Errorf("%w: no message for entity %q", ErrUnplaceable, d.entity)
	}
	d.shard = r.cfg.Extractor.ShardID(d.entity)
	if d.shard == "" {
		return fmt.Errorf("%w: no shard ID for entity %q", ErrUnplaceable, d.entity)
	}
	return nil
}

// fromRegion takes a delivery another region forwarded or handed over.
func (r *regionActor) fromRegion(ctx actor.Context, m *msgDelivery) {
	d, err := unwire(r.ext.reg, ctx.System(), m, ctx.Sender())
	if err != nil {
		r.entry.stats.undelivered.Add(1)
		ctx.System().PublishDeadLetter(ctx.Self(), undecodable(m.Entity, m.Manifest, m.Payload), ctx.Sender(), err)
		r.drops.warn(r.log, "sharding: a delivery from another region cannot be decoded; sent to dead letters", zap.Error(err))
		return
	}
	if m.HandOver {
		r.apply(ctx, r.core.HandOverIn(r.idOf(ctx.Sender()), m.Shard, []*delivery{d}, false))
		return
	}
	r.apply(ctx, r.core.Deliver(m.Shard, d))
}

// idOf returns the RegionID of a region's Ref.
func (r *regionActor) idOf(ref actor.Ref) RegionID {
	if id, ok := r.regionIDs[ref]; ok {
		return id
	}
	id := RegionID(ref.URI())
	if _, ok := r.regions[id]; !ok {
		r.regions[id] = ref
	}
	return id
}

// regionRef returns the Ref of region id (the zero Ref when it cannot be resolved).
func (r *regionActor) regionRef(ctx actor.Context, id RegionID) actor.Ref {
	if ref, ok := r.regions[id]; ok {
		return ref
	}
	ref, err := ctx.System().Resolve(string(id))
	if err != nil {
		r.log.Debug("sharding: region cannot be resolved", zap.String("region", string(id)), zap.Error(err))
		return actor.Ref{}
	}
	r.regions[id] = ref
	return ref
}

// candidates returns the coordinators to register with: the singleton's path on the
// members where it may run (a region that finds none there is dropped quietly).
func (r *regionActor) candidates(ctx actor.Context) []actor.Ref {
	var out []actor.Ref
	for _, node := range r.view.coordinatorNodes(r.cfg.Role) {
		ref, err := ctx.System().Resolve(node + coordinatorPath(r.entry.name, r.solo))
		if err != nil {
			r.log.Debug("sharding: coordinator path cannot be resolved", zap.String("node", node), zap.Error(err))
			continue
		}
		out = append(out, ref)
	}
	return out
}

// toCoordinator forwards a user request to the coordinator, keeping the sender, or
// answers ErrNoCoordinator.
func (r *regionActor) toCoordinator(ctx actor.Context) {
	if r.coordinator.IsZero() {
		if !ctx.Sender().IsZero() {
			_ = ctx.Respond(actor.Failure{Err: fmt.Errorf("%w (entity type %q)", ErrNoCoordinator, r.entry.name)})
		}
		return
	}
	_ = ctx.Forward(r.coordinator)
}

// apply carries out a core's decisions.
func (r *regionActor) apply(ctx actor.Context, d shardcore.RegionDecisions[*delivery]) {
	for _, p := range d.Problems {
		if errors.Is(p, shardcore.ErrShardHomeConflict) {
			r.log.Error("sharding: region and coordinator disagree on a shard's home; restarting the region", zap.Error(p))
			panic(p)
		}
		r.log.Warn("sharding: region", zap.Error(p))
	}
	for _, a := range d.Actions {
		r.act(ctx, a)
	}
	r.core.Recycle(d.Actions)
	if r.ext.metrics != nil {
		r.pub.sync(r.entry.stats, int64(r.core.Buffered()), 0)
	}
	applyTimers(ctx, d.Timers)
	for _, x := range d.Dropped {
		r.drop(ctx, x.Msg, x.Err)
	}
	if len(r.deadHomes) > 0 {
		gone, msgs := r.deadHomes, r.unroutable
		r.deadHomes, r.unroutable = nil, nil
		for _, id := range gone {
			r.dead[id] = true
			r.apply(ctx, r.core.RegionTerminated(id))
		}
		for _, m := range msgs {
			r.apply(ctx, r.core.Deliver(m.shard, m))
		}
	}
	if d.Stop {
		_ = ctx.Stop(r.self)
		return
	}
	if r.solo && r.core.ShuttingDown() && !r.core.Stopped() && r.core.LocalShards() == 0 {
		// Without a cluster no other region can take what this one still holds: once
		// its own shards have stopped, it gives up the rest (reported as dropped).
		r.apply(ctx, r.core.StopNow())
	}
}

func (r *regionActor) act(ctx actor.Context, a shardcore.RegionAction[*delivery]) {
	if a.Kind != shardcore.ActForward && a.Kind != shardcore.ActDeliver {
		// Whatever the region does besides forwarding and delivering goes after what it
		// forwarded before.
		r.flushOutbox()
	}
	switch a.Kind {
	case shardcore.ActDeliver:
		if ref, ok := r.shards[a.Shard]; ok {
			if r.fast[a.Shard].viaShard(a.Msg) {
				_ = ref.Tell(a.Msg)
			}
		} else {
			r.drop(ctx, a.Msg, fmt.Errorf("%w: shard %q has no actor", shardcore.ErrStoppedLoss, a.Shard))
		}
	case shardcore.ActForward:
		to := r.regionRef(ctx, a.To)
		if to.IsZero() {
			// Not resolvable: a region of an earlier incarnation of a node (this one, when
			// it restarted). Forget its homes and route the message again.
			if !slices.Contains(r.deadHomes, a.To) {
				r.deadHomes = append(r.deadHomes, a.To)
			}
			r.unroutable = append(r.unroutable, a.Msg)
			return
		}
		r.forward(ctx, to, a.Msg, false)
	case shardcore.ActStartShard:
		r.startShard(ctx, a.Shard)
	case shardcore.ActHandOffShard:
		if ref, ok := r.shards[a.Shard]; ok {
			_ = ref.Tell(shardHandOff{})
		}
	case shardcore.ActHandOver:
		to := r.regionRef(ctx, a.To)
		for _, m := range a.Msgs {
			r.forward(ctx, to, m, true)
		}
		_ = to.Send(msgHandOverDone{Shard: a.Shard}, r.self)
	case shardcore.ActToCoordinator:
		if !r.coordinator.IsZero() {
			_ = r.coordinator.Send(a.Proto, r.self)
		}
	case shardcore.ActToRegion:
		_ = r.regionRef(ctx, a.To).Send(a.Proto, r.self)
	case shardcore.ActRegister:
		var msg any = shardcore.Register{}
		if r.proxy {
			msg = shardcore.RegisterProxy{}
		}
		for _, c := range r.candidates(ctx) {
			_ = c.Send(msg, r.self)
		}
	case shardcore.ActToCandidates:
		for _, c := range r.candidates(ctx) {
			_ = c.Send(a.Proto, r.self)
		}
	case shardcore.ActWatch:
		ref := r.regionRef(ctx, a.To)
		if ref.IsZero() {
			// Not resolvable: a region of an earlier incarnation of a node, gone already.
			// It counts as terminated, as a watch would say (so a wait for its hand-over
			// ends at once rather than at the hand-off timeout).
			if !slices.Contains(r.deadHomes, a.To) {
				r.deadHomes = append(r.deadHomes, a.To)
			}
			return
		}
		r.regionIDs[ref] = a.To
		ctx.Watch(ref)
	}
}

// forward sends d to another region: as a forward keeping its sender, or as part of a
// hand-over (sent by this region, carrying the sender inside).
func (r *regionActor) forward(ctx actor.Context, to actor.Ref, d *delivery, handOver bool) {
	if to.IsZero() {
		r.drop(ctx, d, fmt.Errorf("%w: region unknown", shardcore.ErrStoppedLoss))
		return
	}
	if !to.IsLocal() {
		if !handOver && !d.start {
			r.forwardBatched(ctx, to, d)
			return
		}
		r.flushTo(to) // it goes alone, after what was batched before it
	}
	m, err := wireDelivery(r.ext.reg, to, d, handOver)
	if err != nil {
		r.drop(ctx, d, err)
		return
	}
	sender := d.sender
	if handOver {
		sender = r.self
	}
	r.sendDelivery(to, m, sender)
}

func (r *regionActor) startShard(ctx actor.Context, s ShardID) {
	fp := newFastPath(r.cfg.Passivation.IdleTimeout > 0)
	ref, err := ctx.Spawn(shardProps(r.ext, r.entry, s, r.self, fp), encodeName(string(s)))
	if err != nil {
		r.log.Error("sharding: cannot start shard", zap.String("shard", string(s)), zap.Error(err))
		return
	}
	ctx.Watch(ref)
	r.shards[s] = ref
	if r.ext.metrics != nil {
		r.entry.stats.shards.Add(1)
	}
	r.shardIDs[ref] = s
	r.fast[s] = fp
	r.entry.fast.Store(s, fp) // for EntityRefs
}

// drop sends an undeliverable message to dead letters, counts and logs it.
func (r *regionActor) drop(ctx actor.Context, d *delivery, err error) {
	if errors.Is(err, ErrBufferFull) {
		r.entry.stats.bufferDropped.Add(1)
	} else {
		r.entry.stats.undelivered.Add(1)
	}
	// d's Envelope, not d: a *delivery in an interface would move the delivery that
	// route's callers keep on the stack to the heap, for every message.
	msg := d.UserMessage()
	if d.start || d.msg != nil {
		ctx.System().PublishDeadLetter(r.self, msg, d.sender, err)
	}
	r.drops.warn(r.log, "sharding: message dropped; sent to dead letters", zap.String("shard", string(d.shard)),
		zap.String("entity", string(d.entity)), zap.String("message", fmt.Sprintf("%T", msg)), zap.Error(err))
}

// applyTimers starts and cancels the timers a core asked for.
func applyTimers(ctx actor.TimerContext, ops []shardcore.TimerOp) {
	for _, op := range ops {
		switch {
		case op.Cancel:
			ctx.CancelTimer(op.Key)
		case op.Periodic:
			ctx.StartPeriodicTimer(op.Key, timerFired{key: op.Key}, op.After)
		default:
			ctx.StartSingleTimer(op.Key, timerFired{key: op.Key}, op.After)
		}
	}
}

// liveHomes leaves out of m the homes in regions known to be dead.
func (r *regionActor) liveHomes(m shardcore.ShardHomes) shardcore.ShardHomes {
	if len(r.dead) == 0 {
		return m
	}
	out := shardcore.ShardHomes{Homes: make([]shardcore.ShardHomesEntry, 0, len(m.Homes))}
	for _, e := range m.Homes {
		if !r.dead[e.Region] {
			out.Homes = append(out.Homes, e)
		}
	}
	return out
}

// unpublish takes back what this instance added to its type's gauges: it is stopping
// or restarting, and its shards stop with it.
func (r *regionActor) unpublish() {
	if r.ext.metrics == nil {
		return
	}
	r.entry.stats.shards.Add(-int64(len(r.shards)))
	r.pub.sync(r.entry.stats, 0, r.pub.passivations)
}
