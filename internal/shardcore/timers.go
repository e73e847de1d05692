package shardcore

import (
	"time"

	"github.com/troupe-go/troupe/sharding/placement"
)

// TimerKind says what a core timer is for.
type TimerKind uint8

const (
	// Coordinator.
	TimerStateInit     TimerKind = iota + 1 // state loaded: start answering after a short delay
	TimerRebalance                          // periodic rebalance tick
	TimerHandOff                            // a shard's hand-off timeout (shard)
	TimerHostShard                          // resend HostShard (shard)
	TimerRemovalMargin                      // a removed node's region is gone (region)
	TimerStopShards                         // a StopShards request expires (n)

	// Region.
	TimerRegisterRetry // registration backoff
	TimerRetry         // periodic retry tick
	TimerHandOverWait  // give up waiting for a predecessor's messages (shard)
	TimerRestartShard  // restart a shard that stopped unexpectedly (remember-entities; shard)
	TimerLeaveUnknown  // a leaving region that never heard RegisterAck stops waiting for the coordinator

	// Shard.
	TimerEntityRestart // restart a remembered entity that stopped (entity)
	TimerForceStop     // stop entities that ignore the hand-off stop message
	TimerIdle          // periodic idle-passivation check
)

// TimerKey names one timer of a core. It is comparable, so a shell uses it as the key of
// an actor timer and as the message that timer delivers, and feeds it back to the core
// when it fires.
type TimerKey struct {
	Kind   TimerKind          // what the timer is for
	Shard  placement.ShardID  // the shard it concerns, if any
	Region placement.RegionID // the region it concerns, if any
	Entity placement.EntityID // the entity it concerns, if any
	N      uint64             // a request number (TimerStopShards)
}

// TimerOp asks the shell to start (replacing a running timer with the same key) or to
// cancel a timer. A periodic timer fires every After until cancelled.
type TimerOp struct {
	Key      TimerKey      // the timer, and the message its fire delivers
	After    time.Duration // when it fires (every After when Periodic)
	Periodic bool          // it fires until cancelled
	Cancel   bool          // cancel it instead of starting it
}

// timerSet tracks a core's running timers, so that the core ignores a fire it no longer
// expects (one that was already queued when the timer was cancelled or replaced).
type timerSet map[TimerKey]bool // value: periodic

// start records the timer and appends the start operation to ops.
func (t timerSet) start(ops *[]TimerOp, key TimerKey, after time.Duration, periodic bool) {
	t[key] = periodic
	*ops = append(*ops, TimerOp{Key: key, After: after, Periodic: periodic})
}

// cancel forgets the timer and appends the cancel operation to ops, if it runs.
func (t timerSet) cancel(ops *[]TimerOp, key TimerKey) {
	if _, ok := t[key]; !ok {
		return
	}
	delete(t, key)
	*ops = append(*ops, TimerOp{Key: key, Cancel: true})
}

// fired reports whether a fire of key is expected, and forgets a single-shot timer.
func (t timerSet) fired(key TimerKey) bool {
	periodic, ok := t[key]
	if ok && !periodic {
		delete(t, key)
	}
	return ok
}

// active reports whether the timer runs.
func (t timerSet) active(key TimerKey) bool {
	_, ok := t[key]
	return ok
}
