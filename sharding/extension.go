package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
	"go.uber.org/zap"
)

// Sharding is the sharding extension of one actor system: it starts the regions of
// entity types (Start, StartProxy), finds them (Region), and counts what they do
// (Stats). Start it once per system with the package function Start; Get finds it.
//
// Paths: the regions of a system live under /system/sharding: /system/sharding/<type>
// for a region, /system/sharding/<type>Proxy for a proxy-only region. The coordinator
// of a type is the cluster singleton <type>Coordinator: its manager runs at
// /system/singleton/<type>Coordinator on every member with the type's role, and the
// coordinator below it on the oldest of them (without a cluster, at
// /system/sharding/<type>Coordinator).
type Sharding struct {
	sys      *actor.System
	reg      *serialization.Registry
	log      *zap.Logger
	guardian actor.Ref

	mu    sync.Mutex
	types map[string]*typeEntry

	// decoders holds Codecs (over reg, resolving refs as a region's codec does) for the
	// transport's reader goroutines, which decode the messages of a received batch
	// before it reaches its region (batch.go).
	decoders sync.Pool

	metrics *shardingMetrics // nil while metrics are off
}

// typeEntry is one entity type started on this node.
type typeEntry struct {
	name   string
	cfg    EntityConfig // with defaults
	proxy  bool
	region actor.Ref
	stats  *typeStats
	// fast holds the fast paths of the region's local shards, for EntityRefs
	// (fastpath.go): ShardID -> *fastPath, stored and deleted by the region.
	fast sync.Map
	// routes holds the EntityRefs' direct route of each shard (ShardID -> *directRoute).
	routes sync.Map
	// outbox is the running region's outbox, which EntityRefs add messages for shards
	// on other nodes to (outbox.go); nil while no region runs.
	outbox atomic.Pointer[outbox]
	// coordinator is the manager of the type's coordinator singleton on this member,
	// whose hand-over the sharding shutdown task runs (handOverCoordinators); nil for
	// a proxy, without a cluster, and until it has started.
	coordinator *singleton.Manager
}

var extID = actor.NewExtensionID("troupe.sharding", func(*actor.System) *atomic.Pointer[Sharding] {
	return &atomic.Pointer[Sharding]{}
})

// Get returns the sharding extension started on sys, or nil before Start.
func Get(sys *actor.System) *Sharding { return extID.Get(sys).Load() }

// Start starts the sharding extension on sys: the guardian of the regions
// (/system/sharding) and the coordinated-shutdown task that hands off every local shard
// before the node leaves the cluster (phase cluster-sharding-shutdown-region). It
// registers sharding's messages and stored types with cfg.Registry. A second Start on
// the same system fails with ErrAlreadyStarted.
func Start(sys *actor.System, cfg Config) (*Sharding, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	slot := extID.Get(sys)
	if slot.Load() != nil {
		return nil, ErrAlreadyStarted
	}
	reg := cfg.Registry
	if reg == nil {
		if remote.Get(sys) != nil || persistence.Get(sys) != nil {
			return nil, fmt.Errorf("%w: Registry is required when remoting or persistence is started (use theirs)", ErrInvalidConfig)
		}
		reg = serialization.NewRegistry()
	}
	s := &Sharding{
		sys:   sys,
		reg:   reg,
		log:   sys.Logger().With(zap.String("component", "sharding")),
		types: map[string]*typeEntry{},
	}
	s.decoders.New = func() any { return reg.NewCodec(refResolver{sys}) }
	if !slot.CompareAndSwap(nil, s) {
		return nil, ErrAlreadyStarted
	}
	s.startMetrics()
	g, err := sys.SpawnSystem(actor.PropsOf(func() actor.Actor { return &guardian{} }), "sharding")
	if err != nil {
		slot.Store(nil)
		return nil, fmt.Errorf("sharding: starting the guardian: %w", err)
	}
	s.guardian = g
	if c := clusterFor(sys); c != nil {
		// A node that is downed (or crashes its membership) stops every region,
		// shard, entity and coordinator at once: the other side takes them over after
		// the removal margin, and must not find them still running.
		go func() {
			select {
			case <-c.Stopped():
				_ = g.Tell(clusterGone{})
			case <-sys.Terminated():
			}
		}()
	}
	err = sys.CoordinatedShutdown().AddTask(actor.PhaseClusterShardingShutdownRegion, "sharding-hand-off",
		func(ctx context.Context) error {
			err := s.shutdownRegions(ctx)
			return errors.Join(err, s.handOverCoordinators(ctx))
		})
	if err != nil {
		return nil, fmt.Errorf("sharding: registering the shutdown task: %w", err)
	}
	return s, nil
}

// Start starts the region of an entity type on this node and returns it: send it the
// messages for the type's entities (or use EntityRefFor). When cfg.Role is set and this
// node does not have it, Start starts a proxy-only region instead (as StartProxy does).
// On a node with the role it also starts the manager of the type's coordinator
// singleton (see the Sharding type). A type started
// twice on one node fails with ErrAlreadyStarted.
func (s *Sharding) Start(typeName string, cfg EntityConfig) (actor.Ref, error) {
	if err := validateTypeName(typeName); err != nil {
		return actor.Ref{}, err
	}
	if err := cfg.Validate(); err != nil {
		return actor.Ref{}, err
	}
	cfg = cfg.withDefaults()
	if cfg.StateStoreMode == StateStorePersistence || cfg.RememberEntities && cfg.RememberEntitiesStore == RememberStoreJournal {
		if persistence.Get(s.sys) == nil {
			return actor.Ref{}, fmt.Errorf("%w: %s needs persistence (persistence.Start) on this system", ErrInvalidConfig, storeNeed(cfg))
		}
	}
	if c := clusterFor(s.sys); c != nil {
		if (cfg.StateStoreMode == StateStoreDistributedData || cfg.RememberEntities && cfg.RememberEntitiesStore == RememberStoreDistributedData) &&
			ddata.Get(s.sys) == nil {
			return actor.Ref{}, fmt.Errorf("%w: the distributed-data stores (the defaults) need the replicator: call ddata.Start first, "+
				"or use StateStorePersistence and RememberStoreJournal", ErrInvalidConfig)
		}
		if cfg.Role != "" && !hasRole(c.State().Members, c.SelfUniqueAddress().Addr, cfg.Role) {
			return s.startProxy(typeName, cfg)
		}
	}
	return s.startType(typeName, cfg, false)
}

func storeNeed(cfg EntityConfig) string {
	if cfg.StateStoreMode == StateStorePersistence {
		return "StateStorePersistence"
	}
	return "RememberStoreJournal"
}

// StartProxy starts a proxy-only region of an entity type on this node and returns it:
// it hosts no entity and delivers messages to the regions that do. A type started
// twice on one node (as a region or a proxy) fails with ErrAlreadyStarted.
func (s *Sharding) StartProxy(typeName string, cfg ProxyConfig) (actor.Ref, error) {
	if err := validateTypeName(typeName); err != nil {
		return actor.Ref{}, err
	}
	if err := cfg.Validate(); err != nil {
		return actor.Ref{}, err
	}
	return s.startProxy(typeName, cfg.entityConfig())
}

func (s *Sharding) startProxy(typeName string, cfg EntityConfig) (actor.Ref, error) {
	return s.startType(typeName, cfg, true)
}

func (s *Sharding) startType(typeName string, cfg EntityConfig, proxy bool) (actor.Ref, error) {
	s.mu.Lock()
	if _, ok := s.types[typeName]; ok {
		s.mu.Unlock()
		return actor.Ref{}, fmt.Errorf("%w: entity type %q", ErrAlreadyStarted, typeName)
	}
	e := &typeEntry{name: typeName, cfg: cfg, proxy: proxy, stats: &typeStats{}}
	s.types[typeName] = e
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ref, err := actor.Ask[actor.Ref](ctx, s.guardian, startTypeRequest{ext: s, entry: e})
	if err != nil {
		s.mu.Lock()
		delete(s.types, typeName)
		s.mu.Unlock()
		return actor.Ref{}, fmt.Errorf("sharding: starting entity type %q: %w", typeName, err)
	}
	var coordinator *singleton.Manager
	if !proxy && clusterFor(s.sys) != nil {
		if coordinator, err = s.startCoordinatorSingleton(e); err != nil {
			_ = s.sys.Stop(ref)
			s.mu.Lock()
			delete(s.types, typeName)
			s.mu.Unlock()
			return actor.Ref{}, fmt.Errorf("sharding: starting the coordinator singleton of entity type %q: %w", typeName, err)
		}
	}
	s.mu.Lock()
	e.region = ref
	e.coordinator = coordinator
	s.mu.Unlock()
	return ref, nil
}

// Region returns the region (or proxy) of an entity type started on this node, or an
// error wrapping ErrUnknownType.
func (s *Sharding) Region(typeName string) (actor.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.types[typeName]
	if !ok || e.region.IsZero() {
		return actor.Ref{}, fmt.Errorf("%w: %q", ErrUnknownType, typeName)
	}
	return e.region, nil
}

// TypeNames returns the entity types started on this node (regions and proxies), sorted.
func (s *Sharding) TypeNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.types))
	for n := range s.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Stats returns the counters of an entity type on this node, or an error wrapping
// ErrUnknownType.
func (s *Sharding) Stats(typeName string) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.types[typeName]
	if !ok {
		return Stats{}, fmt.Errorf("%w: %q", ErrUnknownType, typeName)
	}
	return e.stats.snapshot(), nil
}

// shutdownRegions hands off every local shard: each region and proxy gets
// GracefulShutdown, and the task ends when all have stopped. The hand-off gets ctx's
// time but a reserve (stopReserve); if it has not ended by then, the regions, shards
// and entities are stopped without hand-off, and if even that does not end within ctx
// (or ctx has ended already: a cancelled shutdown), the node downs itself instead of
// leaving: it cannot tell that its entities have stopped, and the others must wait the
// down-removal margin before they start them again.
func (s *Sharding) shutdownRegions(ctx context.Context) error {
	c := clusterFor(s.sys)
	if c != nil {
		select {
		case <-c.Stopped():
			// Downed, crashed or gone: no coordinator will take the shards; the regions
			// stop with the system.
			return nil
		default:
		}
	}
	// The graceful hand-off gets the phase's time but a reserve: if it has not ended
	// by then, the regions are stopped, so that no entity of this node still runs when
	// it leaves and the others give its shards new homes at once.
	graceful, cancel := context.WithCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		graceful, cancel = context.WithDeadline(ctx, deadline.Add(-stopReserve(time.Until(deadline))))
	}
	_, err := s.guardian.Ask(graceful, shutdownRegions{}).Result(graceful)
	cancel()
	if err == nil || errors.Is(err, actor.ErrDeadLetter) {
		return nil
	}
	s.log.Warn("sharding: the graceful hand-off did not end in time; stopping this node's regions, shards and entities",
		zap.Error(err))
	_, stopErr := s.guardian.Ask(ctx, stopRegions{}).Result(ctx)
	if stopErr == nil || errors.Is(stopErr, actor.ErrDeadLetter) {
		return fmt.Errorf("sharding: graceful hand-off of the regions (they were stopped instead): %w", err)
	}
	// Entities still run (one is stuck in its Receive, say): a graceful leave would let
	// the others start them again at once. This node downs itself instead, so that the
	// others wait the down-removal margin before they take its shards over.
	if c != nil {
		s.log.Error("sharding: this node's entities did not stop in time; downing this node instead of leaving, so that the others wait the removal margin",
			zap.Error(stopErr))
		_ = c.Down(c.SelfUniqueAddress())
	}
	return fmt.Errorf("sharding: graceful hand-off of the regions: %w; stopping them: %w", err, stopErr)
}

// stopReserve returns the part of a shutdown budget that is kept for stopping the
// regions when their graceful hand-off takes too long: a fifth, between 100ms and 2s.
func stopReserve(budget time.Duration) time.Duration {
	return min(max(budget/5, 100*time.Millisecond), 2*time.Second)
}

// handOverCoordinators moves the coordinators running on this member to the next
// oldest, after the regions handed their shards off (so that the coordinator's stored
// state already has this member's last hand-offs); on the other members it only ends
// their managers' part.
func (s *Sharding) handOverCoordinators(ctx context.Context) error {
	s.mu.Lock()
	var managers []*singleton.Manager
	for _, e := range s.types {
		if e.coordinator != nil {
			managers = append(managers, e.coordinator)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(managers, func(a, b *singleton.Manager) int { return strings.Compare(a.Name(), b.Name()) })
	var errs []error
	for _, m := range managers {
		if err := m.HandOver(ctx); err != nil {
			errs = append(errs, fmt.Errorf("sharding: handing over %s: %w", m.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func hasRole(members []cluster.Member, self, role string) bool {
	for _, m := range members {
		if m.Unique.Addr == self {
			return m.HasRole(role)
		}
	}
	return false
}

// ---- the guardian ----

// guardian is /system/sharding: the parent of the regions and proxies of this node
// (and of the coordinator, without a cluster).
type guardian struct {
	waiting  []actor.Ref // shutdown requesters
	regions  map[actor.Ref]bool
	shutdown bool
	gone     bool // the cluster membership ended: nothing starts any more
}

// startTypeRequest asks the guardian to start a type's actors; it answers the region's
// Ref or a Failure.
type startTypeRequest struct {
	ext   *Sharding
	entry *typeEntry
}

// shutdownRegions asks the guardian to shut every region down gracefully; it answers
// shutdownDone once all have stopped.
type shutdownRegions struct{}

// stopRegions asks the guardian to stop every region now (with its shards and
// entities); it answers shutdownDone once all have stopped.
type stopRegions struct{}

type shutdownDone struct{}

// clusterGone tells the guardian that this node's cluster membership has ended.
type clusterGone struct{}

// SuppressDeadLetterLog: the membership of a node that shuts down ends after its
// guardian may have stopped: an expected dead letter.
func (clusterGone) SuppressDeadLetterLog() {}

func (g *guardian) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		g.regions = map[actor.Ref]bool{}
	case startTypeRequest:
		ref, err := g.startType(ctx, m)
		if err != nil {
			_ = ctx.Respond(actor.Failure{Err: err})
			return
		}
		_ = ctx.Respond(ref)
	case shutdownRegions:
		g.shutdown = true
		g.waiting = append(g.waiting, ctx.Sender())
		for _, r := range slices.Collect(maps.Keys(g.regions)) {
			_ = r.Tell(GracefulShutdown{})
		}
		g.maybeDone(ctx)
	case stopRegions:
		g.shutdown = true
		g.waiting = append(g.waiting, ctx.Sender())
		for r := range g.regions {
			_ = ctx.Stop(r)
		}
		g.maybeDone(ctx)
	case clusterGone:
		g.gone = true
		for _, c := range ctx.Children() {
			_ = ctx.Stop(c)
		}
	case actor.Terminated:
		if g.regions[m.Ref] {
			delete(g.regions, m.Ref)
			g.maybeDone(ctx)
		}
	}
}

func (g *guardian) maybeDone(ctx actor.Context) {
	if !g.shutdown || len(g.regions) > 0 {
		return
	}
	for _, w := range g.waiting {
		_ = ctx.Send(w, shutdownDone{})
	}
	g.waiting = nil
}

func (g *guardian) startType(ctx actor.Context, m startTypeRequest) (actor.Ref, error) {
	if g.gone {
		return actor.Ref{}, fmt.Errorf("%w: this node has left the cluster", actor.ErrStopping)
	}
	e := m.entry
	name := e.name
	if e.proxy {
		name += "Proxy"
	}
	ref, err := ctx.Spawn(regionProps(m.ext, e), name)
	if err != nil {
		return actor.Ref{}, err
	}
	ctx.Watch(ref)
	g.regions[ref] = true
	if !e.proxy && clusterFor(ctx.System()) == nil {
		// Without a cluster the coordinator never moves (with one it is a singleton:
		// Sharding.startType starts its manager).
		props, err := coordinatorSupervisorProps(m.ext, e)
		if err == nil {
			_, err = ctx.Spawn(props, coordinatorName(e.name))
		}
		if err != nil {
			_ = ctx.Stop(ref)
			return actor.Ref{}, err
		}
	}
	if g.shutdown {
		_ = ref.Tell(GracefulShutdown{})
	}
	return ref, nil
}
