package sharding

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/ratelog"
	"github.com/troupe-go/troupe/internal/shardcore"
	"go.uber.org/zap"
)

// ShardEvent is a rebalance event: ShardAllocated, ShardHandOffStarted,
// ShardHandOffCompleted or ShardHandOffFailed. The coordinator publishes them on the
// event stream of the node it runs on, so that operators see shards move without debug
// logs; subscribe with actor.Subscribe[sharding.ShardEvent](sys.EventStream(), ref).
type ShardEvent interface{ shardEvent() }

// ShardAllocated says a shard got a home. From is the node it was handed off from (the
// zero Address for a shard's first home, or after a crash), and Duration how long it
// was without a home since that hand-off began (0 for a first home).
type ShardAllocated struct {
	TypeName string
	Shard    ShardID
	To       actor.Address
	From     actor.Address
	Duration time.Duration
}

// ShardHandOffStarted says a shard began to move away from From: Rebalance is true when
// the allocation strategy moved it, false for a region shutting down or StopShards.
type ShardHandOffStarted struct {
	TypeName  string
	Shard     ShardID
	From      actor.Address
	Rebalance bool
}

// ShardHandOffCompleted says a shard's entities have stopped at From and the shard has
// no home until it is allocated again (at once, or at its next message). Duration runs
// from the start of the hand-off.
type ShardHandOffCompleted struct {
	TypeName string
	Shard    ShardID
	From     actor.Address
	Duration time.Duration
}

// ShardHandOffFailed says a hand-off did not complete within the hand-off timeout: the
// shard stays at From, and may be moved again later.
type ShardHandOffFailed struct {
	TypeName string
	Shard    ShardID
	From     actor.Address
	Duration time.Duration
}

func (ShardAllocated) shardEvent()        {}
func (ShardHandOffStarted) shardEvent()   {}
func (ShardHandOffCompleted) shardEvent() {}
func (ShardHandOffFailed) shardEvent()    {}

// Stats counts what one entity type did on this node since it started. Counters of the
// coordinator grow only on the node where the coordinator runs.
type Stats struct {
	// ShardsAllocated, HandOffsStarted, HandOffsCompleted and HandOffsFailed count the
	// rebalance events this node's coordinator published.
	ShardsAllocated   uint64
	HandOffsStarted   uint64
	HandOffsCompleted uint64
	HandOffsFailed    uint64
	// Unplaceable counts messages the extractor could not place (dead letters).
	Unplaceable uint64
	// BufferDropped counts messages dropped because a region's or shard's buffer was
	// full (dead letters, ErrBufferFull).
	BufferDropped uint64
	// Undelivered counts other messages this node's regions and shards could not
	// deliver: a region that stopped with messages it could not hand over, messages
	// that could not be serialized for another node, and messages for a shard that had
	// stopped (dead letters).
	Undelivered uint64
	// EntitiesStarted counts entity incarnations started on this node.
	EntitiesStarted uint64
}

// typeStats holds the counters of one entity type on this node.
type typeStats struct {
	allocated, handOffsStarted, handOffsCompleted, handOffsFailed atomic.Uint64
	unplaceable, bufferDropped, undelivered, entitiesStarted      atomic.Uint64
	// For the metrics, counted only while they are on: shards and entities hosted
	// here, messages held by the type's region and shards, entities passivated.
	shards, entities, buffered atomic.Int64
	passivations               atomic.Uint64
}

func (s *typeStats) snapshot() Stats {
	return Stats{
		ShardsAllocated:   s.allocated.Load(),
		HandOffsStarted:   s.handOffsStarted.Load(),
		HandOffsCompleted: s.handOffsCompleted.Load(),
		HandOffsFailed:    s.handOffsFailed.Load(),
		Unplaceable:       s.unplaceable.Load(),
		BufferDropped:     s.bufferDropped.Load(),
		Undelivered:       s.undelivered.Load(),
		EntitiesStarted:   s.entitiesStarted.Load(),
	}
}

// regionAddress returns the node address of a region, or the zero Address.
func regionAddress(r RegionID) actor.Address {
	a, err := actor.ParseAddress(shardcore.NodeAddress(r))
	if err != nil {
		return actor.Address{}
	}
	return a
}

// rateLog logs at most rateLogLimit lines per rateLogWindow and summarises the rest,
// so that a flood of drops cannot flood the log.
type rateLog struct{ lim ratelog.Limiter }

const (
	rateLogLimit  = 10
	rateLogWindow = time.Second
)

func newRateLog() *rateLog {
	return &rateLog{lim: ratelog.Limiter{Interval: rateLogWindow, Burst: rateLogLimit}}
}

// warn logs msg at warn level unless the window's quota is used up.
func (r *rateLog) warn(l *zap.Logger, msg string, fields ...zap.Field) {
	ok, suppressed := r.lim.Allow(time.Now())
	if suppressed > 0 {
		l.Warn("sharding: similar warnings not logged in the last window", zap.Int("count", suppressed),
			zap.Duration("window", rateLogWindow))
	}
	if ok {
		l.Warn(msg, fields...)
	}
}

// isBufferFull reports whether err says a buffer was full.
func isBufferFull(err error) bool { return errors.Is(err, ErrBufferFull) }

// typeNameOf returns the Go type of v, for logs.
func typeNameOf(v any) string { return fmt.Sprintf("%T", v) }
