package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

// runner is the actor behind an Entity: it recovers the entity, writes its events
// in order (one journal call in flight at a time, so results come back in order),
// runs persist handlers once their events are stored, and stashes commands while a
// stashing persist is pending.
type runner struct {
	newEntity func() Entity
	entity    Entity
	settings  *Settings
	ext       *Persistence
	pid       string
	self      actor.Ref
	writerID  string      // the WriterID of this instance's records
	log       *zap.Logger // for the recovery goroutine
	claimed   bool
	cancel    context.CancelFunc

	recovering bool
	lastSeq    uint64

	batch    []AtomicWrite   // written by the command being handled
	spare    []AtomicWrite   // the slice of the last write done, for the next batch
	queued   [][]AtomicWrite // flushed batches waiting for the write in flight
	writing  bool
	done     writeDone    // the outcome of the write in flight, sent to self by pointer
	pending  []invocation // handlers waiting for their events, in order
	stashing int          // pending invocations that hold commands back

	handlerSender actor.Ref // the sender seen inside a persist handler
	inHandler     bool
	ctx           *entityContext
}

// invocation is a persist handler waiting for its event, or a deferred function.
type invocation struct {
	event    any
	seq      uint64
	handler  func(any)
	deferred func()
	stashing bool
	sender   actor.Ref
}

// Internal messages from the goroutines that talk to the plug-ins. Each carries the
// runner instance it belongs to: after a restart the actor has a new instance, which
// must ignore what the old one's goroutines still deliver.
type (
	recoveredSnapshot struct {
		owner *runner
		snap  *Snapshot
		state any // the decoded snapshot
		err   error
	}
	recoveredEvents struct {
		owner   *runner
		records []Record
	}
	recoveryDone struct {
		owner   *runner
		highest uint64
		err     error
	}
	writeDone struct {
		owner   *runner
		writes  []AtomicWrite
		results []error
		err     error
	}
)

func (r *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		r.start(ctx)
	case recoveredSnapshot:
		if m.owner == r {
			r.onSnapshot(ctx, m)
		}
	case recoveredEvents:
		if m.owner == r {
			r.onEvents(ctx, m)
		}
	case recoveryDone:
		if m.owner == r {
			r.onRecoveryDone(ctx, m)
		}
	case *writeDone:
		if m.owner == r {
			r.onWriteDone(ctx, m)
		}
	case redeliverTick:
		if a, ok := r.entity.(atLeastOnce); ok && !r.recovering {
			if warn, ok := a.atLeastOnceDelivery().tick(); ok {
				r.entity.Receive(&handlerContext{entityContext: r.context(ctx), msg: warn})
			}
		}
	case actor.Restarting, actor.Stopped:
		r.stop()
		if r.entity != nil && !r.recovering {
			r.entity.Receive(r.context(ctx))
		}
	case actor.Stopping:
		if r.entity != nil && !r.recovering {
			r.entity.Receive(r.context(ctx))
		}
	default:
		if r.entity == nil {
			return // failed to start or recover: stopping
		}
		if r.recovering || r.stashing > 0 {
			if err := ctx.Stash(); err != nil {
				ctx.Logger().Warn("persistence: stash full; command dropped", zap.String("persistence_id", r.pid), zap.Error(err))
			}
			return
		}
		r.entity.Receive(r.context(ctx))
		r.flush(ctx)
	}
}

func (r *runner) start(ctx actor.Context) {
	r.self = ctx.Self()
	r.log = ctx.Logger()
	r.ext = Get(ctx.System())
	settings, err := r.ext.config()
	if err != nil {
		ctx.Logger().Error("persistence: cannot start entity", zap.Error(err))
		ctx.Stop(ctx.Self())
		return
	}
	r.settings = settings
	r.entity = r.newEntity()
	r.pid = r.entity.PersistenceID()
	r.writerID = r.self.String()
	if err := r.ext.claim(r.pid, r.self); err != nil {
		ctx.Logger().Error("persistence: cannot start entity", zap.String("persistence_id", r.pid), zap.Error(err))
		r.entity = nil
		ctx.Stop(ctx.Self())
		return
	}
	r.claimed = true
	r.recovering = true
	var rec Recovery
	if rc, ok := r.entity.(RecoveryConfigurer); ok {
		rec = rc.Recovery()
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if rec.Disabled {
		_ = r.self.Tell(recoveryDone{owner: r})
		return
	}
	go r.replay(rctx, rec)
}

// replay runs on its own goroutine: it loads and decodes the snapshot, then streams
// the events after it to the actor in batches, then the highest sequence number.
func (r *runner) replay(ctx context.Context, rec Recovery) {
	settings, pid, self := r.settings, r.pid, r.self
	if err := r.ext.awaitWrite(ctx, pid); err != nil {
		_ = self.Tell(recoveryDone{owner: r, err: err})
		return
	}
	from := uint64(1)
	fellBack := false
	if settings.Snapshots != nil && !rec.NoSnapshot {
		snap, state, skipped, err := loadSnapshot(ctx, settings, pid, rec.FromSnapshot, r.log)
		if err != nil {
			_ = self.Tell(recoveredSnapshot{owner: r, err: err})
			return
		}
		fellBack = skipped
		if snap != nil {
			_ = self.Tell(recoveredSnapshot{owner: r, snap: snap, state: state})
			from = snap.Metadata.SequenceNr + 1
		}
	}
	to := rec.ToSequenceNr
	if to == 0 {
		to = MaxSequenceNr
	}
	batch := make([]Record, 0, settings.ReplayBatch)
	first := true
	err := settings.Journal.ReplayMessages(ctx, pid, from, to, 0, func(rec Record) error {
		if first && fellBack && rec.SequenceNr != from {
			// The older snapshot (or none) does not reach the events that are left.
			return fmt.Errorf("%w: %q: the snapshot to fall back to ends at %d, but the events up to %d are deleted",
				errNoFallback, pid, from-1, rec.SequenceNr-1)
		}
		first = false
		batch = append(batch, rec)
		if len(batch) == cap(batch) {
			_ = self.Tell(recoveredEvents{owner: r, records: batch})
			batch = make([]Record, 0, settings.ReplayBatch)
		}
		return nil
	})
	if len(batch) > 0 {
		_ = self.Tell(recoveredEvents{owner: r, records: batch})
	}
	if err != nil {
		_ = self.Tell(recoveryDone{owner: r, err: err})
		return
	}
	highest, err := settings.Journal.HighestSequenceNr(ctx, pid)
	if err == nil && first && fellBack && highest >= from {
		err = fmt.Errorf("%w: %q: the snapshot to fall back to ends at %d, but the events up to %d are deleted",
			errNoFallback, pid, from-1, highest)
	}
	_ = self.Tell(recoveryDone{owner: r, highest: highest, err: err})
}

// errNoFallback fails a recovery whose snapshot is unusable when the events it
// covered are deleted.
var errNoFallback = errors.New("persistence: unusable snapshot and no fallback")

// maxSnapshotAttempts bounds how many snapshots a recovery tries, newest first,
// before it gives up on snapshots.
const maxSnapshotAttempts = 3

// loadSnapshot loads and decodes the newest snapshot c selects. A snapshot that is
// corrupt in the store or does not decode is logged and skipped, as Akka does, for
// the next older one; after maxSnapshotAttempts, or when there is none older, the
// recovery replays from the start (skipped reports that it fell back). Other errors
// of the store fail the recovery.
func loadSnapshot(ctx context.Context, settings *Settings, pid string, c SnapshotCriteria, log *zap.Logger) (snap *Snapshot, state any, skipped bool, err error) {
	for attempt := 0; attempt < maxSnapshotAttempts; attempt++ {
		s, ok, err := settings.Snapshots.LoadSnapshot(ctx, pid, c)
		var bad uint64
		var cre *CorruptRecordError
		switch {
		case err != nil && asCorrupt(err, &cre) && cre.Snapshot:
			bad = cre.SequenceNr
		case err != nil:
			return nil, nil, false, err
		case !ok:
			return nil, nil, skipped, nil
		default:
			st, uerr := settings.Registry.UnmarshalContext(s.Manifest, s.Payload, settings.resolver)
			if uerr == nil {
				return &s, st, skipped, nil
			}
			err, bad = uerr, s.Metadata.SequenceNr
		}
		log.Warn("persistence: snapshot unusable; falling back to an older one",
			zap.String("persistence_id", pid), zap.Uint64("sequence_nr", bad), zap.Error(err))
		skipped = true
		if bad <= max(1, c.MinSequenceNr) {
			break // nothing older can match
		}
		c.MaxSequenceNr = bad - 1
	}
	log.Warn("persistence: no usable snapshot; replaying all events", zap.String("persistence_id", pid))
	return nil, nil, true, nil
}

func (r *runner) failRecovery(ctx actor.Context, err error, seq uint64) {
	ctx.Logger().Error("persistence: recovery failed; stopping the entity",
		zap.String("persistence_id", r.pid), zap.Uint64("sequence_nr", seq), zap.Error(err))
	r.recovering = false
	r.entity = nil
	ctx.Stop(ctx.Self())
}

func (r *runner) onSnapshot(ctx actor.Context, m recoveredSnapshot) {
	if !r.recovering {
		return
	}
	if m.err != nil {
		r.failRecovery(ctx, m.err, 0)
		return
	}
	r.lastSeq = m.snap.Metadata.SequenceNr
	r.entity.Recover(&handlerContext{entityContext: r.context(ctx), msg: SnapshotOffer{Metadata: m.snap.Metadata, Snapshot: m.state}})
}

func (r *runner) onEvents(ctx actor.Context, m recoveredEvents) {
	if !r.recovering {
		return
	}
	hc := &handlerContext{entityContext: r.context(ctx)} // one per batch, not per event
	for _, rec := range m.records {
		ev, err := r.settings.Registry.UnmarshalContext(rec.Manifest, rec.Payload, r.settings.resolver)
		if err != nil {
			r.failRecovery(ctx, fmt.Errorf("event %q #%d: %w", r.pid, rec.SequenceNr, err), rec.SequenceNr)
			return
		}
		r.lastSeq = rec.SequenceNr
		hc.msg = ev
		r.entity.Recover(hc)
	}
}

func (r *runner) onRecoveryDone(ctx actor.Context, m recoveryDone) {
	if !r.recovering {
		return
	}
	if m.err != nil {
		var seq uint64
		var cre *CorruptRecordError
		if ok := asCorrupt(m.err, &cre); ok {
			seq = cre.SequenceNr
		}
		r.failRecovery(ctx, m.err, seq)
		return
	}
	r.lastSeq = max(r.lastSeq, m.highest)
	r.recovering = false
	r.entity.Recover(&handlerContext{entityContext: r.context(ctx), msg: RecoveryCompleted{HighestSequenceNr: r.lastSeq}})
	if a, ok := r.entity.(atLeastOnce); ok {
		a.atLeastOnceDelivery().start(ctx)
	}
	ctx.UnstashAll()
}

// persist records events for the write that follows the current command.
func (r *runner) persist(ctx actor.Context, events []any, handler func(any), stashing bool) error {
	if r.recovering || r.entity == nil {
		return fmt.Errorf("%w: %q cannot persist before recovery has completed", ErrRejected, r.pid)
	}
	if len(events) == 0 {
		return nil
	}
	records := make([]Record, len(events))
	now := time.Now()
	copied := false
	for i, ev := range events {
		var tags []string
		if t, ok := ev.(Tagged); ok {
			if !copied { // handlers see the event itself; the caller's slice stays as it was
				events, copied = append([]any(nil), events...), true
			}
			ev, tags = t.Event, t.Tags
			events[i] = ev
		}
		manifest, data, err := r.settings.Registry.Marshal(ev)
		if err != nil {
			ctx.Logger().Warn("persistence: event rejected", zap.String("persistence_id", r.pid), zap.Error(err))
			return fmt.Errorf("%w: %q: %w", ErrRejected, r.pid, err)
		}
		records[i] = Record{
			PersistenceID: r.pid, SequenceNr: r.lastSeq + uint64(i) + 1,
			Manifest: manifest, Payload: data, Tags: tags, Timestamp: now, WriterID: r.writerID,
		}
	}
	sender := r.sender(ctx)
	for i, ev := range events {
		r.pending = append(r.pending, invocation{event: ev, seq: records[i].SequenceNr, handler: handler, stashing: stashing, sender: sender})
		if stashing {
			r.stashing++
		}
	}
	r.lastSeq += uint64(len(events))
	r.batch = append(r.batch, AtomicWrite{PersistenceID: r.pid, Events: records})
	return nil
}

func (r *runner) deferCall(ctx actor.Context, fn func()) {
	if len(r.pending) == 0 {
		fn()
		return
	}
	r.pending = append(r.pending, invocation{deferred: fn, stashing: true, sender: r.sender(ctx)})
	r.stashing++
}

func (r *runner) sender(ctx actor.Context) actor.Ref {
	if r.inHandler {
		return r.handlerSender
	}
	return ctx.Sender()
}

// flush hands the writes of the last command to the journal, one call at a time.
func (r *runner) flush(ctx actor.Context) {
	if len(r.batch) == 0 {
		return
	}
	writes := r.batch
	r.batch, r.spare = r.spare, nil
	if r.writing {
		r.queued = append(r.queued, writes)
		return
	}
	r.write(writes)
}

func (r *runner) write(writes []AtomicWrite) {
	r.writing = true
	r.ext.writeStarted(r.pid)
	r.ext.batcher.submit(writeJob{writes: writes, owner: r})
}

// written is called by the batcher, on its goroutine, with the outcome of the write in
// flight. The runner reads r.done only after this Tell, and starts its next write (the
// next call of written) only after reading it.
func (r *runner) written(writes []AtomicWrite, results []error, err error) {
	r.ext.writeFinished(r.pid)
	r.done = writeDone{owner: r, writes: writes, results: results, err: err}
	_ = r.self.Tell(&r.done)
}

func (r *runner) onWriteDone(ctx actor.Context, done *writeDone) {
	m := *done
	*done = writeDone{}
	r.writing = false
	if m.err != nil {
		// The journal may or may not hold the events: the entity's state can no
		// longer be trusted to match it.
		ctx.Logger().Error("persistence: write failed; stopping the entity",
			zap.String("persistence_id", r.pid), zap.Error(m.err))
		r.entity = nil
		ctx.Stop(ctx.Self())
		return
	}
	pctx := r.context(ctx)
	for i, w := range m.writes {
		var rejected error
		if i < len(m.results) {
			rejected = m.results[i]
		}
		for range w.Events {
			r.runDeferred()
			inv := r.pending[0]
			r.pending = r.pending[1:]
			if inv.stashing {
				r.stashing--
			}
			if rejected != nil {
				ctx.Logger().Warn("persistence: journal rejected an event",
					zap.String("persistence_id", r.pid), zap.Uint64("sequence_nr", inv.seq), zap.Error(rejected))
				r.entity.Receive(&handlerContext{entityContext: pctx, msg: PersistRejected{Event: inv.event, SequenceNr: inv.seq, Err: rejected}})
				continue
			}
			r.inHandler, r.handlerSender = true, inv.sender
			inv.handler(inv.event)
			r.inHandler, r.handlerSender = false, actor.Ref{}
		}
	}
	r.runDeferred()
	if r.spare == nil { // the journal is done with the slice: the next batch can use it
		clear(m.writes)
		r.spare = m.writes[:0]
	}
	if len(r.queued) > 0 {
		next := r.queued[0]
		r.queued = r.queued[1:]
		r.write(next)
	}
	r.flush(ctx)
	if r.stashing == 0 {
		ctx.UnstashAll()
	}
}

// runDeferred runs the deferred functions at the head of the pending queue.
func (r *runner) runDeferred() {
	for len(r.pending) > 0 && r.pending[0].deferred != nil {
		inv := r.pending[0]
		r.pending = r.pending[1:]
		r.stashing--
		r.inHandler, r.handlerSender = true, inv.sender
		inv.deferred()
		r.inHandler, r.handlerSender = false, actor.Ref{}
	}
}

func (r *runner) stop() {
	if r.cancel != nil {
		r.cancel()
	}
	if r.claimed {
		r.ext.release(r.pid, r.self)
		r.claimed = false
	}
}
