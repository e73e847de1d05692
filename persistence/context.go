package persistence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// entityContext is the Context handed to an Entity's Receive.
type entityContext struct {
	actor.Context
	r *runner
}

// context returns the entity's Context. The actor's Context is the same value for the
// whole life of an instance, so one wrapper per runner serves every message.
func (r *runner) context(ctx actor.Context) *entityContext {
	if r.ctx == nil || r.ctx.Context != ctx {
		r.ctx = &entityContext{Context: ctx, r: r}
	}
	return r.ctx
}

func (c *entityContext) Sender() actor.Ref {
	if c.r.inHandler {
		return c.r.handlerSender
	}
	return c.Context.Sender()
}

func (c *entityContext) Respond(msg any) error {
	if c.r.inHandler {
		return c.r.handlerSender.Send(msg, c.Self())
	}
	return c.Context.Respond(msg)
}

func (c *entityContext) Persist(event any, handler func(any)) error {
	return c.r.persist(c.Context, []any{event}, handler, true)
}

func (c *entityContext) PersistAll(events []any, handler func(any)) error {
	return c.r.persist(c.Context, events, handler, true)
}

func (c *entityContext) PersistAsync(event any, handler func(any)) error {
	return c.r.persist(c.Context, []any{event}, handler, false)
}

func (c *entityContext) Defer(handler func()) { c.r.deferCall(c.Context, handler) }

func (c *entityContext) LastSequenceNr() uint64 { return c.r.lastSeq }

func (c *entityContext) SaveSnapshot(snapshot any) {
	r, self := c.r, c.Self()
	meta := SnapshotMetadata{PersistenceID: r.pid, SequenceNr: r.lastSeq, Timestamp: time.Now()}
	if r.settings.Snapshots == nil {
		_ = self.Tell(SaveSnapshotFailure{Metadata: meta, Err: fmt.Errorf("%w: no snapshot store", ErrNotConfigured)})
		return
	}
	manifest, data, err := r.settings.Registry.Marshal(snapshot)
	if err != nil {
		_ = self.Tell(SaveSnapshotFailure{Metadata: meta, Err: fmt.Errorf("%w: %w", ErrRejected, err)})
		return
	}
	store := r.settings.Snapshots
	go func() {
		err := store.SaveSnapshot(context.Background(), Snapshot{Metadata: meta, Manifest: manifest, Payload: data})
		if err != nil {
			_ = self.Tell(SaveSnapshotFailure{Metadata: meta, Err: err})
			return
		}
		_ = self.Tell(SaveSnapshotSuccess{Metadata: meta})
	}()
}

func (c *entityContext) DeleteMessages(toSeq uint64) {
	journal, pid, self := c.r.settings.Journal, c.r.pid, c.Self()
	go func() {
		if err := journal.DeleteMessagesTo(context.Background(), pid, toSeq); err != nil {
			_ = self.Tell(DeleteMessagesFailure{ToSequenceNr: toSeq, Err: err})
			return
		}
		_ = self.Tell(DeleteMessagesSuccess{ToSequenceNr: toSeq})
	}()
}

func (c *entityContext) DeleteSnapshots(crit SnapshotCriteria) {
	store, pid, self := c.r.settings.Snapshots, c.r.pid, c.Self()
	if store == nil {
		_ = self.Tell(DeleteSnapshotsFailure{Criteria: crit, Err: fmt.Errorf("%w: no snapshot store", ErrNotConfigured)})
		return
	}
	go func() {
		if err := store.DeleteSnapshots(context.Background(), pid, crit); err != nil {
			_ = self.Tell(DeleteSnapshotsFailure{Criteria: crit, Err: err})
			return
		}
		_ = self.Tell(DeleteSnapshotsSuccess{Criteria: crit})
	}()
}

// handlerContext delivers a runtime-made message (a replayed event, a SnapshotOffer,
// RecoveryCompleted, PersistRejected, UnconfirmedWarning) to the entity.
type handlerContext struct {
	*entityContext
	msg any
}

func (h *handlerContext) Message() any { return h.msg }

func asCorrupt(err error, target **CorruptRecordError) bool { return errors.As(err, target) }
