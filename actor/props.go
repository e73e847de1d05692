package actor

import (
	"fmt"

	"github.com/troupe-go/troupe/mailbox"
	"github.com/troupe-go/troupe/supervision"
)

// Props describes how to create an actor. Create one per kind of actor and reuse it for
// every spawn: the runtime keeps a pointer, not a copy, so do not modify Props that are
// in use. Zero values mean the defaults.
type Props struct {
	// Producer returns a fresh instance. It is called on the actor's own goroutine at
	// start and on every restart. Required.
	Producer func() Actor

	// Strategy supervises this actor's children; nil means supervision.DefaultStrategy
	// (restart, without limit).
	Strategy supervision.Strategy

	// MailboxCapacity bounds the mailbox; 0 means unbounded (the lock-free default).
	MailboxCapacity int
	// Overflow is what a bounded mailbox does when full: drop the new message to dead
	// letters (the default), drop the oldest, or make Tell return ErrMailboxFull.
	Overflow mailbox.Overflow
	// Priority, when set, makes the mailbox a priority mailbox: higher values are
	// handled first, in arrival order among equals. It cannot be bounded.
	Priority func(msg any) int

	// Throughput is how many messages the actor handles before yielding its goroutine;
	// 0 means the system's Config.Throughput.
	Throughput int
	// StashCapacity bounds the stash; 0 means the system's Config.StashCapacity.
	StashCapacity int

	// MetricsKind, when set and the system has a MeterProvider, names this kind of
	// actor in the metrics: its actors record the time each message waited in the
	// mailbox (troupe.actor.mailbox.time), the time Receive took
	// (troupe.actor.processing.time) and the messages waiting
	// (troupe.actor.mailbox.queued), with the attribute kind=MetricsKind. Use a few
	// names per application (one per important kind of actor), never one per actor:
	// each name is a series. Costs a clock reading per message, and only for these
	// actors.
	MetricsKind string

	// Trace, when the system has a TracerProvider, makes each message this kind of
	// actor handles a span, troupe.receive followed by the message's type, with the
	// actor's path, the message type and the sender as attributes: the child of the
	// span that sent the message, or a new trace (which the provider's sampler may
	// drop) for a message sent outside any. Actors without it make no spans; the
	// messages they send while handling a traced message carry its context on, so
	// that a trace stays whole through them.
	Trace bool
}

// PropsOf returns Props that create actors with producer.
func PropsOf(producer func() Actor) *Props {
	return &Props{Producer: producer}
}

// PropsFunc returns Props for a stateless actor that handles every message with f.
func PropsFunc(f ReceiveFunc) *Props {
	return &Props{Producer: func() Actor { return f }}
}

// Validate reports a missing producer or an impossible mailbox configuration.
func (p *Props) Validate() error {
	switch {
	case p.Producer == nil:
		return fmt.Errorf("%w: Producer is nil", ErrInvalidProps)
	case p.MailboxCapacity < 0:
		return fmt.Errorf("%w: negative MailboxCapacity %d", ErrInvalidProps, p.MailboxCapacity)
	case p.Priority != nil && p.MailboxCapacity > 0:
		return fmt.Errorf("%w: a priority mailbox cannot be bounded", ErrInvalidProps)
	case p.Throughput < 0:
		return fmt.Errorf("%w: negative Throughput %d", ErrInvalidProps, p.Throughput)
	case p.StashCapacity < 0:
		return fmt.Errorf("%w: negative StashCapacity %d", ErrInvalidProps, p.StashCapacity)
	case p.Overflow < mailbox.DropNewest || p.Overflow > mailbox.Reject:
		return fmt.Errorf("%w: unknown Overflow %d", ErrInvalidProps, p.Overflow)
	}
	return nil
}

func (p *Props) hasCustomMailbox() bool {
	return p.MailboxCapacity > 0 || p.Priority != nil
}

func (p *Props) newMailbox() (mailbox.Mailbox[envelope], error) {
	if p.Priority != nil {
		prio := p.Priority
		return mailbox.NewPriority(func(e envelope) int { return prio(untraced(e.msg)) })
	}
	return mailbox.NewBounded[envelope](p.MailboxCapacity, p.Overflow)
}
