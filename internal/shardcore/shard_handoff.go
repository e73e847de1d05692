package shardcore

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// HandOff stops the shard: every running entity gets the hand-off stop message, and once
// all have stopped (or after max(handoff-timeout - 5 s, 1 s), when the rest are stopped
// hard) the shard is done and returns every message it held undelivered, in arrival
// order, so that the region can pass them to the shard's next home. Messages that come
// meanwhile are held too. Stops during a hand-off are not recorded with
// Remember-entities: the entities are to start again at the next home.
func (s *ShardCore[M]) HandOff(now time.Time) ShardDecisions[M] {
	if s.phase == shardHandingOff || s.phase == shardStopped {
		return s.done()
	}
	s.phase = shardHandingOff
	s.timers.cancel(&s.out.Timers, TimerKey{Kind: TimerIdle})
	for _, id := range slices.Sorted(maps.Keys(s.entities)) {
		e := s.entities[id]
		switch e.state {
		case entActive:
			s.stopEntity(e, s.cfg.StopMessage)
		case entWaitingRestart:
			s.timers.cancel(&s.out.Timers, TimerKey{Kind: TimerEntityRestart, Entity: id})
			e.state = entNone
			s.tidy(e)
		case entRememberingStart, entRememberingStop:
			e.state = entNone
			s.tidy(e)
		}
	}
	if s.live == 0 {
		s.finish()
		return s.done()
	}
	s.timers.start(&s.out.Timers, TimerKey{Kind: TimerForceStop}, s.cfg.forceStopAfter(), false)
	return s.done()
}

// finish ends the shard and hands back what it held.
func (s *ShardCore[M]) finish() {
	s.phase = shardStopped
	keys := make([]TimerKey, 0, len(s.timers))
	for k := range s.timers {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b TimerKey) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		if a.Entity < b.Entity {
			return -1
		}
		if a.Entity > b.Entity {
			return 1
		}
		return 0
	})
	for _, k := range keys {
		s.timers.cancel(&s.out.Timers, k)
	}
	all := append(slices.Clone(s.early), s.extra...)
	for _, e := range s.entities {
		all = append(all, s.takeBuf(e)...)
	}
	slices.SortFunc(all, byArrival[M])
	left := make([]M, len(all))
	for i, q := range all {
		left[i] = q.msg
	}
	s.early, s.extra, s.buffered = nil, nil, 0
	clear(s.earlyIDs)
	s.out.Stopped = true
	s.out.Leftovers = left
}

// recordStart marks e as starting until the store confirms it (remember-entities); the
// caller then calls writeNext.
func (s *ShardCore[M]) recordStart(e *entity[M]) {
	e.state = entRememberingStart
	s.starts[e.id] = struct{}{}
}

// writeNext writes the recorded starts and stops in one batch, unless a write is in
// flight (they go in the next one).
func (s *ShardCore[M]) writeNext() {
	if s.writing != nil || s.phase != shardRunning || len(s.starts) == 0 && len(s.stops) == 0 {
		return
	}
	op := &EntityStoreOp{
		Started: slices.Sorted(maps.Keys(s.starts)),
		Stopped: slices.Sorted(maps.Keys(s.stops)),
	}
	clear(s.starts)
	clear(s.stops)
	s.writing = op
	s.out.Store = op
}

// stored: the write in flight is durable. Started entities start and get what waited
// for them; stopped ones are forgotten, or start again (and are recorded again) when
// messages came for them meanwhile.
func (s *ShardCore[M]) Stored(now time.Time) ShardDecisions[M] {
	op := s.writing
	if op == nil {
		s.problem(fmt.Errorf("%w: completion reported with no write in flight (shard %q)", errRememberStore, s.id))
		return s.done()
	}
	s.writing = nil
	if s.phase != shardRunning {
		return s.done() // a hand-off: the entities start at the next home
	}
	for _, id := range op.Started {
		if e := s.entities[id]; e != nil && e.state == entRememberingStart {
			s.spawn(now, e)
			s.flush(now, e)
		}
	}
	for _, id := range op.Stopped {
		e := s.entities[id]
		if e == nil || e.state != entRememberingStop {
			continue
		}
		e.state = entNone
		if s.holds(e) || e.restart {
			e.restart = false
			s.recordStart(e)
		} else {
			s.tidy(e)
		}
	}
	s.writeNext()
	return s.done()
}

// StoreFailed: the write in flight failed; it is asked for again.
func (s *ShardCore[M]) StoreFailed(err error) ShardDecisions[M] {
	if s.writing == nil {
		s.problem(fmt.Errorf("%w: failure reported with no write in flight (shard %q): %v", errRememberStore, s.id, err))
		return s.done()
	}
	s.problem(fmt.Errorf("%w: shard %q, retrying: %v", errRememberStore, s.id, err))
	if s.phase == shardRunning {
		s.out.Store = s.writing
	} else {
		s.writing = nil
	}
	return s.done()
}
