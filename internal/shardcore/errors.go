package shardcore

import "errors"

// ErrBufferFull reports a message that was not buffered because the region (or the
// shard) already holds buffer-size messages waiting for a shard's home or for an
// entity to start; package sharding gives it to users under the same name.
var ErrBufferFull = errors.New("sharding: buffer full, message dropped")

// Errors the cores report to their shells (in decisions) and that never reach a user
// directly; the shells log them.
var (
	// ErrInvalidEvent: a coordinator state event that does not fit the state (a shard
	// allocated twice, a region that is not registered, ...). The state is unchanged.
	ErrInvalidEvent = errors.New("sharding: coordinator event does not apply to the state")

	// ErrCorruptState: stored coordinator state that contradicts itself.
	ErrCorruptState = errors.New("sharding: corrupt coordinator state")

	// errStore: the shell could not store a coordinator event; the core retries.
	errStore = errors.New("sharding: storing coordinator state failed")

	// errStrategy: the allocation strategy failed or chose a region that cannot host.
	errStrategy = errors.New("sharding: allocation strategy gave no usable answer")

	// ErrShardHomeConflict: a region that hosts a shard is told the shard lives
	// elsewhere. Coordinator and region disagree; the region's shell must fail loudly.
	ErrShardHomeConflict = errors.New("sharding: region hosts a shard the coordinator placed elsewhere")

	// errProxyHost: a proxy-only region was asked to host a shard.
	errProxyHost = errors.New("sharding: proxy-only region asked to host a shard")

	// errNoShardID: a message whose shard (or entity) ID is empty cannot be routed.
	errNoShardID = errors.New("sharding: message without a shard or entity id")

	// errHandOverWait: a new home waited in vain for its predecessor's messages.
	errHandOverWait = errors.New("sharding: predecessor's hand-over did not arrive in time")

	// ErrStoppedLoss: a region or shard stopped with messages it could not deliver.
	ErrStoppedLoss = errors.New("sharding: stopped with undelivered messages")

	// errStopShardsRemembered: StopShards is refused when remember-entities is on.
	errStopShardsRemembered = errors.New("sharding: stop shards cannot be combined with remember-entities")

	// errHandOffTimeout: a rebalance or shutdown hand-off did not finish in time.
	errHandOffTimeout = errors.New("sharding: shard hand-off timed out")

	// ErrStoppedUnasked: a region stopped a shard it hosts while no hand-off of it
	// runs: it answers a hand-off that timed out, or one an earlier coordinator began.
	ErrStoppedUnasked = errors.New("sharding: shard stopped with no hand-off of it running")

	// errEntityState: an input that does not fit an entity's state (a stop from an
	// unknown entity, a passivation of an entity that is not running).
	errEntityState = errors.New("sharding: unexpected entity state")

	// errForcedStop: hand-off stop message not obeyed in time; entities stopped hard.
	errForcedStop = errors.New("sharding: entities did not stop after the hand-off stop message")

	// errRememberStore: the remember-entities store failed; the shard retries.
	errRememberStore = errors.New("sharding: remember-entities store failed")
)
