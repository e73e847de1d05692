package routing

import (
	"time"

	"github.com/troupe-go/troupe/actor"
)

// DefaultWithin bounds a scatter-gather or tail-chopping request whose Within is zero.
const DefaultWithin = 5 * time.Second

// ScatterGatherConfig configures ScatterGatherFirstCompleted.
type ScatterGatherConfig struct {
	// Within bounds the wait for the first reply; zero means DefaultWithin. When it
	// passes, the sender gets an actor.Failure wrapping ErrNoReply.
	Within time.Duration
}

// ScatterGatherFirstCompleted returns the logic for requests that any routee can
// answer: each message goes to every routee, the first reply goes to the sender, and
// the others are discarded. The router does this with a short-lived collector actor,
// its child, per request (see the package doc), so messages of this logic always go
// through the router actor.
func ScatterGatherFirstCompleted(cfg ScatterGatherConfig) Logic {
	if cfg.Within <= 0 {
		cfg.Within = DefaultWithin
	}
	return scatterGather{within: cfg.Within}
}

type scatterGather struct{ within time.Duration }

func (l scatterGather) Prepare(routees []actor.Ref) Selector { return allSelector(routees) }

func (l scatterGather) plan() (within, interval time.Duration) { return l.within, 0 }

// TailChoppingConfig configures TailChopping.
type TailChoppingConfig struct {
	// Within bounds the whole request; zero means DefaultWithin. When it passes
	// without a reply, the sender gets an actor.Failure wrapping ErrNoReply.
	Within time.Duration
	// Interval is how long to wait for a reply before asking the next routee as well;
	// zero means Within divided by the number of routees.
	Interval time.Duration
}

// TailChopping returns the logic that cuts the tail of slow replies: it sends the
// message to one routee (the next in turn) and, if no reply has come after Interval,
// to the next one too, and so on; the first reply from any of them goes to the sender.
// Like ScatterGatherFirstCompleted, it goes through the router actor and a collector
// per request.
func TailChopping(cfg TailChoppingConfig) Logic {
	if cfg.Within <= 0 {
		cfg.Within = DefaultWithin
	}
	return &tailChopping{cfg: cfg}
}

type tailChopping struct {
	cfg  TailChoppingConfig
	next paddedCounter
}

// Prepare returns a selector whose Select gives every routee, starting with the next in
// turn: the order in which they are asked.
func (l *tailChopping) Prepare(routees []actor.Ref) Selector {
	return &rotatingSelector{next: &l.next, routees: routees}
}

func (l *tailChopping) plan() (within, interval time.Duration) { return l.cfg.Within, l.cfg.Interval }

type rotatingSelector struct {
	next    *paddedCounter
	routees []actor.Ref
}

func (s *rotatingSelector) Select(any) ([]actor.Ref, error) {
	n := len(s.routees)
	if n == 0 {
		return nil, ErrNoRoutees
	}
	i := int((s.next.Add(1) - 1) % uint64(n))
	out := make([]actor.Ref, 0, n)
	out = append(out, s.routees[i:]...)
	return append(out, s.routees[:i]...), nil
}

// collecting is implemented by the logics whose requests a collector handles: they
// are asked as one request, and the first reply wins.
type collecting interface {
	plan() (within, interval time.Duration)
}
