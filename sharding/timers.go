package sharding

import "time"

// timerKind says what a core timer is for.
type timerKind uint8

const (
	// Coordinator.
	timerStateInit     timerKind = iota + 1 // state loaded: start answering after a short delay
	timerRebalance                          // periodic rebalance tick
	timerHandOff                            // a shard's hand-off timeout (shard)
	timerHostShard                          // resend HostShard (shard)
	timerRemovalMargin                      // a removed node's region is gone (region)
	timerStopShards                         // a StopShards request expires (n)

	// Region.
	timerRegisterRetry // registration backoff
	timerRetry         // periodic retry tick
	timerHandOverWait  // give up waiting for a predecessor's messages (shard)
	timerRestartShard  // restart a shard that stopped unexpectedly (remember-entities; shard)
	timerLeaveUnknown  // a leaving region that never heard RegisterAck stops waiting for the coordinator

	// Shard.
	timerEntityRestart // restart a remembered entity that stopped (entity)
	timerForceStop     // stop entities that ignore the hand-off stop message
	timerIdle          // periodic idle-passivation check
)

// timerKey names one timer of a core. It is comparable, so a shell uses it as the key of
// an actor timer and as the message that timer delivers, and feeds it back to the core
// when it fires.
type timerKey struct {
	kind   timerKind
	shard  ShardID
	region RegionID
	entity EntityID
	n      uint64
}

// timerOp asks the shell to start (replacing a running timer with the same key) or to
// cancel a timer. A periodic timer fires every after until cancelled.
type timerOp struct {
	key      timerKey
	after    time.Duration
	periodic bool
	cancel   bool
}

// timerSet tracks a core's running timers, so that the core ignores a fire it no longer
// expects (one that was already queued when the timer was cancelled or replaced).
type timerSet map[timerKey]bool // value: periodic

// start records the timer and appends the start operation to ops.
func (t timerSet) start(ops *[]timerOp, key timerKey, after time.Duration, periodic bool) {
	t[key] = periodic
	*ops = append(*ops, timerOp{key: key, after: after, periodic: periodic})
}

// cancel forgets the timer and appends the cancel operation to ops, if it runs.
func (t timerSet) cancel(ops *[]timerOp, key timerKey) {
	if _, ok := t[key]; !ok {
		return
	}
	delete(t, key)
	*ops = append(*ops, timerOp{key: key, cancel: true})
}

// fired reports whether a fire of key is expected, and forgets a single-shot timer.
func (t timerSet) fired(key timerKey) bool {
	periodic, ok := t[key]
	if ok && !periodic {
		delete(t, key)
	}
	return ok
}

// active reports whether the timer runs.
func (t timerSet) active(key timerKey) bool {
	_, ok := t[key]
	return ok
}
