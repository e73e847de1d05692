package sharding

import (
	"errors"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wiretypes"
)

// The messages a user sends to a region (or proxy), and their replies. Replies that may
// come from another node are registered with the serialization registry by Start.

// Passivate asks the shard of the calling entity to stop it: the shard sends StopMessage
// back to the entity, which must then stop itself (the default, for a nil StopMessage,
// is actor.PoisonPill{}). Messages that reach the shard for the entity until it has
// stopped are kept and delivered to its next incarnation, which starts when the first
// of them arrives; nothing sent to the entity through sharding is lost. With
// RememberEntities a passivated entity is forgotten: it does not start again on its
// own. Call it from the entity's Receive; it returns an error when the message could
// not be sent.
func Passivate(ctx actor.InfoContext, stopMessage any) error {
	if stopMessage == nil {
		stopMessage = actor.PoisonPill{}
	}
	return ctx.Parent().Send(passivateRequest{stop: stopMessage}, ctx.Self())
}

// passivateRequest is what Passivate sends to the shard.
type passivateRequest struct{ stop any }

// StartEntity starts an entity without sending it a message (for example to start
// remembered entities eagerly). Send it to a region; the entity's shard answers the
// sender with StartEntityAck once the entity runs (or is being started). The region
// places it by its ID, with the extractor's ShardID.
type StartEntity struct {
	ID EntityID `msgpack:"id"`
}

// StartEntityAck answers StartEntity.
type StartEntityAck struct {
	ID    EntityID `msgpack:"id"`
	Shard ShardID  `msgpack:"shard"`
}

// StopShards asks the coordinator to stop the given shards: their entities get the
// hand-off stop message, and the shards start again (wherever the coordinator places
// them) only when a message for them comes. The sender gets one ShardStopped per shard
// (at once for a shard that does not run). It is refused, with a log line, when
// RememberEntities is on. Send it to a region or proxy.
type StopShards struct {
	Shards []ShardID `msgpack:"shards"`
}

// ShardStopped answers StopShards, once per shard.
type ShardStopped struct {
	Shard ShardID `msgpack:"shard"`
}

// GracefulShutdown makes a region hand all its shards off to other regions and then
// stop; watch the region to know when it is done. Coordinated shutdown sends it to
// every region of a node that leaves, in the phase cluster-sharding-shutdown-region.
type GracefulShutdown struct{}

// GetCurrentRegions asks, through a region or proxy, for the addresses of the nodes
// whose regions the coordinator knows; the answer is CurrentRegions, or an
// actor.Failure wrapping ErrNoCoordinator while the region has not reached the
// coordinator.
type GetCurrentRegions struct{}

// CurrentRegions answers GetCurrentRegions: the nodes that host a region of the type
// (proxies excluded), in address order.
type CurrentRegions struct {
	Regions []actor.Address `msgpack:"regions"`
}

// GetShardRegionState asks a region for the shards it hosts and their running
// entities; the answer is ShardRegionState. Shards that do not answer within the
// ShardRegionQueryTimeout are listed in Failed. For tests and monitoring, not for
// routing.
type GetShardRegionState struct{}

// ShardRegionState answers GetShardRegionState: the local shards in ID order, each with
// its running entities in ID order.
type ShardRegionState struct {
	Shards []ShardState `msgpack:"shards"`
	Failed []ShardID    `msgpack:"failed,omitempty"`
}

// ShardState is one shard of ShardRegionState.
type ShardState struct {
	Shard    ShardID    `msgpack:"shard"`
	Entities []EntityID `msgpack:"entities"`
}

// GetShardRegionStats asks a region how many entities run in each of its shards; the
// answer is ShardRegionStats.
type GetShardRegionStats struct{}

// ShardRegionStats answers GetShardRegionStats: running entities per local shard.
// Shards that did not answer in time are in Failed.
type ShardRegionStats struct {
	Shards map[ShardID]int `msgpack:"shards"`
	Failed []ShardID       `msgpack:"failed,omitempty"`
}

// GetClusterShardingStats asks, through a region or proxy, every region of the type
// for its ShardRegionStats; the answer is ClusterShardingStats, after at most Timeout
// (0 means the ShardRegionQueryTimeout).
type GetClusterShardingStats struct {
	Timeout time.Duration `msgpack:"timeout"`
}

// ClusterShardingStats answers GetClusterShardingStats: the stats of every region, by
// its node's address. Regions that did not answer in time are in Failed.
type ClusterShardingStats struct {
	Regions map[string]ShardRegionStats `msgpack:"regions"`
	Failed  []string                    `msgpack:"failed,omitempty"`
}

// ErrNoCoordinator is the error of a query that needs the coordinator while the region
// has not reached it (during start-up, or while the coordinator moves).
var ErrNoCoordinator = errors.New("sharding: the coordinator is not known yet")

// ErrUnknownType is returned for an entity type that is not started on this node.
var ErrUnknownType = errors.New("sharding: entity type not started on this node")

// ErrUnplaceable is the reason a message goes to dead letters when the extractor cannot
// place it (an empty entity or shard ID, or a panic in the extractor).
var ErrUnplaceable = errors.New("sharding: the extractor cannot place the message")

// ErrNotStarted is returned when the sharding extension was not started on the system.
var ErrNotStarted = errors.New("sharding: not started on this system (call sharding.Start)")

// ErrAlreadyStarted is returned by a second Start of the extension, or of one entity
// type, on the same system.
var ErrAlreadyStarted = errors.New("sharding: already started")

// The public messages that may cross the wire are Troupe's own wire types: every
// registry knows them.
func init() {
	wiretypes.MustRegister[StartEntity]("troupe.sharding.StartEntity.v1")
	wiretypes.MustRegister[StartEntityAck]("troupe.sharding.StartEntityAck.v1")
	wiretypes.MustRegister[StopShards]("troupe.sharding.StopShardsRequest.v1")
	wiretypes.MustRegister[ShardStopped]("troupe.sharding.ShardStoppedReply.v1")
	wiretypes.MustRegister[GracefulShutdown]("troupe.sharding.GracefulShutdown.v1")
	wiretypes.MustRegister[GetCurrentRegions]("troupe.sharding.GetCurrentRegions.v1")
	wiretypes.MustRegister[CurrentRegions]("troupe.sharding.CurrentRegions.v1")
	wiretypes.MustRegister[GetShardRegionState]("troupe.sharding.GetShardRegionState.v1")
	wiretypes.MustRegister[ShardRegionState]("troupe.sharding.ShardRegionState.v1")
	wiretypes.MustRegister[GetShardRegionStats]("troupe.sharding.GetShardRegionStats.v1")
	wiretypes.MustRegister[ShardRegionStats]("troupe.sharding.ShardRegionStats.v1")
	wiretypes.MustRegister[GetClusterShardingStats]("troupe.sharding.GetClusterShardingStats.v1")
	wiretypes.MustRegister[ClusterShardingStats]("troupe.sharding.ClusterShardingStats.v1")
}
