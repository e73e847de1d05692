package sharding

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/serialization"
)

// Defaults of EntityConfig and ProxyConfig (Akka's, section B of the protocol facts),
// besides those the cores define.
const (
	// DefaultNumberOfShards is the number of shards of the default extractor.
	DefaultNumberOfShards = 1000
	// DefaultCoordinatorFailureBackoff is how long a failed coordinator waits before it
	// starts again (growing to five times as much, with 20% jitter).
	DefaultCoordinatorFailureBackoff = 5 * time.Second
	// DefaultWaitingForStateTimeout bounds one read of the coordinator's state.
	DefaultWaitingForStateTimeout = 2 * time.Second
	// DefaultUpdatingStateTimeout bounds one write of the coordinator's state.
	DefaultUpdatingStateTimeout = 5 * time.Second
	// DefaultShardRegionQueryTimeout bounds the queries that ask every shard or region.
	DefaultShardRegionQueryTimeout = 3 * time.Second
)

// StateStoreMode says where the coordinator keeps where shards live.
type StateStoreMode int

const (
	// StateStoreDistributedData, the default, keeps the coordinator's state in
	// distributed data (one LWW register per entity type, "<type>CoordinatorState",
	// written to a majority of nodes plus 3, at least 5): the node's replicator must be
	// started (ddata.Start). It survives the coordinator moving, not a stop of the
	// whole cluster, which does not need it. On a system without a cluster it lives in
	// the coordinator alone, which is the same thing for a cluster of one.
	StateStoreDistributedData StateStoreMode = iota
	// StateStorePersistence makes the coordinator an event-sourced actor with
	// persistence id "/sharding/<type>Coordinator": persistence must be started with a
	// journal every node shares.
	StateStorePersistence
)

// String returns "ddata" or "persistence".
func (m StateStoreMode) String() string {
	switch m {
	case StateStoreDistributedData:
		return "ddata"
	case StateStorePersistence:
		return "persistence"
	}
	return fmt.Sprintf("StateStoreMode(%d)", int(m))
}

// RememberStoreMode says where remembered entities are kept.
type RememberStoreMode int

const (
	// RememberStoreDistributedData, the default, keeps each shard's entity IDs in
	// distributed data ("shard-<type>-<shard>", and the list of such shards in
	// "shard-<type>-all"); the replicator's DurableKeys must include "shard-*" for them
	// to survive a restart of the whole cluster. On a system without a cluster they
	// live in the system's memory, for the life of the system.
	RememberStoreDistributedData RememberStoreMode = iota
	// RememberStoreJournal keeps them in the event journal of persistence, as events of
	// the persistence id "/sharding/<type>Shard/<shard>".
	RememberStoreJournal
)

// String returns "ddata" or "journal".
func (m RememberStoreMode) String() string {
	switch m {
	case RememberStoreDistributedData:
		return "ddata"
	case RememberStoreJournal:
		return "journal"
	}
	return fmt.Sprintf("RememberStoreMode(%d)", int(m))
}

// Config configures the sharding extension of one actor system (Start). The entity
// types are configured one by one, with EntityConfig and ProxyConfig.
type Config struct {
	// Registry is the serialization registry of the system's transport (remote.Config)
	// and of persistence, when they are used: Start registers sharding's own messages
	// and stored types in it. Required when remoting or persistence is started; when
	// neither is, nil means a private registry.
	Registry *serialization.Registry
}

// Validate reports the first problem, wrapping ErrInvalidConfig. Config has no field
// that can be wrong on its own; Start checks the registry against the system.
func (c Config) Validate() error { return nil }

// Passivation stops entities automatically, to save memory. Messages that reach an
// entity while it stops are kept for its next incarnation. Not with RememberEntities,
// whose entities are meant to stay up.
type Passivation struct {
	// IdleTimeout stops an entity that has not received a message through sharding for
	// this long (messages it sends itself, or gets directly, do not count). 0 turns it
	// off (the default, as in Akka's classic sharding).
	IdleTimeout time.Duration
	// ActiveEntityLimit caps the entities that run at once in one shard: starting one
	// more stops the least recently used. 0 means no limit.
	ActiveEntityLimit int
}

// Timings are the periods and timeouts of sharding. Zero values mean the defaults,
// which are Akka's.
type Timings struct {
	// RetryInterval is the region's retry period: registering with the coordinator
	// (after a backoff that starts at max(100ms, RetryInterval/8) and doubles up to it)
	// and asking again for unknown shard homes. A region that leaves before its
	// registration was answered waits twice this for the coordinator's word. Default 2s.
	RetryInterval time.Duration
	// HandOffTimeout bounds a shard's hand-off; entities that ignore the hand-off stop
	// message are stopped hard after max(HandOffTimeout - 5s, 1s). Default 60s.
	HandOffTimeout time.Duration
	// ShardStartTimeout is how often the coordinator repeats a HostShard until the
	// region confirms it. Default 10s.
	ShardStartTimeout time.Duration
	// ShardFailureBackoff is how long a region waits before it starts again a shard
	// that stopped on its own (with RememberEntities). Default 10s.
	ShardFailureBackoff time.Duration
	// EntityRestartBackoff is how long a remembered entity that stopped without
	// Passivate waits before it is started again. Default 10s.
	EntityRestartBackoff time.Duration
	// RebalanceInterval is how often the coordinator asks the allocation strategy
	// which shards to move. Default 10s.
	RebalanceInterval time.Duration
	// CoordinatorFailureBackoff is the first delay before a failed coordinator starts
	// again; later delays grow to five times as much, with 20% jitter. Default 5s.
	CoordinatorFailureBackoff time.Duration
	// WaitingForStateTimeout bounds one read of the coordinator's state (retried
	// until it succeeds). Default 2s.
	WaitingForStateTimeout time.Duration
	// UpdatingStateTimeout bounds one write of the coordinator's state (retried until
	// it succeeds). Default 5s.
	UpdatingStateTimeout time.Duration
	// ShardRegionQueryTimeout bounds the queries that ask every shard or every region
	// (GetShardRegionState, GetClusterShardingStats without a timeout). Default 3s.
	ShardRegionQueryTimeout time.Duration
}

func (t Timings) validate() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"RetryInterval", t.RetryInterval}, {"HandOffTimeout", t.HandOffTimeout},
		{"ShardStartTimeout", t.ShardStartTimeout}, {"ShardFailureBackoff", t.ShardFailureBackoff},
		{"EntityRestartBackoff", t.EntityRestartBackoff}, {"RebalanceInterval", t.RebalanceInterval},
		{"CoordinatorFailureBackoff", t.CoordinatorFailureBackoff},
		{"WaitingForStateTimeout", t.WaitingForStateTimeout}, {"UpdatingStateTimeout", t.UpdatingStateTimeout},
		{"ShardRegionQueryTimeout", t.ShardRegionQueryTimeout},
	} {
		if f.d < 0 {
			return fmt.Errorf("%w: Timings.%s %v is negative", ErrInvalidConfig, f.name, f.d)
		}
	}
	return nil
}

func (t Timings) withDefaults() Timings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.RetryInterval, shardcore.DefaultRetryInterval)
	def(&t.HandOffTimeout, shardcore.DefaultHandOffTimeout)
	def(&t.ShardStartTimeout, shardcore.DefaultShardStartTimeout)
	def(&t.ShardFailureBackoff, shardcore.DefaultShardFailureBackoff)
	def(&t.EntityRestartBackoff, shardcore.DefaultEntityRestartBackoff)
	def(&t.RebalanceInterval, shardcore.DefaultRebalanceInterval)
	def(&t.CoordinatorFailureBackoff, DefaultCoordinatorFailureBackoff)
	def(&t.WaitingForStateTimeout, DefaultWaitingForStateTimeout)
	def(&t.UpdatingStateTimeout, DefaultUpdatingStateTimeout)
	def(&t.ShardRegionQueryTimeout, DefaultShardRegionQueryTimeout)
	return t
}

// EntityConfig configures one entity type on one node (Sharding.Start). Every node that
// runs the type must use the same Extractor, Role, StateStoreMode, RememberEntities and
// RememberEntitiesStore. Zero values mean the documented defaults.
type EntityConfig struct {
	// Entity creates the entity actors; an entity finds its ID with EntityIDOf. Set
	// either Entity or EntityFactory.
	Entity *actor.Props
	// EntityFactory returns the Props of the entity with the given ID (for example
	// persistence.Props of an entity whose persistence id holds the ID).
	EntityFactory func(id EntityID) *actor.Props

	// Extractor places messages. Nil means EnvelopeExtractor with NumberOfShards
	// shards.
	Extractor Extractor
	// NumberOfShards is the number of shards of the default extractor. Default
	// DefaultNumberOfShards (1000).
	NumberOfShards int

	// Role restricts the entities, and the coordinator, to members with this role.
	// Sharding.Start on a node without it starts a proxy-only region.
	Role string
	// AllocationStrategy places and moves shards. Nil means the least-shard strategy
	// with its defaults (NewLeastShardStrategy(LeastShardConfig{})).
	AllocationStrategy AllocationStrategy
	// HandOffStopMessage is what entities receive when their shard is handed off to
	// another node; they must stop (the default, actor.PoisonPill{}, stops them once the
	// messages queued before it are handled). Stragglers are stopped hard after
	// max(HandOffTimeout - 5s, 1s).
	HandOffStopMessage any
	// Passivation stops entities automatically; off by default.
	Passivation Passivation
	// RememberEntities keeps the IDs of the running entities of every shard durably:
	// they start again, without a message, wherever their shard starts (after a
	// rebalance, a crash or a restart of the whole cluster). Only Passivate stops one
	// for good; one that stops otherwise starts again after EntityRestartBackoff.
	RememberEntities bool
	// RememberEntitiesStore says where remembered entities are kept. Default
	// RememberStoreDistributedData.
	RememberEntitiesStore RememberStoreMode
	// StateStoreMode says where the coordinator keeps the shards' homes. Default
	// StateStoreDistributedData.
	StateStoreMode StateStoreMode
	// MinMembers is how many regions (of members with the role) must have registered
	// before the coordinator gives any shard a home, so that shards do not all start
	// on the first node. Default 1.
	MinMembers int
	// Lease, when set, gives every shard a lease it must hold to run its entities (see
	// Lease). Nil: no lease.
	Lease LeaseFactory
	// BufferSize bounds the messages a region holds while shard homes are unknown (and
	// those a shard holds for entities that are starting or stopping). Default 100,000;
	// beyond it messages go to dead letters and are counted.
	BufferSize int
	// Timings holds the periods and timeouts.
	Timings Timings
}

// Validate reports the first problem, wrapping ErrInvalidConfig.
func (c EntityConfig) Validate() error {
	switch {
	case c.Entity == nil && c.EntityFactory == nil:
		return fmt.Errorf("%w: set Entity or EntityFactory", ErrInvalidConfig)
	case c.Entity != nil && c.EntityFactory != nil:
		return fmt.Errorf("%w: set only one of Entity and EntityFactory", ErrInvalidConfig)
	case c.NumberOfShards < 0:
		return fmt.Errorf("%w: NumberOfShards %d is negative", ErrInvalidConfig, c.NumberOfShards)
	case c.MinMembers < 0:
		return fmt.Errorf("%w: MinMembers %d is negative", ErrInvalidConfig, c.MinMembers)
	case c.BufferSize < 0:
		return fmt.Errorf("%w: BufferSize %d is negative", ErrInvalidConfig, c.BufferSize)
	case c.Passivation.IdleTimeout < 0:
		return fmt.Errorf("%w: Passivation.IdleTimeout %v is negative", ErrInvalidConfig, c.Passivation.IdleTimeout)
	case c.Passivation.ActiveEntityLimit < 0:
		return fmt.Errorf("%w: Passivation.ActiveEntityLimit %d is negative", ErrInvalidConfig, c.Passivation.ActiveEntityLimit)
	case c.RememberEntities && (c.Passivation.IdleTimeout > 0 || c.Passivation.ActiveEntityLimit > 0):
		return fmt.Errorf("%w: automatic passivation cannot be combined with RememberEntities", ErrInvalidConfig)
	case c.StateStoreMode != StateStoreDistributedData && c.StateStoreMode != StateStorePersistence:
		return fmt.Errorf("%w: unknown StateStoreMode %d", ErrInvalidConfig, int(c.StateStoreMode))
	case c.RememberEntitiesStore != RememberStoreDistributedData && c.RememberEntitiesStore != RememberStoreJournal:
		return fmt.Errorf("%w: unknown RememberEntitiesStore %d", ErrInvalidConfig, int(c.RememberEntitiesStore))
	}
	if c.Entity != nil {
		if err := c.Entity.Validate(); err != nil {
			return fmt.Errorf("%w: Entity: %w", ErrInvalidConfig, err)
		}
	}
	if err := validateRole(c.Role); err != nil {
		return err
	}
	return c.Timings.validate()
}

// withDefaults fills in the defaults.
func (c EntityConfig) withDefaults() EntityConfig {
	if c.NumberOfShards == 0 {
		c.NumberOfShards = DefaultNumberOfShards
	}
	if c.Extractor == nil {
		c.Extractor = EnvelopeExtractor{NumberOfShards: c.NumberOfShards}
	}
	if c.HandOffStopMessage == nil {
		c.HandOffStopMessage = actor.PoisonPill{}
	}
	if c.MinMembers == 0 {
		c.MinMembers = 1
	}
	if c.BufferSize == 0 {
		c.BufferSize = shardcore.DefaultBufferSize
	}
	c.Timings = c.Timings.withDefaults()
	return c
}

// props returns the Props of entity id.
func (c *EntityConfig) props(id EntityID) *actor.Props {
	if c.EntityFactory != nil {
		return c.EntityFactory(id)
	}
	return c.Entity
}

// ProxyConfig configures a proxy-only region of an entity type (Sharding.StartProxy):
// it hosts no entity and delivers messages to the regions that do.
type ProxyConfig struct {
	// Extractor places messages; it must be the one the type's regions use. Nil means
	// EnvelopeExtractor with NumberOfShards shards.
	Extractor Extractor
	// NumberOfShards is the number of shards of the default extractor. Default
	// DefaultNumberOfShards (1000).
	NumberOfShards int
	// Role is the role of the members that run the type's regions and coordinator.
	Role string
	// BufferSize bounds the messages held while shard homes are unknown. Default
	// 100,000.
	BufferSize int
	// RetryInterval and ShardRegionQueryTimeout as in Timings.
	RetryInterval           time.Duration
	ShardRegionQueryTimeout time.Duration
}

// Validate reports the first problem, wrapping ErrInvalidConfig.
func (c ProxyConfig) Validate() error {
	switch {
	case c.NumberOfShards < 0:
		return fmt.Errorf("%w: NumberOfShards %d is negative", ErrInvalidConfig, c.NumberOfShards)
	case c.BufferSize < 0:
		return fmt.Errorf("%w: BufferSize %d is negative", ErrInvalidConfig, c.BufferSize)
	case c.RetryInterval < 0:
		return fmt.Errorf("%w: RetryInterval %v is negative", ErrInvalidConfig, c.RetryInterval)
	case c.ShardRegionQueryTimeout < 0:
		return fmt.Errorf("%w: ShardRegionQueryTimeout %v is negative", ErrInvalidConfig, c.ShardRegionQueryTimeout)
	}
	return validateRole(c.Role)
}

// entityConfig turns a proxy's configuration into the parts of an EntityConfig a
// region uses.
func (c ProxyConfig) entityConfig() EntityConfig {
	return EntityConfig{
		Extractor:      c.Extractor,
		NumberOfShards: c.NumberOfShards,
		Role:           c.Role,
		BufferSize:     c.BufferSize,
		Timings:        Timings{RetryInterval: c.RetryInterval, ShardRegionQueryTimeout: c.ShardRegionQueryTimeout},
	}.withDefaults()
}

func validateRole(role string) error {
	for i := 0; i < len(role); i++ {
		if role[i] < ' ' || role[i] == ',' {
			return fmt.Errorf("%w: role %q", ErrInvalidConfig, role)
		}
	}
	return nil
}

// validateTypeName accepts names made of letters, digits and "-_.:@+=", which appear
// as they are in actor paths and persistence ids.
func validateTypeName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty entity type name", ErrInvalidConfig)
	}
	for i := 0; i < len(name); i++ {
		if !plainNameByte(name[i]) {
			return fmt.Errorf("%w: entity type name %q has %q (letters, digits and -_.:@+= only)", ErrInvalidConfig, name, name[i])
		}
	}
	return nil
}

// ---- settings of the cores ----

func (c *EntityConfig) regionSettings(proxy bool) shardcore.RegionSettings {
	return shardcore.RegionSettings{
		RetryInterval:       c.Timings.RetryInterval,
		BufferSize:          c.BufferSize,
		HandOffTimeout:      c.Timings.HandOffTimeout,
		ShardFailureBackoff: c.Timings.ShardFailureBackoff,
		RememberEntities:    c.RememberEntities,
		Proxy:               proxy,
	}
}

func (c *EntityConfig) shardSettings() shardcore.ShardSettings[*delivery] {
	return shardcore.ShardSettings[*delivery]{
		RememberEntities:     c.RememberEntities,
		HandOffTimeout:       c.Timings.HandOffTimeout,
		EntityRestartBackoff: c.Timings.EntityRestartBackoff,
		IdleTimeout:          c.Passivation.IdleTimeout,
		ActiveLimit:          c.Passivation.ActiveEntityLimit,
		BufferSize:           c.BufferSize,
		StopMessage:          &delivery{msg: c.HandOffStopMessage},
	}
}

func (c *EntityConfig) coordSettings(removalMargin time.Duration) shardcore.CoordSettings {
	return shardcore.CoordSettings{
		HandOffTimeout:    c.Timings.HandOffTimeout,
		ShardStartTimeout: c.Timings.ShardStartTimeout,
		RebalanceInterval: c.Timings.RebalanceInterval,
		MinMembers:        c.MinMembers,
		RemovalMargin:     removalMargin,
		RememberEntities:  c.RememberEntities,
		StoreState:        c.StateStoreMode == StateStoreDistributedData,
	}
}
