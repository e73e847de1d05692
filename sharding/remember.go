package sharding

import (
	"maps"
	"slices"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/persistence"
	"go.uber.org/zap"
)

// The remember-entities store of a shard is a child actor of the shard. It answers
// rememberLoad with the remembered IDs, and rememberWrite with rememberWritten once the
// change is durable (or rememberFailed; a store that stops counts as failed, and the
// shard starts it again). Three stores exist: the journal store (an event-sourced actor
// per shard), the distributed-data store (store_ddata.go), and a store in memory for
// systems without a cluster.

type (
	rememberLoad    struct{}
	rememberLoaded  struct{ ids []EntityID }
	rememberWrite   struct{ op *shardcore.EntityStoreOp }
	rememberWritten struct{}
	rememberFailed  struct{ err error }
)

// entitiesChanged is the event of the journal store: entities that started and that
// stopped for good in one write. Its fields and names are a storage format.
type entitiesChanged struct {
	Started []EntityID `msgpack:"started,omitempty"`
	Stopped []EntityID `msgpack:"stopped,omitempty"`
}

// rememberedEntities is the journal store's snapshot: every remembered ID, sorted.
type rememberedEntities struct {
	IDs []EntityID `msgpack:"ids"`
}

// rememberSnapshotEvery is how many events the journal store writes between snapshots
// (when persistence has a snapshot store).
const rememberSnapshotEvery = 200

// The journal store's events and snapshot are Troupe's own wire types.
func init() {
	wiretypes.MustRegister[entitiesChanged]("troupe.sharding.EntitiesChanged.v1")
	wiretypes.MustRegister[rememberedEntities]("troupe.sharding.RememberedEntities.v1")
}

// rememberPersistenceID is the persistence id of a shard's journal store.
func rememberPersistenceID(typeName string, shard ShardID) string {
	return "/sharding/" + typeName + "Shard/" + string(shard)
}

func rememberStoreProps(ext *Sharding, e *typeEntry, shard ShardID) *actor.Props {
	if e.cfg.RememberEntitiesStore == RememberStoreJournal {
		pid := rememberPersistenceID(e.name, shard)
		return persistence.Props(func() persistence.Entity {
			return &journalRememberStore{pid: pid, ids: map[EntityID]struct{}{}}
		})
	}
	if repl := ddata.Get(ext.sys); repl != nil && clusterFor(ext.sys) != nil {
		return ddataRememberStoreProps(e, shard, repl)
	}
	mem := memoryRememberedID.Get(ext.sys)
	key := memoryStoreKey{typeName: e.name, shard: shard}
	return actor.PropsOf(func() actor.Actor { return &memoryRememberStore{mem: mem, key: key} })
}

// journalRememberStore keeps a shard's remembered entities as events.
type journalRememberStore struct {
	pid     string
	ids     map[EntityID]struct{}
	written int
}

func (j *journalRememberStore) PersistenceID() string { return j.pid }

func (j *journalRememberStore) apply(ev entitiesChanged) {
	for _, id := range ev.Started {
		j.ids[id] = struct{}{}
	}
	for _, id := range ev.Stopped {
		delete(j.ids, id)
	}
}

func (j *journalRememberStore) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.SnapshotOffer:
		if s, ok := m.Snapshot.(rememberedEntities); ok {
			clear(j.ids)
			for _, id := range s.IDs {
				j.ids[id] = struct{}{}
			}
		}
	case entitiesChanged:
		j.apply(m)
	}
}

func (j *journalRememberStore) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case rememberLoad:
		_ = ctx.Respond(rememberLoaded{ids: slices.Sorted(maps.Keys(j.ids))})
	case rememberWrite:
		ev := entitiesChanged{Started: m.op.Started, Stopped: m.op.Stopped}
		err := persistence.Persist(ctx, ev, func(ev entitiesChanged) {
			j.apply(ev)
			_ = ctx.Respond(rememberWritten{})
			j.written++
			if j.written%rememberSnapshotEvery == 0 {
				ctx.SaveSnapshot(rememberedEntities{IDs: slices.Sorted(maps.Keys(j.ids))})
			}
		})
		if err != nil {
			_ = ctx.Respond(rememberFailed{err: err})
		}
	case persistence.PersistRejected:
		_ = ctx.Respond(rememberFailed{err: m.Err})
	case persistence.SaveSnapshotFailure:
		ctx.Logger().Debug("sharding: remember-entities snapshot not saved", zap.Error(m.Err))
	}
}

// memoryStoreKey names one shard's remembered entities in memoryRemembered.
type memoryStoreKey struct {
	typeName string
	shard    ShardID
}

// memoryRemembered holds the remembered entities of a system without a cluster, for
// the life of the system: they survive a restart of their shard or region, not of the
// system.
type memoryRemembered struct {
	mu sync.Mutex
	m  map[memoryStoreKey]map[EntityID]struct{}
}

// memoryRememberedID is the system's memoryRemembered.
var memoryRememberedID = actor.NewExtensionID("troupe.sharding.memoryRemembered", func(*actor.System) *memoryRemembered {
	return &memoryRemembered{m: map[memoryStoreKey]map[EntityID]struct{}{}}
})

// memoryRememberStore keeps a shard's remembered entities in its system's
// memoryRemembered.
type memoryRememberStore struct {
	mem *memoryRemembered
	key memoryStoreKey
}

func (s *memoryRememberStore) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case rememberLoad:
		s.mem.mu.Lock()
		ids := slices.Sorted(maps.Keys(s.mem.m[s.key]))
		s.mem.mu.Unlock()
		_ = ctx.Respond(rememberLoaded{ids: ids})
	case rememberWrite:
		s.mem.mu.Lock()
		set := s.mem.m[s.key]
		if set == nil {
			set = map[EntityID]struct{}{}
			s.mem.m[s.key] = set
		}
		for _, id := range m.op.Started {
			set[id] = struct{}{}
		}
		for _, id := range m.op.Stopped {
			delete(set, id)
		}
		s.mem.mu.Unlock()
		_ = ctx.Respond(rememberWritten{})
	}
}
