package sharding

import (
	"errors"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"go.uber.org/zap"
)

// The distributed-data stores (the defaults): the coordinator's state in one LWW
// register per type, and the remembered entities of each shard in an OR-set, both in
// the node's replicator (ddata.Start). Akka's settings: the state is read with
// ReadMajorityPlus(waiting-for-state-timeout, 5) and written with
// WriteMajorityPlus(updating-state-timeout, 3), remembered entities with Majority, all
// with a minimum of 5 replicas (majority-min-cap); a failed read or write is retried.
//
// Keys: "<type>CoordinatorState" (not durable: the state is not needed after the whole
// cluster stopped), "shard-<type>-<shard>" for a shard's remembered entities and
// "shard-<type>-all" for the shards that have any. The shard-* keys must be durable for
// remembered entities to survive a restart of the whole cluster: give the replicator
// DurableKeys: []string{"shard-*"} (and a DurableDir).

const (
	// ddataMinCap is the least number of replicas of sharding's majority reads and
	// writes (Akka's sharding majority-min-cap).
	ddataMinCap = 5
	// ddataReadPlus and ddataWritePlus are the extra replicas of the coordinator's
	// reads and writes.
	ddataReadPlus  = 5
	ddataWritePlus = 3
	// ddataRetryDelay spaces the retries of reads that failed for another reason than
	// a timeout.
	ddataRetryDelay = time.Second
)

// coordStateRegister is the register that holds a coordinator's state.
type coordStateRegister = *ddata.LWWRegister[shardcore.CoordState]

func coordStateKey(typeName string) ddata.Key[coordStateRegister] {
	return ddata.NewKey[coordStateRegister](typeName + "CoordinatorState")
}

func rememberKey(typeName string, shard ShardID) ddata.Key[*ddata.ORSet[string]] {
	return ddata.NewKey[*ddata.ORSet[string]]("shard-" + typeName + "-" + string(shard))
}

func allShardsKey(typeName string) ddata.Key[*ddata.GSet[string]] {
	return ddata.NewKey[*ddata.GSet[string]]("shard-" + typeName + "-all")
}

// The register of the coordinator's state is one of Troupe's own wire types.
func init() {
	wiretypes.MustRegister[coordStateRegister]("troupe.sharding.CoordinatorStateRegister.v1")
}

// ---- the coordinator ----

// ddataCoordinator is the coordinator of StateStoreDistributedData on a cluster.
type ddataCoordinator struct {
	coordShell
	repl *ddata.Replicator
}

// Replies to the coordinator's own requests, by their request context.
type (
	readState      struct{}
	readAllShards  struct{}
	writeState     struct{}
	retryReadState struct{}
)

func (c *ddataCoordinator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		c.write = c.writeState
		c.init(ctx)
		c.readState(ctx)
	case actor.Stopped:
		c.stop(ctx)
	case retryReadState:
		c.readState(ctx)
	case ddata.ReadResponse[coordStateRegister]:
		c.stateRead(ctx, m)
	case ddata.ReadResponse[*ddata.GSet[string]]:
		var shards []ShardID
		if m.Err == nil {
			for _, s := range m.Value.Elements() {
				shards = append(shards, ShardID(s))
			}
		} else if !errors.Is(m.Err, ddata.ErrNotFound) {
			c.log.Warn("sharding: reading the remembered shards failed; starting without them", zap.Error(m.Err))
		}
		if len(shards) > 0 {
			c.step(ctx, shardcore.InRememberedShards{Shards: shards})
		}
	case ddata.UpdateResponse[coordStateRegister]:
		if m.Err != nil {
			// The core reports the first failure of each write (a warning); the
			// retries are logged here at debug only.
			c.log.Debug("sharding: writing the coordinator's state failed; retrying", zap.Error(m.Err))
			c.step(ctx, shardcore.InStoreFailed{Err: m.Err})
			return
		}
		c.storeDone(ctx)
	default:
		if !c.receive(ctx, m) {
			c.log.Debug("sharding: coordinator ignores a message", zap.String("type", typeNameOf(m)))
		}
	}
}

func (c *ddataCoordinator) readState(ctx actor.Context) {
	level := ddata.ReadMajorityPlus(c.cfg.Timings.WaitingForStateTimeout, ddataReadPlus, ddataMinCap)
	if err := ddata.SendRead(ctx, c.repl, coordStateKey(c.entry.name), level, readState{}); err != nil {
		c.log.Warn("sharding: cannot ask the replicator for the coordinator's state; retrying", zap.Error(err))
		ctx.StartSingleTimer(retryReadState{}, retryReadState{}, ddataRetryDelay)
	}
}

func (c *ddataCoordinator) stateRead(ctx actor.Context, m ddata.ReadResponse[coordStateRegister]) {
	var st *shardcore.CoordState
	switch {
	case m.Err == nil:
		v := m.Value.Value()
		st = v.Clone()
	case errors.Is(m.Err, ddata.ErrNotFound):
	case errors.Is(m.Err, ddata.ErrTimeout):
		c.log.Warn("sharding: reading the coordinator's state timed out; retrying", zap.Error(m.Err))
		c.readState(ctx)
		return
	default:
		c.log.Error("sharding: reading the coordinator's state failed; retrying", zap.Error(m.Err))
		ctx.StartSingleTimer(retryReadState{}, retryReadState{}, ddataRetryDelay)
		return
	}
	c.step(ctx, shardcore.InStateLoaded{State: st})
	if c.cfg.RememberEntities {
		level := ddata.ReadMajority(c.cfg.Timings.WaitingForStateTimeout, ddataMinCap)
		if err := ddata.SendRead(ctx, c.repl, allShardsKey(c.entry.name), level, readAllShards{}); err != nil {
			c.log.Warn("sharding: cannot read the remembered shards", zap.Error(err))
		}
	}
}

// writeState stores the next state; the answer comes as an UpdateResponse.
func (c *ddataCoordinator) writeState(ctx actor.Context, st *shardcore.CoordStore) bool {
	next := *st.State
	self := c.repl.SelfUniqueAddress()
	level := ddata.WriteMajorityPlus(c.cfg.Timings.UpdatingStateTimeout, ddataWritePlus, ddataMinCap)
	err := ddata.SendUpdate(ctx, c.repl, coordStateKey(c.entry.name), level, nil,
		func(r coordStateRegister) (coordStateRegister, error) {
			r.Set(self, next, ddata.DefaultClock[shardcore.CoordState])
			return r, nil
		}, writeState{})
	if err != nil {
		// Not sent: answer as a failure, so the core asks again.
		_ = c.self.Tell(ddata.UpdateResponse[coordStateRegister]{Key: coordStateKey(c.entry.name), Err: err})
	}
	return false
}

// ---- remembered entities ----

// ddataRememberStore keeps one shard's remembered entities in distributed data.
type ddataRememberStore struct {
	typeName string
	shard    ShardID
	repl     *ddata.Replicator
	timeout  time.Duration
	listed   bool // the shard is in the type's set of remembered shards
}

// Request contexts of the store.
type (
	rememberReadCtx   struct{}
	rememberWriteCtx  struct{ op *shardcore.EntityStoreOp }
	rememberListCtx   struct{ op *shardcore.EntityStoreOp }
	rememberRetryLoad struct{}
)

func ddataRememberStoreProps(e *typeEntry, shard ShardID, repl *ddata.Replicator) *actor.Props {
	timeout := e.cfg.Timings.UpdatingStateTimeout
	return actor.PropsOf(func() actor.Actor {
		return &ddataRememberStore{typeName: e.name, shard: shard, repl: repl, timeout: timeout}
	})
}

func (s *ddataRememberStore) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case rememberLoad, rememberRetryLoad:
		level := ddata.ReadMajority(s.timeout, ddataMinCap)
		if err := ddata.SendRead(ctx, s.repl, rememberKey(s.typeName, s.shard), level, rememberReadCtx{}); err != nil {
			ctx.StartSingleTimer(rememberRetryLoad{}, rememberRetryLoad{}, ddataRetryDelay)
		}
	case ddata.ReadResponse[*ddata.ORSet[string]]:
		switch {
		case m.Err == nil:
			ids := make([]EntityID, 0, m.Value.Len())
			for _, id := range m.Value.Elements() {
				ids = append(ids, EntityID(id))
			}
			slices.Sort(ids)
			s.listed = len(ids) > 0
			_ = ctx.Send(ctx.Parent(), rememberLoaded{ids: ids})
		case errors.Is(m.Err, ddata.ErrNotFound):
			_ = ctx.Send(ctx.Parent(), rememberLoaded{})
		default:
			ctx.Logger().Warn("sharding: reading remembered entities failed; retrying", zap.Error(m.Err))
			ctx.StartSingleTimer(rememberRetryLoad{}, rememberRetryLoad{}, ddataRetryDelay)
		}
	case rememberWrite:
		self := s.repl.SelfUniqueAddress()
		op := m.op
		level := ddata.WriteMajority(s.timeout, ddataMinCap)
		err := ddata.SendUpdate(ctx, s.repl, rememberKey(s.typeName, s.shard), level, nil,
			func(set *ddata.ORSet[string]) (*ddata.ORSet[string], error) {
				for _, id := range op.Started {
					set.Add(self, string(id))
				}
				for _, id := range op.Stopped {
					set.Remove(string(id))
				}
				return set, nil
			}, rememberWriteCtx{op: op})
		if err != nil {
			_ = ctx.Send(ctx.Parent(), rememberFailed{err: err})
		}
	case ddata.UpdateResponse[*ddata.ORSet[string]]:
		op := m.Context.(rememberWriteCtx).op
		if m.Err != nil {
			_ = ctx.Send(ctx.Parent(), rememberFailed{err: m.Err})
			return
		}
		if s.listed || len(op.Started) == 0 {
			_ = ctx.Send(ctx.Parent(), rememberWritten{})
			return
		}
		// The first remembered entity: list the shard, so that the coordinator starts it
		// after a restart of the whole cluster.
		shard := string(s.shard)
		level := ddata.WriteMajority(s.timeout, ddataMinCap)
		err := ddata.SendUpdate(ctx, s.repl, allShardsKey(s.typeName), level, nil,
			func(set *ddata.GSet[string]) (*ddata.GSet[string], error) { set.Add(shard); return set, nil },
			rememberListCtx{op: op})
		if err != nil {
			_ = ctx.Send(ctx.Parent(), rememberFailed{err: err})
		}
	case ddata.UpdateResponse[*ddata.GSet[string]]:
		if m.Err != nil {
			_ = ctx.Send(ctx.Parent(), rememberFailed{err: m.Err})
			return
		}
		s.listed = true
		_ = ctx.Send(ctx.Parent(), rememberWritten{})
	}
}
