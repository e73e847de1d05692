package persistence

import (
	"context"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
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
		c.r.answered = true
		to := c.r.handlerSender
		if to.IsZero() {
			// As actor.Context.Respond does without a sender: a dead letter and an error.
			_ = c.System().DeadLetters().Send(msg, c.Self())
			return fmt.Errorf("%w: the persisted command had no sender to respond to", actor.ErrNoRecipient)
		}
		return to.SendContext(tracewire.Context(c.r.handlerTrace), msg, c.Self())
	}
	return c.Context.Respond(msg)
}

// Send, inside a persist handler, sends in the trace of the handler's command; a
// message to the command's sender answers it (see runner.answerRejected).
func (c *entityContext) Send(to actor.Ref, msg any) error {
	if c.r.inHandler && to == c.r.handlerSender {
		c.r.answered = true
	}
	if c.r.inHandler && c.r.handlerTrace != nil {
		return to.SendContext(tracewire.Context(c.r.handlerTrace), msg, c.Self())
	}
	return c.Context.Send(to, msg)
}

// TraceContext, inside a persist handler, is the trace of the handler's command.
func (c *entityContext) TraceContext() context.Context {
	if c.r.inHandler {
		return tracewire.Context(c.r.handlerTrace)
	}
	return c.Context.TraceContext()
}

func (c *entityContext) persist(events []any, single any, h handler, stashing bool, tags []string) error {
	return c.r.persist(c.Context, events, single, h, stashing, tags)
}

func (c *entityContext) Defer(handler func()) { c.r.deferCall(c.Context, handler) }

func (c *entityContext) LastSequenceNr() uint64 {
	if c.r.core == nil {
		return 0
	}
	return c.r.core.LastSequenceNr()
}

func (c *entityContext) SaveSnapshot(snapshot any) { c.r.saveSnapshot(snapshot) }

func (c *entityContext) DeleteMessages(toSeq uint64) { c.r.deleteMessages(toSeq) }

func (c *entityContext) DeleteSnapshots(crit SnapshotCriteria) { c.r.deleteSnapshots(crit) }

// handlerContext delivers a runtime-made message (a replayed event, a SnapshotOffer,
// RecoveryCompleted, PersistRejected, UnconfirmedWarning, a reply to a snapshot or
// delete) to the entity.
type handlerContext struct {
	*entityContext
	msg any
}

func (h *handlerContext) Message() any { return h.msg }
