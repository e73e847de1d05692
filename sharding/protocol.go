package sharding

import "github.com/troupe-go/troupe/internal/wiretypes"

// The messages between regions and the coordinator (Akka's ShardCoordinator.Internal
// protocol, with the two additions Troupe needs to lose no message in a hand-off:
// shardStopped.Pending and hostShard.Predecessor). A message's sender identifies the
// region or proxy it comes from; fields carry only what the sender does not.

// msgRegister: a region asks the coordinator to register it (retried until acked).
type msgRegister struct{}

// msgRegisterProxy: a proxy-only region asks to register.
type msgRegisterProxy struct{}

// SuppressDeadLetterLog: a region sends its registration to every member where the
// coordinator may run; where it does not (yet), the dead letter is expected.
func (msgRegister) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as msgRegister's.
func (msgRegisterProxy) SuppressDeadLetterLog() {}

// msgRegisterAck: the coordinator registered the sender of Register(Proxy). The region
// watches the coordinator (the sender of the ack). Epoch names the coordinator's
// incarnation (0 from a coordinator that does not name it): its
// msgGracefulShutdownAck carries the same.
type msgRegisterAck struct {
	Epoch uint64 `msgpack:"epoch,omitempty"`
}

// msgGetShardHome: where does this shard live? Answered by msgShardHome, or not at all
// (the region asks again on its next retry tick) while the shard is in hand-off, while
// too few regions are registered, or while no region can host (a region that is leaving
// is told so, msgNoShardHome). HandOver is set by a
// region that owes the shard's next home a hand-over: when the coordinator knows which
// region followed it, it answers msgHandOverTo at once, even during a hand-off.
type msgGetShardHome struct {
	Shard    ShardID `msgpack:"shard"`
	HandOver bool    `msgpack:"handOver,omitempty"`
}

// msgHandOverTo: deliver the hand-over you owe for Shard to Region (the region that
// became the shard's home after you, which waits for it). It does not say where the
// shard lives now.
type msgHandOverTo struct {
	Shard  ShardID  `msgpack:"shard"`
	Region RegionID `msgpack:"region"`
}

// msgNoShardHome: no region can host Shard now (none can, or the allocation strategy
// gave it none). Sent only to a region that is leaving, in answer to its
// msgGetShardHome: it will not wait for a home that may never come, and drops what it
// holds for the shard. A region that stays asks again on its next retry tick.
type msgNoShardHome struct {
	Shard ShardID `msgpack:"shard"`
}

// msgShardHome: Shard lives in Region.
type msgShardHome struct {
	Shard  ShardID  `msgpack:"shard"`
	Region RegionID `msgpack:"region"`
}

// msgShardHomes: many homes at once, sent right after registration.
type msgShardHomes struct {
	Homes []shardHomesEntry `msgpack:"homes"`
}

// shardHomesEntry is one region's shards in msgShardHomes.
type shardHomesEntry struct {
	Region RegionID  `msgpack:"region"`
	Shards []ShardID `msgpack:"shards"`
}

// msgHostShard: the receiving region is now the shard's home; it starts the shard and
// answers msgShardStarted (resent every shard-start-timeout until then). Predecessor,
// when set, is the region that held the shard before and still holds messages for it:
// the new home delivers Predecessor's hand-over before anything else (see
// region_handoff.go).
type msgHostShard struct {
	Shard       ShardID  `msgpack:"shard"`
	Predecessor RegionID `msgpack:"predecessor,omitempty"`
}

// msgShardStarted answers msgHostShard.
type msgShardStarted struct {
	Shard ShardID `msgpack:"shard"`
}

// msgBeginHandOff: the shard is about to move; forget its home (buffer its messages)
// and acknowledge. ID names the hand-off (0 from a coordinator that does not name
// them); the acknowledgement echoes it.
type msgBeginHandOff struct {
	Shard ShardID `msgpack:"shard"`
	ID    uint64  `msgpack:"id,omitempty"`
}

// msgBeginHandOffAck acknowledges msgBeginHandOff for Region. A region that forwarded
// messages for the shard to another region sends its ack through that region (which
// passes it on to the coordinator), so that the ack reaches the coordinator only after
// those messages reached the region they were sent to.
type msgBeginHandOffAck struct {
	Shard  ShardID  `msgpack:"shard"`
	Region RegionID `msgpack:"region"`
	ID     uint64   `msgpack:"id,omitempty"` // the BeginHandOff's
}

// msgHandOff: every region acknowledged; stop the shard and answer msgShardStopped.
type msgHandOff struct {
	Shard ShardID `msgpack:"shard"`
}

// msgShardStopped: the shard stopped (answers msgHandOff, and each shard of
// msgStopShards to whoever asked). Pending means the region still holds messages for
// the shard that the next home must get first (see msgHostShard.Predecessor).
type msgShardStopped struct {
	Shard   ShardID `msgpack:"shard"`
	Pending bool    `msgpack:"pending,omitempty"`
}

// msgGracefulShutdownReq: the region is leaving; hand off all its shards (resent every
// retry tick until the region stops).
type msgGracefulShutdownReq struct{}

// msgGracefulShutdownAck: the coordinator's answer to msgGracefulShutdownReq once the
// leaving region hosts no shard and will be given none (sent again for each request
// then, and unasked when the region's last hand-off ends); also the answer to a region
// it has not registered, which it will then register only as leaving. The region stops
// only after it, so that a shard the coordinator gave it while its request was on the
// way is handed off, not lost with the region. Epoch is the coordinator's, as in its
// msgRegisterAck: a region that has registered once takes the acknowledgement only of
// the coordinator it is registered with.
type msgGracefulShutdownAck struct {
	Epoch uint64 `msgpack:"epoch,omitempty"`
}

// msgRegionStopped: the region stopped.
type msgRegionStopped struct{}

// msgStopShards: stop these shards (a user request); answered by one msgShardStopped
// per shard. Refused with remember-entities.
type msgStopShards struct {
	Shards []ShardID `msgpack:"shards"`
}

// The coordinator protocol's messages are Troupe's own wire types: every registry
// knows them, so they cross remote without the application registering them.
func init() {
	wiretypes.MustRegister[msgRegister]("troupe.sharding.Register.v1")
	wiretypes.MustRegister[msgRegisterProxy]("troupe.sharding.RegisterProxy.v1")
	wiretypes.MustRegister[msgRegisterAck]("troupe.sharding.RegisterAck.v1")
	wiretypes.MustRegister[msgGetShardHome]("troupe.sharding.GetShardHome.v1")
	wiretypes.MustRegister[msgShardHome]("troupe.sharding.ShardHome.v1")
	wiretypes.MustRegister[msgShardHomes]("troupe.sharding.ShardHomes.v1")
	wiretypes.MustRegister[msgHostShard]("troupe.sharding.HostShard.v1")
	wiretypes.MustRegister[msgShardStarted]("troupe.sharding.ShardStarted.v1")
	wiretypes.MustRegister[msgBeginHandOff]("troupe.sharding.BeginHandOff.v1")
	wiretypes.MustRegister[msgBeginHandOffAck]("troupe.sharding.BeginHandOffAck.v1")
	wiretypes.MustRegister[msgHandOff]("troupe.sharding.HandOff.v1")
	wiretypes.MustRegister[msgShardStopped]("troupe.sharding.ShardStopped.v1")
	wiretypes.MustRegister[msgGracefulShutdownReq]("troupe.sharding.GracefulShutdownReq.v1")
	wiretypes.MustRegister[msgGracefulShutdownAck]("troupe.sharding.GracefulShutdownAck.v1")
	wiretypes.MustRegister[msgRegionStopped]("troupe.sharding.RegionStopped.v1")
	wiretypes.MustRegister[msgStopShards]("troupe.sharding.StopShards.v1")
	wiretypes.MustRegister[msgHandOverTo]("troupe.sharding.HandOverTo.v1")
	wiretypes.MustRegister[msgNoShardHome]("troupe.sharding.NoShardHome.v1")
}

// SuppressDeadLetterLog: the reports of a region that stops reach a coordinator that may
// have stopped or moved meanwhile (at the end of a shutdown, or during a hand-over of
// the coordinator); the next coordinator learns the same from the regions that
// register with it.
func (msgShardStopped) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as msgShardStopped's (the request is resent every retry tick).
func (msgGracefulShutdownReq) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as msgShardStopped's.
func (msgRegionStopped) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: the coordinator acknowledges every request a leaving region
// resent, and the region may have stopped before the last acknowledgement arrives.
func (msgGracefulShutdownAck) SuppressDeadLetterLog() {}
