package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

// Internal messages from the goroutines that read the plug-ins during recovery. Each
// carries the runner instance it belongs to: after a restart the actor has a new
// instance, which must ignore what the old one's goroutines still deliver.
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
)

// The runtime's own notices to an entity are expected dead letters once it has
// stopped: counted and published, not logged.
func (recoveredSnapshot) SuppressDeadLetterLog() {}
func (recoveredEvents) SuppressDeadLetterLog()   {}
func (recoveryDone) SuppressDeadLetterLog()      {}
func (*writeDone) SuppressDeadLetterLog()        {}
func (opDone) SuppressDeadLetterLog()            {}

// startRecovery starts the goroutine that reads the entity's snapshot and events.
func (r *runner) startRecovery(ctx actor.Context) {
	var rec Recovery
	if rc, ok := r.entity.(RecoveryConfigurer); ok {
		rec = rc.Recovery()
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	if r.p.metrics != nil {
		r.recovering = time.Now()
	}
	if rec.Disabled {
		_ = r.self.Tell(recoveryDone{owner: r})
		return
	}
	go r.replay(rctx, rec)
}

// replay runs on its own goroutine: it loads and decodes the snapshot, then streams
// the events after it to the actor in batches, then the highest sequence number.
// Every plug-in call is bounded (plugins); a stalled one fails the recovery.
func (r *runner) replay(ctx context.Context, rec Recovery) {
	p, pid, self := r.p, r.pid, r.self
	if err := p.awaitWrite(ctx, pid); err != nil {
		_ = self.Tell(recoveryDone{owner: r, err: err})
		return
	}
	from := uint64(1)
	fellBack := false
	if p.cfg.Snapshots != nil && !rec.NoSnapshot {
		snap, state, skipped, err := loadSnapshot(ctx, p, pid, rec.FromSnapshot, r.log)
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
	// batch and first belong to the plug-in's goroutine, which runs fn and end.
	batch := make([]Record, 0, p.cfg.ReplayBatch)
	first := true
	fn := func(rec Record) error {
		if first && fellBack && rec.SequenceNr != from {
			// The older snapshot (or none) does not reach the events that are left.
			return fmt.Errorf("%w: %q: the snapshot to fall back to ends at %d, but the events up to %d are deleted",
				errNoFallback, pid, from-1, rec.SequenceNr-1)
		}
		first = false
		batch = append(batch, rec)
		if len(batch) == cap(batch) {
			_ = self.Tell(recoveredEvents{owner: r, records: batch})
			batch = make([]Record, 0, p.cfg.ReplayBatch)
		}
		return nil
	}
	var noneReplayed bool
	end := func() {
		if len(batch) > 0 {
			_ = self.Tell(recoveredEvents{owner: r, records: batch})
		}
		noneReplayed = first
	}
	if err := p.calls.replay(ctx, pid, from, to, fn, end); err != nil {
		_ = self.Tell(recoveryDone{owner: r, err: err})
		return
	}
	// The replay returned without a timeout, so end has run and noneReplayed is set.
	highest, err := p.calls.highest(ctx, pid)
	if err == nil && noneReplayed && fellBack && highest >= from {
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
func loadSnapshot(ctx context.Context, p *Persistence, pid string, c SnapshotCriteria, log *zap.Logger) (snap *Snapshot, state any, skipped bool, err error) {
	for attempt := 0; attempt < maxSnapshotAttempts; attempt++ {
		s, ok, err := p.calls.loadSnapshot(ctx, pid, c)
		var bad uint64
		var cre *CorruptRecordError
		switch {
		case err != nil && errors.As(err, &cre) && cre.Snapshot:
			bad = cre.SequenceNr
		case err != nil:
			return nil, nil, false, err
		case !ok:
			return nil, nil, skipped, nil
		default:
			st, uerr := p.cfg.Registry.UnmarshalContext(s.Manifest, s.Payload, p.codec)
			if uerr == nil {
				return &s, st, skipped, nil
			}
			err, bad = uerr, s.Metadata.SequenceNr
		}
		log.Warn("persistence: snapshot unusable; falling back to an older one",
			zap.Uint64("sequence_nr", bad), zap.Error(err))
		skipped = true
		if bad <= max(1, c.MinSequenceNr) {
			break // nothing older can match
		}
		c.MaxSequenceNr = bad - 1
	}
	log.Warn("persistence: no usable snapshot; replaying all events")
	return nil, nil, true, nil
}

func (r *runner) failRecovery(ctx actor.Context, err error, seq uint64) {
	r.p.stats.recoveriesFailed.Add(1)
	r.log.Error("persistence: recovery failed; stopping the entity", zap.Uint64("sequence_nr", seq), zap.Error(err))
	r.fail(ctx, err)
}

func (r *runner) onSnapshot(ctx actor.Context, m recoveredSnapshot) {
	if r.entity == nil || !r.core.Recovering() {
		return
	}
	if m.err != nil {
		r.failRecovery(ctx, m.err, 0)
		return
	}
	r.core.SnapshotOffered(m.snap.Metadata.SequenceNr)
	r.entity.Recover(&handlerContext{entityContext: r.context(ctx), msg: SnapshotOffer{Metadata: m.snap.Metadata, Snapshot: m.state}})
}

func (r *runner) onEvents(ctx actor.Context, m recoveredEvents) {
	if r.entity == nil || !r.core.Recovering() {
		return
	}
	hc := &handlerContext{entityContext: r.context(ctx)} // one per batch, not per event
	for _, rec := range m.records {
		ev, err := r.p.cfg.Registry.UnmarshalContext(rec.Manifest, rec.Payload, r.p.codec)
		if err != nil {
			r.failRecovery(ctx, fmt.Errorf("event %q #%d: %w", r.pid, rec.SequenceNr, err), rec.SequenceNr)
			return
		}
		r.core.Replayed(rec.SequenceNr)
		hc.msg = ev
		r.entity.Recover(hc)
	}
}

func (r *runner) onRecoveryDone(ctx actor.Context, m recoveryDone) {
	if r.entity == nil || !r.core.Recovering() {
		return
	}
	if m.err != nil {
		var seq uint64
		var cre *CorruptRecordError
		if errors.As(m.err, &cre) {
			seq = cre.SequenceNr
		}
		r.failRecovery(ctx, m.err, seq)
		return
	}
	unstash := r.core.Recovered(m.highest)
	r.live = true
	if pm := r.p.metrics; pm != nil && !r.recovering.IsZero() {
		pm.recovery.Record(context.Background(), time.Since(r.recovering).Seconds())
	}
	r.entity.Recover(&handlerContext{entityContext: r.context(ctx), msg: RecoveryCompleted{HighestSequenceNr: r.core.LastSequenceNr()}})
	if a, ok := r.entity.(atLeastOnce); ok {
		a.atLeastOnceDelivery().start(ctx)
	}
	r.flush()
	if unstash {
		ctx.UnstashAll()
	}
}
