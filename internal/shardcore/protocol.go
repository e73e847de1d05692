package shardcore

import (
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/sharding/placement"
)

// The messages between regions and the coordinator (Akka's ShardCoordinator.Internal
// protocol, with the two additions Troupe needs to lose no message in a hand-off:
// shardStopped.Pending and hostShard.Predecessor). A message's sender identifies the
// region or proxy it comes from; fields carry only what the sender does not.

// Register: a region asks the coordinator to register it (retried until acked).
type Register struct{}

// RegisterProxy: a proxy-only region asks to register.
type RegisterProxy struct{}

// SuppressDeadLetterLog: a region sends its registration to every member where the
// Coordinator may run; where it does not (yet), the dead letter is expected.
func (Register) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as Register's.
func (RegisterProxy) SuppressDeadLetterLog() {}

// RegisterAck: the coordinator registered the sender of Register(Proxy). The region
// watches the coordinator (the sender of the ack). Epoch names the coordinator's
// incarnation (0 from a coordinator that does not name it): its
// GracefulShutdownAck carries the same.
type RegisterAck struct {
	Epoch uint64 `msgpack:"epoch,omitempty"`
}

// GetShardHome: where does this shard live? Answered by ShardHome, or not at all
// (the region asks again on its next retry tick) while the shard is in hand-off, while
// too few regions are registered, or while no region can host (a region that is leaving
// is told so, NoShardHome). HandOver is set by a
// region that owes the shard's next home a hand-over: when the coordinator knows which
// region followed it, it answers HandOverTo at once, even during a hand-off.
type GetShardHome struct {
	Shard    placement.ShardID `msgpack:"shard"`
	HandOver bool              `msgpack:"handOver,omitempty"`
}

// HandOverTo: deliver the hand-over you owe for Shard to Region (the region that
// became the shard's home after you, which waits for it). It does not say where the
// shard lives now.
type HandOverTo struct {
	Shard  placement.ShardID  `msgpack:"shard"`
	Region placement.RegionID `msgpack:"region"`
}

// NoShardHome: no region can host Shard now (none can, or the allocation strategy
// gave it none). Sent only to a region that is leaving, in answer to its
// GetShardHome: it will not wait for a home that may never come, and drops what it
// holds for the shard. A region that stays asks again on its next retry tick.
type NoShardHome struct {
	Shard placement.ShardID `msgpack:"shard"`
}

// ShardHome: Shard lives in Region.
type ShardHome struct {
	Shard  placement.ShardID  `msgpack:"shard"`
	Region placement.RegionID `msgpack:"region"`
}

// ShardHomes: many homes at once, sent right after registration.
type ShardHomes struct {
	Homes []ShardHomesEntry `msgpack:"homes"`
}

// ShardHomesEntry is one region's shards in ShardHomes.
type ShardHomesEntry struct {
	Region placement.RegionID  `msgpack:"region"`
	Shards []placement.ShardID `msgpack:"shards"`
}

// HostShard: the receiving region is now the shard's home; it starts the shard and
// answers ShardStarted (resent every shard-start-timeout until then). Predecessor,
// when set, is the region that held the shard before and still holds messages for it:
// the new home delivers Predecessor's hand-over before anything else (see
// region_handoff.go).
type HostShard struct {
	Shard       placement.ShardID  `msgpack:"shard"`
	Predecessor placement.RegionID `msgpack:"predecessor,omitempty"`
}

// ShardStarted answers HostShard.
type ShardStarted struct {
	Shard placement.ShardID `msgpack:"shard"`
}

// BeginHandOff: the shard is about to move; forget its home (buffer its messages)
// and acknowledge. ID names the hand-off (0 from a coordinator that does not name
// them); the acknowledgement echoes it.
type BeginHandOff struct {
	Shard placement.ShardID `msgpack:"shard"`
	ID    uint64            `msgpack:"id,omitempty"`
}

// BeginHandOffAck acknowledges BeginHandOff for Region. A region that forwarded
// messages for the shard to another region sends its ack through that region (which
// passes it on to the coordinator), so that the ack reaches the coordinator only after
// those messages reached the region they were sent to.
type BeginHandOffAck struct {
	Shard  placement.ShardID  `msgpack:"shard"`
	Region placement.RegionID `msgpack:"region"`
	ID     uint64             `msgpack:"id,omitempty"` // the BeginHandOff's
}

// HandOff: every region acknowledged; stop the shard and answer ShardStopped.
type HandOff struct {
	Shard placement.ShardID `msgpack:"shard"`
}

// ShardStopped: the shard stopped (answers HandOff, and each shard of
// StopShards to whoever asked). Pending means the region still holds messages for
// the shard that the next home must get first (see HostShard.Predecessor).
type ShardStopped struct {
	Shard   placement.ShardID `msgpack:"shard"`
	Pending bool              `msgpack:"pending,omitempty"`
}

// GracefulShutdownReq: the region is leaving; hand off all its shards (resent every
// retry tick until the region stops).
type GracefulShutdownReq struct{}

// GracefulShutdownAck: the coordinator's answer to GracefulShutdownReq once the
// leaving region hosts no shard and will be given none (sent again for each request
// then, and unasked when the region's last hand-off ends); also the answer to a region
// it has not registered, which it will then register only as leaving. The region stops
// only after it, so that a shard the coordinator gave it while its request was on the
// way is handed off, not lost with the region. Epoch is the coordinator's, as in its
// RegisterAck: a region that has registered once takes the acknowledgement only of
// the coordinator it is registered with.
type GracefulShutdownAck struct {
	Epoch uint64 `msgpack:"epoch,omitempty"`
}

// RegionStopped: the region stopped.
type RegionStopped struct{}

// StopShards: stop these shards (a user request); answered by one ShardStopped
// per shard. Refused with remember-entities.
type StopShards struct {
	Shards []placement.ShardID `msgpack:"shards"`
}

// HandOverAck answers msgHandOverDone: the receiving region has taken the hand-over
// of Shard. The region that handed it over does not stop before it (RegionCore.handedOver).
type HandOverAck struct {
	Shard placement.ShardID `msgpack:"shard"`
}

// The coordinator protocol's messages are Troupe's own wire types: every registry
// knows them, so they cross remote without the application registering them.
func init() {
	wiretypes.MustRegister[Register]("troupe.sharding.Register.v1")
	wiretypes.MustRegister[RegisterProxy]("troupe.sharding.RegisterProxy.v1")
	wiretypes.MustRegister[RegisterAck]("troupe.sharding.RegisterAck.v1")
	wiretypes.MustRegister[GetShardHome]("troupe.sharding.GetShardHome.v1")
	wiretypes.MustRegister[ShardHome]("troupe.sharding.ShardHome.v1")
	wiretypes.MustRegister[ShardHomes]("troupe.sharding.ShardHomes.v1")
	wiretypes.MustRegister[HostShard]("troupe.sharding.HostShard.v1")
	wiretypes.MustRegister[ShardStarted]("troupe.sharding.ShardStarted.v1")
	wiretypes.MustRegister[BeginHandOff]("troupe.sharding.BeginHandOff.v1")
	wiretypes.MustRegister[BeginHandOffAck]("troupe.sharding.BeginHandOffAck.v1")
	wiretypes.MustRegister[HandOff]("troupe.sharding.HandOff.v1")
	wiretypes.MustRegister[ShardStopped]("troupe.sharding.ShardStopped.v1")
	wiretypes.MustRegister[GracefulShutdownReq]("troupe.sharding.GracefulShutdownReq.v1")
	wiretypes.MustRegister[GracefulShutdownAck]("troupe.sharding.GracefulShutdownAck.v1")
	wiretypes.MustRegister[RegionStopped]("troupe.sharding.RegionStopped.v1")
	wiretypes.MustRegister[StopShards]("troupe.sharding.StopShards.v1")
	wiretypes.MustRegister[HandOverTo]("troupe.sharding.HandOverTo.v1")
	wiretypes.MustRegister[NoShardHome]("troupe.sharding.NoShardHome.v1")
	wiretypes.MustRegister[HandOverAck]("troupe.sharding.HandOverAck.v1")
}

// SuppressDeadLetterLog: the reports of a region that stops reach a coordinator that may
// have stopped or moved meanwhile (at the end of a shutdown, or during a hand-over of
// the coordinator); the next coordinator learns the same from the regions that
// register with it.
func (ShardStopped) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as ShardStopped's (the request is resent every retry tick).
func (GracefulShutdownReq) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as ShardStopped's.
func (RegionStopped) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: the coordinator acknowledges every request a leaving region
// resent, and the region may have stopped before the last acknowledgement arrives.
func (GracefulShutdownAck) SuppressDeadLetterLog() {}
