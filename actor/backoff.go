package actor

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/troupe-go/troupe/supervision"
)

// BackoffMode chooses what makes a backoff supervisor restart its child.
type BackoffMode int

const (
	// BackoffOnFailure restarts the child, after a growing delay, when it fails. A child
	// that stops by itself stops the supervisor too.
	BackoffOnFailure BackoffMode = iota
	// BackoffOnStop restarts the child, after a growing delay, whenever it stops (its
	// failures are handled by ordinary restarts). Use it for children that stop on
	// failure by design, such as persistent actors.
	BackoffOnStop
)

// BackoffOptions configures BackoffSupervisorProps.
type BackoffOptions struct {
	// Child creates the supervised actor. Required.
	Child *Props
	// ChildName is the child's name; required.
	ChildName string
	// Mode chooses restart on failure (default) or on stop.
	Mode BackoffMode
	// Backoff sets the delays, jitter, reset and retry limit.
	Backoff supervision.Backoff
	// FinalStopMessage, if set, recognises a message that ends supervision: it is
	// forwarded to the child, and when the child then stops the supervisor stops too
	// instead of restarting it.
	FinalStopMessage func(msg any) bool
}

// GetCurrentChild asks a backoff supervisor for its child; it answers CurrentChild.
type GetCurrentChild struct{}

// CurrentChild answers GetCurrentChild. Ref is the zero Ref while the child is waiting
// to be restarted.
type CurrentChild struct{ Ref Ref }

// GetRestartCount asks a backoff supervisor how many restarts it has made since the
// last reset; it answers RestartCount.
type GetRestartCount struct{}

// RestartCount answers GetRestartCount.
type RestartCount struct{ Count int }

type backoffRestart struct{}
type backoffReset struct{ child Ref }

// BackoffSupervisorProps returns Props for a supervisor that runs one child and restarts
// it after exponentially growing delays (Backoff.Delay), instead of at once. Messages
// sent to the supervisor are forwarded to the child, keeping the sender; while the child
// is waiting to restart they go to dead letters.
func BackoffSupervisorProps(o BackoffOptions) (*Props, error) {
	if o.Child == nil {
		return nil, fmt.Errorf("%w: backoff supervisor needs a Child", ErrInvalidProps)
	}
	if err := o.Child.Validate(); err != nil {
		return nil, err
	}
	if err := validateName(o.ChildName); err != nil {
		return nil, err
	}
	if err := o.Backoff.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidProps, err)
	}
	if o.Mode != BackoffOnFailure && o.Mode != BackoffOnStop {
		return nil, fmt.Errorf("%w: unknown BackoffMode %d", ErrInvalidProps, o.Mode)
	}
	return &Props{Producer: func() Actor { return &backoffSupervisor{opts: o} }}, nil
}

type backoffSupervisor struct {
	opts      BackoffOptions
	child     Ref
	restarts  int
	failed    bool // the current child's termination was a supervision stop
	finishing bool // the final stop message was seen
}

var errBackoffGaveUp = errors.New("backoff supervisor: retries exhausted")

func (b *backoffSupervisor) Receive(ctx Context) {
	switch m := ctx.Message().(type) {
	case Started:
		b.startChild(ctx)
	case Terminated:
		if m.Ref != b.child {
			return
		}
		b.child = Ref{}
		ctx.CancelTimer(backoffReset{})
		failed := b.failed
		b.failed = false
		switch {
		case b.finishing:
			ctx.Stop(ctx.Self())
		case b.opts.Mode == BackoffOnFailure && !failed:
			ctx.Stop(ctx.Self())
		case b.opts.Backoff.MaxRetries > 0 && b.restarts >= b.opts.Backoff.MaxRetries:
			ctx.Logger().Warn(errBackoffGaveUp.Error())
			ctx.Stop(ctx.Self())
		default:
			ctx.StartSingleTimer(backoffRestart{}, backoffRestart{}, b.opts.Backoff.Delay(b.restarts, rand.Float64()))
			b.restarts++
		}
	case backoffRestart:
		b.startChild(ctx)
	case backoffReset:
		if m.child == b.child && !b.child.IsZero() {
			b.restarts = 0
		}
	case GetCurrentChild:
		ctx.Respond(CurrentChild{Ref: b.child})
	case GetRestartCount:
		ctx.Respond(RestartCount{Count: b.restarts})
	case Stopping, Stopped, Restarting:
	default:
		if b.opts.FinalStopMessage != nil && b.opts.FinalStopMessage(m) {
			b.finishing = true
		}
		if b.child.IsZero() {
			ctx.System().deadLetter(ctx.Self(), m, ctx.Sender(), ErrRecipientStopped)
			if b.finishing {
				ctx.Stop(ctx.Self())
			}
			return
		}
		_ = ctx.Forward(b.child)
	}
}

func (b *backoffSupervisor) startChild(ctx Context) {
	child, err := ctx.Spawn(b.opts.Child, b.opts.ChildName)
	if err != nil {
		ctx.Logger().Error("backoff supervisor could not start its child")
		ctx.Stop(ctx.Self())
		return
	}
	b.child = child
	ctx.Watch(child)
	reset := b.opts.Backoff.ResetAfter
	if reset <= 0 {
		reset = b.opts.Backoff.Min
	}
	ctx.StartSingleTimer(backoffReset{}, backoffReset{child: child}, reset)
}

// supervisorStrategy: on failure the child is stopped and restarted after the backoff
// (BackoffOnFailure), or restarted at once as usual (BackoffOnStop).
func (b *backoffSupervisor) supervisorStrategy() supervision.Strategy {
	if b.opts.Mode == BackoffOnStop {
		return supervision.DefaultStrategy()
	}
	return supervision.OneForOne{Decider: func(error) supervision.Directive { return supervision.Stop }}
}

func (b *backoffSupervisor) childFailed(child Ref, _ error, d supervision.Directive) {
	if child == b.child && d == supervision.Stop {
		b.failed = true
	}
}
