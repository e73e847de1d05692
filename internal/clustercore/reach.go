package clustercore

import (
	"slices"
	"strings"
	"time"

	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
)

// Observations says: the reachability detail is Records now (who cannot reach whom);
// when that differs from what was published, publish it (ReachabilityChanged) before
// the events that follow.
type Observations struct{ Records []member.Observation }

// PushOwnRow says: this node's own reachability row changed; send it to every live
// member at once.
type PushOwnRow struct{}

// AcquireLease says: start acquiring the lease-majority lease; the outcome comes back
// through LeaseResult.
type AcquireLease struct{}

// Decided says this node's resolver decided: publish the decision to this node's
// subscribers and log it, with Records, the observations it was decided on. The
// Spread and the downs follow.
type Decided struct {
	Decision sbr.Decision
	Unstable bool
	Records  []member.Observation
}

// Spread says: tell the members To (the live members other than this one, before the
// decision) that Down are downed, then apply it (the effects that follow do).
type Spread struct {
	Down []member.UniqueAddress
	To   []member.UniqueAddress
}

func (Observations) effect() {}
func (PushOwnRow) effect()   {}
func (AcquireLease) effect() {}
func (Decided) effect()      {}
func (Spread) effect()       {}

// Live reports whether u is a member that is neither Down nor Removed.
func (c *Core) Live(u member.UniqueAddress) bool {
	m, ok := c.ms.Member(u)
	return ok && m.Status != member.Down
}

// Input returns the resolver's input: the members and every observation between them.
func (c *Core) Input() sbr.Input {
	in := sbr.Input{Self: c.self, Members: c.ms.Members()}
	for _, r := range c.table.Records(c.Live) {
		in.Unreachable = append(in.Unreachable, sbr.Record{Observer: r.Observer, Subject: r.Subject})
	}
	return in
}

// RefreshReachability brings the reachability state up to date at now: the monitored
// members, this node's own observations (its heartbeats and serf), the table, the
// unreachable flags of the membership, and the resolver's notion of change.
func (c *Core) RefreshReachability(now time.Time) []Effect {
	c.now = now
	// This node's observations first (Check has run on the members monitored so far).
	var own []member.UniqueAddress
	for _, u := range c.mon.Unreachable() {
		if c.Live(u) {
			own = append(own, u)
		}
	}
	// serf's report counts for the members this node does not heartbeat itself: for
	// those it does, the heartbeats decide. serf probes members one at a time, round
	// robin, so its detections of the members of a partition spread over several probe
	// intervals, and its UDP probes with short timeouts are easily missed on a loaded
	// host; the heartbeats go to every monitored member at once.
	for u := range c.serfFailed {
		if c.Live(u) && !c.mon.Monitors(u) {
			own = append(own, u)
		}
	}
	if c.table.SetOwn(own) {
		c.out = append(c.out, PushOwnRow{})
		heartbeats := make([]string, 0, len(c.mon.Unreachable()))
		for _, u := range c.mon.Unreachable() {
			heartbeats = append(heartbeats, u.String())
		}
		serfSays := make([]string, 0, len(c.serfFailed))
		for u := range c.serfFailed {
			serfSays = append(serfSays, u.String())
		}
		c.out = append(c.out, Log{Level: Info, Msg: "this node's reachability observations changed",
			Fields: []Field{{"heartbeats", "[" + strings.Join(heartbeats, " ") + "]"}, {"serf", "[" + strings.Join(serfSays, " ") + "]"}}})
	}
	ownSet := make(map[member.UniqueAddress]bool, len(own))
	for _, u := range own {
		ownSet[u] = true
	}

	// Then whom to monitor: the ring over the live members.
	var ring []member.UniqueAddress
	for _, m := range c.ms.Members() {
		if m.Status != member.Down && m.Unique != c.self {
			ring = append(ring, m.Unique)
		}
	}
	c.mon.SetTargets(reachability.Ring(c.self, ring, func(u member.UniqueAddress) bool { return ownSet[u] }, c.monitors), now)

	// The aggregated view: unreachable for any observer. Its detail is published before
	// the events it causes, so that a subscriber reading it sees it.
	unreachable := c.table.Unreachable(c.Live)
	var obs []member.Observation
	for _, r := range c.table.Records(c.Live) {
		obs = append(obs, member.Observation{Observer: r.Observer, Subject: r.Subject})
	}
	c.out = append(c.out, Observations{Records: obs})
	set := make(map[member.UniqueAddress]bool, len(unreachable))
	for _, u := range unreachable {
		set[u] = true
	}
	for _, m := range c.ms.Members() {
		u := m.Unique
		switch {
		case u == c.self || m.Status == member.Down:
		case set[u] && !c.ms.IsUnreachable(u):
			c.apply(c.ms.Unreachable(u))
		case !set[u] && c.ms.IsUnreachable(u):
			c.apply(c.ms.Reachable(u))
		}
	}
	if key := c.reachabilityKey(); key != c.reachKey {
		c.reachKey = key
		c.res.ReachabilityChanged(now)
		c.out = append(c.out, Log{Level: Debug, Msg: "reachability changed", Fields: []Field{{"observations", key}}})
	}
	return c.take()
}

// reachabilityKey describes the members the resolver considers unreachable and, among
// them, the indirectly connected ones; the resolver is told of a change whenever it
// changes. Another observer confirming what is already known is no change, so that
// the observers' detection times do not drag the wait out.
func (c *Core) reachabilityKey() string {
	unreachable, indirect := sbr.Summary(c.Input())
	var b strings.Builder
	for _, u := range unreachable {
		b.WriteString(u.String())
		b.WriteByte(' ')
	}
	b.WriteString("| indirectly connected:")
	for _, u := range indirect {
		b.WriteByte(' ')
		b.WriteString(u.String())
	}
	return b.String()
}

// Decide asks the resolver at now and returns what follows, and when to ask again
// (zero for no timer). It does nothing while this node leaves or after it was downed.
func (c *Core) Decide(now time.Time) (effects []Effect, next time.Time) {
	c.now = now
	if c.downed || c.leaving {
		return nil, time.Time{}
	}
	step := c.res.Step(now, c.Input())
	if step.AcquireLease {
		c.out = append(c.out, AcquireLease{})
	}
	if step.Decision.Action != sbr.NoAction {
		c.act(step.Decision, step.Unstable)
	}
	return c.take(), step.Next
}

// LeaseResult takes in the outcome of acquiring the lease at now. It returns the
// decision too, whose Down the shell holds the lease for.
func (c *Core) LeaseResult(now time.Time, acquired bool) ([]Effect, sbr.Decision) {
	c.now = now
	d := c.res.LeaseResult(now, c.Input(), acquired)
	if d.Action != sbr.NoAction {
		c.act(d, false)
	}
	return c.take(), d
}

// act downs the members a decision lists, spreading the decision: the others first,
// then this node if it is listed.
func (c *Core) act(d sbr.Decision, unstable bool) {
	var obs []member.Observation
	for _, r := range c.table.Records(c.Live) {
		obs = append(obs, member.Observation{Observer: r.Observer, Subject: r.Subject})
	}
	d.Down = slices.Clone(d.Down)
	c.out = append(c.out, Decided{Decision: d, Unstable: unstable, Records: obs})
	if c.downed || len(d.Down) == 0 {
		return
	}
	var to []member.UniqueAddress
	for _, m := range c.ms.Members() {
		if m.Unique != c.self && m.Status != member.Down {
			to = append(to, m.Unique)
		}
	}
	c.out = append(c.out, Spread{Down: d.Down, To: to})
	c.down(d.Down)
}

// HeartbeatAnswered records that from answered, at now, the heartbeat this node sent
// at sentAt. It reports whether that changed the view: the answer ended serf's
// observation that the member failed (the heartbeat was sent after serf said so).
func (c *Core) HeartbeatAnswered(from member.UniqueAddress, sentAt, now time.Time) bool {
	if !c.mon.Response(from, sentAt, now) {
		return false
	}
	if failed, ok := c.serfFailed[from]; ok && sentAt.After(failed) {
		delete(c.serfFailed, from)
		return true
	}
	return false
}

// CheckMonitor judges the monitored members at now and reports whether one changed
// reachability.
func (c *Core) CheckMonitor(now time.Time) bool {
	down, up := c.mon.Check(now)
	return len(down)+len(up) > 0
}

// MergeRows merges reachability rows another node gossiped. Observations about members
// this node does not know yet are kept, and count once the member is known; those
// about removed identities are dropped. It reports whether the table changed.
func (c *Core) MergeRows(rows []reachability.Row) bool {
	known := func(u member.UniqueAddress) bool {
		_, ok := c.ms.Member(u)
		return ok
	}
	return c.table.Merge(rows, known, c.ms.WasRemoved)
}
