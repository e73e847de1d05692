package routing

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// ErrNoReply is the error of the actor.Failure a scatter-gather or tail-chopping
// router sends to the asker when no routee replied within the time allowed.
var ErrNoReply = errors.New("routing: no routee replied in time")

// collect handles one scatter-gather or tail-chopping request: without a sender there
// is no reply to wait for, so the message goes to every routee (scatter-gather) or to
// the first (tail-chopping); with one, a collector, a child of the router, asks the
// routees and passes the first reply on.
func (a *routerActor) collect(ctx actor.Context, c collecting, to []actor.Ref, msg any) {
	within, interval := c.plan()
	sender := ctx.Sender()
	if sender.IsZero() {
		if _, tail := c.(*tailChopping); tail {
			to = to[:1]
		}
		for _, r := range to {
			_ = r.SendContext(ctx.TraceContext(), msg, actor.Ref{})
		}
		return
	}
	if _, tail := c.(*tailChopping); tail && interval <= 0 {
		interval = within / time.Duration(len(to))
	}
	col := &collector{routees: to, msg: msg, asker: sender, within: within, interval: interval, router: ctx.Self()}
	if _, err := ctx.Spawn(actor.PropsOf(func() actor.Actor { return col }), ""); err != nil {
		ctx.System().PublishDeadLetter(ctx.Self(), msg, sender, err)
	}
}

// collector asks routees for one request and sends the first reply to the asker. It
// asks them all at once (interval 0) or one more every interval, stops at the first
// reply once every routee asked has answered, or at within: replies after it stopped
// are dead letters.
type collector struct {
	routees  []actor.Ref
	msg      any
	asker    actor.Ref
	router   actor.Ref
	within   time.Duration
	interval time.Duration

	asked   int
	replies int
	done    bool
}

// The collector's timers.
type (
	collectorTimeout struct{}
	collectorNext    struct{}
)

func (c *collector) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case actor.Started:
		ctx.StartSingleTimer(collectorTimeout{}, collectorTimeout{}, c.within)
		if c.interval <= 0 {
			for range c.routees {
				c.askNext(ctx)
			}
			return
		}
		c.askNext(ctx)
		if c.asked < len(c.routees) {
			ctx.StartSingleTimer(collectorNext{}, collectorNext{}, c.interval)
		}
	case actor.Stopping, actor.Stopped:
	case collectorNext:
		if c.done {
			return
		}
		c.askNext(ctx)
		if c.asked < len(c.routees) {
			ctx.StartSingleTimer(collectorNext{}, collectorNext{}, c.interval)
		}
	case collectorTimeout:
		if !c.done {
			c.done = true
			_ = c.asker.Tell(actor.Failure{Err: fmt.Errorf("%w: %v asked %d of %d routees for %T within %v",
				ErrNoReply, c.router, c.asked, len(c.routees), c.msg, c.within)})
		}
		_ = ctx.Stop(ctx.Self())
	default:
		c.replies++
		if !c.done {
			c.done = true
			ctx.CancelTimer(collectorNext{})
			_ = c.asker.Send(ctx.Message(), ctx.Sender())
		}
		if c.replies >= c.asked {
			_ = ctx.Stop(ctx.Self())
		}
	}
}

func (c *collector) askNext(ctx actor.Context) {
	r := c.routees[c.asked]
	c.asked++
	_ = ctx.Send(r, c.msg)
}
