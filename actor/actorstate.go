package actor

import (
	"context"

	"github.com/troupe-go/troupe/internal/actorstate"
)

func init() {
	actorstate.AskDeferred = func(ctx context.Context, ref any, msg any, watch bool) (any, func()) {
		r, ok := ref.(Ref)
		if !ok {
			return failedFuture(ErrNoRecipient), nil
		}
		return r.askDeferred(ctx, msg, watch)
	}
	actorstate.DeadLetter = func(sys any, recipient, msg, sender any, reason error) {
		r, _ := recipient.(Ref)
		from, _ := sender.(Ref)
		sys.(*System).deadLetter(r, msg, from, reason)
	}
	actorstate.AwaitAsk = func(ctx context.Context, future any, target any, msg any) (any, error) {
		t, _ := target.(Ref)
		return future.(*Future).await(ctx, t, msg)
	}
}
