package actor

import (
	"context"

	"github.com/troupe-go/troupe/internal/actorstate"
)

func init() {
	actorstate.Idle = func(ref any) bool {
		r, ok := ref.(Ref)
		if !ok {
			return false
		}
		c, ok := r.p.(*cell)
		// An owner gives the cell up (idle) only after a drain found the queue empty,
		// and a sender that pushes while it runs makes it drain again (acquire,
		// release): so idle means every message pushed before this load was handled.
		return ok && c.sched.Load() == schedIdle
	}
	actorstate.AskDeferred = func(ctx context.Context, ref any, msg any, watch bool) (any, func()) {
		r, ok := ref.(Ref)
		if !ok {
			return failedFuture(ErrNoRecipient), nil
		}
		return r.askDeferred(ctx, msg, watch)
	}
	actorstate.AwaitAsk = func(ctx context.Context, future any, target any, msg any) (any, error) {
		t, _ := target.(Ref)
		return future.(*Future).await(ctx, t, msg)
	}
}
