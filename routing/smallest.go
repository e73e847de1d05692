package routing

import (
	"github.com/troupe-go/troupe/actor"
)

// SmallestMailbox returns the logic that sends each message to the least busy routee,
// as actor.Ref.Activity shows it: an idle routee first (the scan stops at the first
// one), else one that is running without a backlog, else a backlogged one; routees
// in other systems, whose load cannot be seen, come last. Among equally busy routees
// the scan starts at a rotating position, so that they share the work.
//
// Troupe's default mailbox does not count its messages (a count would cost every
// Tell), so this logic ranks routees by activity rather than by an exact queue length.
// It suits work whose messages take long compared with routing them; for short
// messages, round-robin spreads them as well at less cost.
func SmallestMailbox() Logic { return &smallest{} }

type smallest struct{ next paddedCounter }

func (l *smallest) Prepare(routees []actor.Ref) Selector {
	return &smallestSelector{next: &l.next, routees: routees}
}

type smallestSelector struct {
	next    *paddedCounter
	routees []actor.Ref
}

func (s *smallestSelector) Select(any) ([]actor.Ref, error) {
	n := len(s.routees)
	if n == 0 {
		return nil, ErrNoRoutees
	}
	start := int((s.next.Add(1) - 1) % uint64(n))
	best, bestLoad := start, actor.ActivityUnknown+1
	for k := range n {
		i := start + k
		if i >= n {
			i -= n
		}
		a := s.routees[i].Activity()
		if a < bestLoad {
			best, bestLoad = i, a
			if a == actor.ActivityIdle {
				break
			}
		}
	}
	return s.routees[best : best+1], nil
}
