package membership

import (
	"github.com/troupe-go/troupe/member"
	"slices"
	"time"
)

// Margins holds back the news that a removed member's work may be taken over
// (RemovalMarginPassed) until that is safe. A member that left gracefully handed its
// work over before it was removed, so its event follows at once. A member that was
// downed may still be running on the other side of a partition until its own side
// decides to stop: its event follows only after the down-removal margin, which must be
// longer than the time the downed side needs to notice and stop its services.
//
// Margins is pure: the caller passes the time of each removal and asks for the events
// that are due at a later time; it sets a timer for Next. It is not safe for concurrent
// use.
type Margins struct {
	margin  time.Duration
	pending []pendingMargin // ordered by due time, which is removal order
}

type pendingMargin struct {
	due time.Time
	ev  member.RemovalMarginPassed
}

// NewMargins returns an empty tracker with the down-removal margin margin (0 or less
// makes downed members pass at once).
func NewMargins(margin time.Duration) *Margins {
	return &Margins{margin: margin}
}

// Removed records a removal that happened at now and returns the events due at once:
// RemovalMarginPassed for a member removed from Exiting (a graceful leave), or for a
// downed member when the margin is 0. A downed member otherwise waits until now plus
// the margin.
func (m *Margins) Removed(ev member.MemberRemoved, now time.Time) []member.Event {
	passed := member.RemovalMarginPassed{Member: ev.Member.Clone(), PreviousStatus: ev.PreviousStatus}
	if ev.PreviousStatus != member.Down || m.margin <= 0 {
		return []member.Event{passed}
	}
	m.pending = append(m.pending, pendingMargin{due: now.Add(m.margin), ev: passed})
	return nil
}

// Due returns, in removal order, the RemovalMarginPassed events whose margin has
// passed at now, and forgets them.
func (m *Margins) Due(now time.Time) []member.Event {
	n := 0
	for n < len(m.pending) && !now.Before(m.pending[n].due) {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]member.Event, 0, n)
	for _, p := range m.pending[:n] {
		out = append(out, p.ev)
	}
	m.pending = slices.Delete(m.pending, 0, n)
	return out
}

// Next returns when the next margin passes; ok is false when none is pending.
func (m *Margins) Next() (at time.Time, ok bool) {
	if len(m.pending) == 0 {
		return time.Time{}, false
	}
	return m.pending[0].due, true
}

// Pending returns the downed members still waiting for their margin, in removal order.
func (m *Margins) Pending() []member.Member {
	if len(m.pending) == 0 {
		return nil
	}
	out := make([]member.Member, 0, len(m.pending))
	for _, p := range m.pending {
		out = append(out, p.ev.Member.Clone())
	}
	return out
}

// IsPending reports whether u was removed after being downed and its margin has not
// passed yet.
func (m *Margins) IsPending(u member.UniqueAddress) bool {
	for _, p := range m.pending {
		if p.ev.Member.Unique == u {
			return true
		}
	}
	return false
}
