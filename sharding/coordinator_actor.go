package sharding

import (
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/persistence"
	"go.uber.org/zap"
)

// The coordinator actor is the shell around the coordinator core. It runs under a
// backoff supervisor (restarted after coordinator-failure-backoff, growing to five times
// as much), which is the type's coordinator singleton (coordinator_singleton.go). Three actors
// share the shell: ddataCoordinator keeps its state in distributed data (the default, on
// a cluster), persistentCoordinator is an event-sourced actor (StateStorePersistence),
// and coordinatorActor keeps it in memory (a system without a cluster, where the
// coordinator never moves).

// coordShell is what both coordinator actors share: the core and the I/O around it.
type coordShell struct {
	ext   *Sharding
	entry *typeEntry
	cfg   *EntityConfig
	log   *zap.Logger

	core     *shardcore.Coordinator
	self     actor.Ref
	selfAddr string
	view     *memberView

	refs       map[RegionID]actor.Ref
	watched    map[actor.Ref]RegionID
	requesters map[RegionID]bool // StopShards requesters (not regions)

	handOffs map[ShardID]*handOffInfo // hand-offs in progress, for the rebalance events
	moved    map[ShardID]*handOffInfo // completed hand-offs whose shard has no home yet

	// write stores a decision of the core: it returns true when the write is done at once
	// (the caller feeds InStoreDone), false when its result comes later.
	write func(ctx actor.Context, st *shardcore.CoordStore) bool
}

type handOffInfo struct {
	from      RegionID
	start     time.Time
	rebalance bool
	completed bool
}

func (c *coordShell) init(ctx actor.Context) {
	c.self = ctx.Self()
	c.selfAddr = ctx.System().Address().String()
	c.log = ctx.Logger().With(zap.String("type", c.entry.name))
	strategy := c.cfg.AllocationStrategy
	settings := c.cfg.coordSettings(removalMargin(ctx.System()))
	settings.HandOffEpoch = rand.Uint64() &^ (1<<32 - 1) // a count below fills the low bits
	if settings.HandOffEpoch == 0 {
		settings.HandOffEpoch = 1 << 32
	}
	c.core = shardcore.NewCoordinator(settings, strategy)
	c.refs = map[RegionID]actor.Ref{}
	c.watched = map[actor.Ref]RegionID{}
	c.requesters = map[RegionID]bool{}
	c.handOffs = map[ShardID]*handOffInfo{}
	c.moved = map[ShardID]*handOffInfo{}
	if cl := clusterFor(ctx.System()); cl != nil {
		c.view = newMemberView()
		c.view.apply(cl.State())
		cl.Subscribe(c.self)
	} else {
		c.view = soloView(ctx.System())
	}
	c.step(ctx, shardcore.InMembers{Members: c.view.nodeInfos(c.cfg.Role)})
}

func (c *coordShell) stop(ctx actor.Context) {
	unsubscribe(ctx.System(), c.self)
}

// receive handles a message that is not about the store; it reports whether it was
// one the coordinator knows.
func (c *coordShell) receive(ctx actor.Context, msg any) bool {
	switch m := msg.(type) {
	case timerFired:
		c.step(ctx, shardcore.InTimer{Key: m.key})
	case actor.Terminated:
		if id, ok := c.watched[m.Ref]; ok {
			delete(c.watched, m.Ref)
			removed := m.AddressTerminated && !c.marginPassed(ctx, id)
			c.step(ctx, shardcore.InRegionTerminated{Region: id, NodeRemoved: removed})
		}
	case actor.Stopping, actor.Restarting, actor.Started:
	case coordinatorStop:
		_ = ctx.Stop(ctx.Self())
	case regionUnresolved:
		c.step(ctx, shardcore.InRegionTerminated{Region: m.region})
	case GetCurrentRegions:
		_ = ctx.Respond(c.currentRegions())
	case StopShards:
		c.regionMsg(ctx, shardcore.StopShards(m))
	case *StopShards:
		c.regionMsg(ctx, shardcore.StopShards{Shards: m.Shards})
	case shardcore.Register, shardcore.RegisterProxy, shardcore.GetShardHome, shardcore.ShardStarted, shardcore.BeginHandOffAck,
		shardcore.ShardStopped, shardcore.GracefulShutdownReq, shardcore.RegionStopped, shardcore.StopShards:
		c.regionMsg(ctx, m)
	default:
		if c.view.apply(m) {
			c.step(ctx, shardcore.InMembers{Members: c.view.nodeInfos(c.cfg.Role)})
			return true
		}
		return false
	}
	return true
}

// marginPassed reports whether the cluster has removed region id's member and its
// down-removal margin has passed already: a coordinator that took over after a crash
// (the singleton waited that margin to start it) then gives the crashed member's
// shards new homes at once, instead of waiting the margin a second time.
func (c *coordShell) marginPassed(ctx actor.Context, id RegionID) bool {
	cl := clusterFor(ctx.System())
	if cl == nil {
		return false
	}
	addr := shardcore.NodeAddress(id)
	st := cl.State()
	for _, ms := range [][]cluster.Member{st.Members, st.AwaitingRemovalMargin} {
		for _, m := range ms {
			if m.Unique.Addr == addr {
				return false // not removed yet, or its margin is still running
			}
		}
	}
	return true
}

// regionMsg feeds a protocol message from a region, a proxy or a StopShards requester.
func (c *coordShell) regionMsg(ctx actor.Context, msg any) {
	sender := ctx.Sender()
	var from RegionID
	if !sender.IsZero() {
		from = RegionID(sender.URI())
		c.refs[from] = sender
	}
	if _, ok := msg.(shardcore.StopShards); ok && from != "" {
		c.requesters[from] = true
	}
	addr := shardcore.NodeAddress(from)
	c.step(ctx, shardcore.InRegionMsg{
		From:   from,
		Msg:    msg,
		Status: c.view.status(addr),
		Local:  !sender.IsZero() && sender.IsLocal(),
	})
}

// step feeds one input, and the store results of stores done at once.
func (c *coordShell) step(ctx actor.Context, in shardcore.CoordInput) {
	for in != nil {
		d := c.core.Step(in)
		in = nil
		if d.Store != nil {
			c.storeEvent(d.Store.Event)
			if c.write(ctx, d.Store) {
				in = shardcore.InStoreDone{}
			}
		}
		c.apply(ctx, d)
	}
	c.trackHandOffs()
}

// storeDone is the result of a write that was not done at once. (A write that fails
// stops the event-sourced coordinator, which recovers and tries again.)
func (c *coordShell) storeDone(ctx actor.Context) { c.step(ctx, shardcore.InStoreDone{}) }

func (c *coordShell) apply(ctx actor.Context, d shardcore.CoordDecisions) {
	for _, p := range d.Problems {
		if errors.Is(p, shardcore.ErrInvalidEvent) || errors.Is(p, shardcore.ErrCorruptState) {
			c.log.Error("sharding: coordinator", zap.Error(p))
		} else {
			c.log.Warn("sharding: coordinator", zap.Error(p))
		}
	}
	for _, s := range d.Sends {
		c.send(ctx, s)
	}
	for _, id := range d.Watch {
		ref := c.ref(ctx, id)
		if ref.IsZero() {
			// Gone already (an earlier incarnation of a region on this node).
			_ = c.self.Tell(regionUnresolved{region: id})
			continue
		}
		c.watched[ref] = id
		ctx.Watch(ref)
	}
	applyTimers(ctx, d.Timers)
}

// regionUnresolved reports a region to watch that cannot be resolved (it lived in an
// earlier incarnation of this system): it is terminated.
type regionUnresolved struct{ region RegionID }

func (c *coordShell) send(ctx actor.Context, s shardcore.CoordSend) {
	msg := s.Msg
	if c.requesters[s.To] {
		if m, ok := msg.(shardcore.ShardStopped); ok {
			msg = ShardStopped{Shard: m.Shard}
		}
	}
	switch m := msg.(type) {
	case shardcore.BeginHandOff:
		if _, ok := c.handOffs[m.Shard]; !ok {
			if from, rebalance, ok := c.core.HandOff(m.Shard); ok {
				c.handOffs[m.Shard] = &handOffInfo{from: from, start: time.Now(), rebalance: rebalance}
				c.entry.stats.handOffsStarted.Add(1)
				ctx.System().EventStream().Publish(ShardHandOffStarted{
					TypeName: c.entry.name, Shard: m.Shard, From: regionAddress(from), Rebalance: rebalance,
				})
			}
		}
	}
	ref := c.ref(ctx, s.To)
	if ref.IsZero() {
		return
	}
	_ = ref.Send(msg, c.self)
}

// ref returns the Ref of a region, proxy or requester (the zero Ref when it cannot be
// resolved).
func (c *coordShell) ref(ctx actor.Context, id RegionID) actor.Ref {
	if id == "" {
		return actor.Ref{}
	}
	if r, ok := c.refs[id]; ok {
		return r
	}
	r, err := ctx.System().Resolve(string(id))
	if err != nil {
		return actor.Ref{}
	}
	c.refs[id] = r
	return r
}

// storeEvent publishes the rebalance events a state change means.
func (c *coordShell) storeEvent(ev shardcore.CoordEvent) {
	switch e := ev.(type) {
	case shardcore.ShardHomeAllocated:
		c.publishAllocated(e)
	case shardcore.ShardHomesAllocated:
		for _, one := range e.Singles() {
			c.publishAllocated(one)
		}
	case shardcore.ShardHomeDeallocated:
		if h := c.handOffs[e.Shard]; h != nil && !h.completed {
			h.completed = true
			c.entry.stats.handOffsCompleted.Add(1)
			c.ext.handOffEnded(c.entry.name, time.Since(h.start), true)
			c.moved[e.Shard] = h
			c.ext.sys.EventStream().Publish(ShardHandOffCompleted{
				TypeName: c.entry.name, Shard: e.Shard, From: regionAddress(h.from), Duration: time.Since(h.start),
			})
		}
	}
}

// publishAllocated publishes a new home.
func (c *coordShell) publishAllocated(e shardcore.ShardHomeAllocated) {
	a := ShardAllocated{TypeName: c.entry.name, Shard: e.Shard, To: regionAddress(e.Region)}
	if h := c.moved[e.Shard]; h != nil {
		a.From, a.Duration = regionAddress(h.from), time.Since(h.start)
		delete(c.moved, e.Shard)
	}
	c.entry.stats.allocated.Add(1)
	c.ext.sys.EventStream().Publish(a)
}

// trackHandOffs reports hand-offs that ended without a deallocation: failed when the
// shard is still at its old home, completed when its region is gone.
func (c *coordShell) trackHandOffs() {
	// A hand-off ends when its worker is gone (a completed one whose deallocation is
	// being stored still has its worker). Only the ended ones are sorted, for the order
	// of the events: a region that shuts down hands off all its shards at once, and
	// sorting them all at every step made that quadratic.
	var ended []ShardID
	for s := range c.handOffs {
		if _, _, ok := c.core.HandOff(s); !ok {
			ended = append(ended, s)
		}
	}
	slices.Sort(ended)
	for _, s := range ended {
		h := c.handOffs[s]
		delete(c.handOffs, s)
		if h.completed {
			continue
		}
		if home, ok := c.core.Home(s); ok && home == h.from {
			c.entry.stats.handOffsFailed.Add(1)
			c.ext.handOffEnded(c.entry.name, time.Since(h.start), false)
			c.ext.sys.EventStream().Publish(ShardHandOffFailed{
				TypeName: c.entry.name, Shard: s, From: regionAddress(h.from), Duration: time.Since(h.start),
			})
			continue
		}
		c.entry.stats.handOffsCompleted.Add(1)
		c.ext.handOffEnded(c.entry.name, time.Since(h.start), true)
		c.moved[s] = h
		c.ext.sys.EventStream().Publish(ShardHandOffCompleted{
			TypeName: c.entry.name, Shard: s, From: regionAddress(h.from), Duration: time.Since(h.start),
		})
	}
}

// currentRegions lists the nodes with a registered region.
func (c *coordShell) currentRegions() CurrentRegions {
	seen := map[actor.Address]bool{}
	var out []actor.Address
	for _, r := range c.core.Regions() {
		a := regionAddress(r)
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b actor.Address) int {
		return member.CompareAddress(member.UniqueAddress{Addr: a.String()}, member.UniqueAddress{Addr: b.String()})
	})
	return CurrentRegions{Regions: out}
}

// ---- the coordinator with its state in memory ----

// coordinatorActor keeps its state in memory: correct for a system without a cluster,
// where the coordinator never moves (and, like distributed-data state, it is lost only
// when the whole "cluster" stops).
type coordinatorActor struct{ coordShell }

func coordinatorProps(ext *Sharding, e *typeEntry) *actor.Props {
	if e.cfg.StateStoreMode == StateStorePersistence {
		pid := coordinatorPersistenceID(e.name)
		return persistence.Props(func() persistence.Entity {
			return &persistentCoordinator{coordShell: coordShell{ext: ext, entry: e, cfg: &e.cfg}, pid: pid}
		})
	}
	if repl := ddata.Get(ext.sys); repl != nil && clusterFor(ext.sys) != nil {
		return actor.PropsOf(func() actor.Actor {
			return &ddataCoordinator{coordShell: coordShell{ext: ext, entry: e, cfg: &e.cfg}, repl: repl}
		})
	}
	return actor.PropsOf(func() actor.Actor {
		return &coordinatorActor{coordShell{ext: ext, entry: e, cfg: &e.cfg}}
	})
}

func (c *coordinatorActor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case actor.Started:
		c.write = func(actor.Context, *shardcore.CoordStore) bool { return true }
		c.init(ctx)
		c.step(ctx, shardcore.InStateLoaded{})
	case actor.Stopped:
		c.stop(ctx)
	default:
		if !c.receive(ctx, ctx.Message()) {
			c.log.Debug("sharding: coordinator ignores a message", zap.String("type", typeNameOf(ctx.Message())))
		}
	}
}

// ---- the event-sourced coordinator ----

// coordinatorPersistenceID is the persistence id of a type's event-sourced coordinator.
func coordinatorPersistenceID(typeName string) string { return "/sharding/" + typeName + "Coordinator" }

// coordSnapshotEvery is how many events the event-sourced coordinator writes between
// snapshots (when persistence has a snapshot store).
const coordSnapshotEvery = 500

// persistentCoordinator is the coordinator of StateStorePersistence: its state is the
// result of its events, replayed when it starts on any node.
type persistentCoordinator struct {
	coordShell
	pid       string
	recovered *shardcore.CoordState
	events    int
}

func (p *persistentCoordinator) PersistenceID() string { return p.pid }

func (p *persistentCoordinator) Recover(ctx persistence.Context) {
	if p.recovered == nil {
		p.recovered = shardcore.NewCoordState(p.cfg.RememberEntities)
	}
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		if st, ok := m.Snapshot.(*shardcore.CoordState); ok {
			p.recovered = st
		}
	case shardcore.ShardHomesAllocated:
		// Whole if it applies, else as the single allocations it stands for, so that
		// one that does not apply costs only its own shard.
		if p.recovered.Apply(m) == nil {
			return
		}
		for _, one := range m.Singles() {
			p.recoverEvent(ctx, one)
		}
	case shardcore.CoordEvent:
		p.recoverEvent(ctx, m)
	case persistence.RecoveryCompleted:
		p.write = func(actx actor.Context, st *shardcore.CoordStore) bool {
			pctx := actx.(persistence.Context)
			err := persistence.Persist(pctx, st.Event, func(shardcore.CoordEvent) {
				p.events++
				p.storeDone(pctx)
				if p.events%coordSnapshotEvery == 0 {
					pctx.SaveSnapshot(p.core.Snapshot())
				}
			})
			if err != nil {
				p.log.Error("sharding: coordinator event rejected; stopping the coordinator", zap.Error(err))
				_ = pctx.Stop(pctx.Self())
			}
			return false
		}
		p.init(ctx)
		st := p.recovered
		p.recovered = nil
		p.step(ctx, shardcore.InStateLoaded{State: st})
	}
}

// recoverEvent applies a replayed event to the recovered state, or logs and skips it.
func (p *persistentCoordinator) recoverEvent(ctx persistence.Context, e shardcore.CoordEvent) {
	if err := p.recovered.Apply(e); err != nil {
		ctx.Logger().Error("sharding: coordinator event does not apply while recovering; skipped", zap.Error(err))
	}
}

func (p *persistentCoordinator) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case actor.Stopped:
		p.stop(ctx)
	case persistence.PersistRejected:
		p.log.Error("sharding: the journal rejected a coordinator event; stopping the coordinator", zap.Error(m.Err))
		_ = ctx.Stop(ctx.Self())
	case persistence.SaveSnapshotSuccess, persistence.SaveSnapshotFailure:
	default:
		if !p.receive(ctx, m) {
			p.log.Debug("sharding: coordinator ignores a message", zap.String("type", typeNameOf(m)))
		}
	}
}
