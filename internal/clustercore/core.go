package clustercore

import (
	"slices"
	"time"

	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
)

// Config is a Core's settings, with every default applied by the caller.
type Config struct {
	// Self is this member as it starts: Joining, with its roles and app version.
	Self member.Member
	// Membership holds min-nr-of-members.
	Membership membership.MembershipConfig
	// Resolver is the split-brain resolver's configuration.
	Resolver sbr.Config
	// Monitor is the heartbeat monitor's configuration.
	Monitor reachability.MonitorConfig
	// DownRemovalMargin is how long after a downed member's removal its work may be
	// taken over.
	DownRemovalMargin time.Duration
}

// Kind is the kind of a serf member event.
type Kind uint8

// The kinds of serf member events.
const (
	// Join: serf saw the member join.
	Join Kind = iota + 1
	// Update: the member's tags changed (or serf knew it already, at a join).
	Update
	// Failed: serf lost contact with the member.
	Failed
	// Leave: the member left serf gracefully.
	Leave
	// Reap: serf forgot the member.
	Reap
)

// Core is one node's cluster state machine. It is not safe for concurrent use.
type Core struct {
	self    member.UniqueAddress
	ms      *membership.Membership
	table   *reachability.Table
	mon     *reachability.Monitor
	res     *sbr.Resolver
	margins *membership.Margins

	// serfFailed holds the members serf declared failed, with when. serf keeps a
	// failed member dead until it reconnects to it, which takes a while after a link
	// heals: an answer to a heartbeat sent after the failure ends the observation
	// sooner.
	serfFailed map[member.UniqueAddress]time.Time

	leaving, downed bool
	// joined is set once this node is in a cluster (at once for a node that forms one
	// alone), founder when it formed it: only the founder moves itself Up before it
	// has seen a member Up.
	joined, founder bool
	// welcomed holds the last answer of each member to this joining member's welcome
	// request (it knows this member); see MaybeUp.
	welcomed map[member.UniqueAddress]Welcome
	// asked holds the members asked for a welcome already: MaybeUp asks a member it
	// waits for at once, once; AskWelcomes asks them all again at every tick.
	asked map[member.UniqueAddress]bool
	// legacy holds the members that do not speak the welcome exchange (Troupe v0.1.0,
	// see Legacy): a joining member does not wait for their answer nor announce itself
	// Up to them.
	legacy map[member.UniqueAddress]bool
	// foreign holds the node names of other clusters' members already logged.
	foreign map[string]bool

	monitors int    // how many members monitor each member (the ring's width)
	reachKey string // the unreachable and indirectly connected members last seen

	out []Effect  // the effects of the input being handled
	now time.Time // the time of the input being handled
}

// New returns the core of a node that starts as cfg.Self, at now.
func New(cfg Config, now time.Time) (*Core, error) {
	ms, err := membership.NewMembership(cfg.Membership, cfg.Self)
	if err != nil {
		return nil, err
	}
	res, err := sbr.NewResolver(cfg.Resolver, now)
	if err != nil {
		return nil, err
	}
	mon, err := reachability.NewMonitor(cfg.Monitor, cfg.Self.Unique)
	if err != nil {
		return nil, err
	}
	return &Core{
		self:       cfg.Self.Unique,
		ms:         ms,
		table:      reachability.NewTable(cfg.Self.Unique),
		mon:        mon,
		res:        res,
		margins:    membership.NewMargins(cfg.DownRemovalMargin),
		serfFailed: make(map[member.UniqueAddress]time.Time),
		monitors:   cfg.Monitor.Monitors,
	}, nil
}

// The parts the shell reads: the members, the table's rows to gossip, the monitor's
// targets, and the next moments of the monitor and the margins.

// Membership returns the member view.
func (c *Core) Membership() *membership.Membership { return c.ms }

// Table returns the reachability table.
func (c *Core) Table() *reachability.Table { return c.table }

// Monitor returns the heartbeat monitor.
func (c *Core) Monitor() *reachability.Monitor { return c.mon }

// Margins returns the removal margins.
func (c *Core) Margins() *membership.Margins { return c.margins }

// Leaving reports whether this node is leaving.
func (c *Core) Leaving() bool { return c.leaving }

// Downed reports whether this node was downed.
func (c *Core) Downed() bool { return c.downed }

// Joined reports whether this node is in a cluster.
func (c *Core) Joined() bool { return c.joined }

// Snapshot returns the current state, with the members awaiting their margin.
func (c *Core) Snapshot() member.CurrentClusterState {
	st := c.ms.State()
	st.AwaitingRemovalMargin = c.margins.Pending()
	return st
}

// take returns the effects gathered and starts a new list.
func (c *Core) take() []Effect {
	out := c.out
	c.out = nil
	return out
}

// SetJoined says this node is in a cluster now: it formed it (founder) or joined it.
// It does not publish the tags (see JoinedCluster).
func (c *Core) SetJoined(founder bool) { c.joined, c.founder = true, founder }

// JoinedCluster says this node is in a cluster now, formed by it (founder) or joined.
// The shell then reports the members serf knows with MemberEvent.
func (c *Core) JoinedCluster(founder bool) []Effect {
	c.SetJoined(founder)
	c.publishSelf()
	return c.take()
}

// MemberEvent takes in a serf member event about m, whose tags name the cluster
// clusterID ("" for none), in the cluster named ours, at now.
func (c *Core) MemberEvent(kind Kind, name string, m member.Member, clusterID, ours string, now time.Time) []Effect {
	c.now = now
	u := m.Unique
	if u == c.self && kind != Update && kind != Join {
		return nil
	}
	if clusterID != "" && clusterID != ours {
		c.foreignMember(u, name, clusterID, ours)
		return c.take()
	}
	switch kind {
	case Join, Update:
		if c.ms.WasRemoved(u) {
			return nil
		}
		delete(c.serfFailed, u) // alive again, if it was failed
		c.apply(c.ms.Observe(m))
	case Failed:
		if c.ms.WasRemoved(u) {
			return nil // downed while it was reachable; now it is gone
		}
		cur, known := c.ms.Member(u)
		if known && (cur.Status == member.Leaving || cur.Status == member.Exiting) {
			// A member that was leaving and that serf now reports failed has left:
			// serf says "failed" rather than "left" when its leave intent was lost or
			// came after memberlist's notice. A member becomes Leaving only in its
			// cluster-leave phase, after the layers above handed its work over, so
			// nothing is lost by removing it now; waiting for the resolver to down it
			// held the others' majority (and their coordinators' writes) for
			// stable-after.
			c.left(u, cur)
			return c.take()
		}
		if !known {
			c.apply(c.ms.Observe(m))
		}
		c.serfFailed[u] = now
	case Leave:
		if cur, known := c.ms.Member(u); known {
			c.left(u, cur)
		}
	case Reap:
		if cur, known := c.ms.Member(u); known && (cur.Status == member.Down || cur.Status == member.Exiting) {
			c.apply(c.ms.Remove(u))
		}
	}
	return c.take()
}

// left removes member u, which has left the cluster, through Exiting unless it is Down.
func (c *Core) left(u member.UniqueAddress, cur member.Member) {
	if cur.Status != member.Down {
		if cur.Status < member.Leaving {
			c.apply(c.ms.SetStatus(u, member.Leaving))
		}
		if cur.Status < member.Exiting {
			c.apply(c.ms.SetStatus(u, member.Exiting))
		}
	}
	c.apply(c.ms.Remove(u))
}

// foreignMember handles a member of another cluster (or, before this node has joined
// one, of any cluster): it is not a member here. Once this node is in a cluster, that
// is logged as an error, once per member, and a member seen before it joined the other
// cluster is downed here.
func (c *Core) foreignMember(u member.UniqueAddress, name, theirs, ours string) {
	if !c.joined {
		return // the join process decides which cluster to join
	}
	if !c.foreign[name] {
		if c.foreign == nil {
			c.foreign = make(map[string]bool)
		}
		c.foreign[name] = true
		c.out = append(c.out, Log{Level: Error,
			Msg:    "a member of another cluster reached this node's view; it is not a member here (clusters never merge)",
			Fields: []Field{{"node", name}, {"their_cluster", theirs}, {"our_cluster", ours}}})
	}
	if _, known := c.ms.Member(u); known {
		c.apply(c.ms.Down(u))
	}
}

// Apply takes in the events of a membership step (the shell's reachability changes)
// at now.
func (c *Core) Apply(evs []member.Event, err error, now time.Time) []Effect {
	c.now = now
	c.apply(evs, err)
	return c.take()
}

// apply publishes events from the membership and acts on them, at the time of the
// input being handled.
func (c *Core) apply(evs []member.Event, err error) {
	now := c.now
	if err != nil {
		c.out = append(c.out, Log{Level: Debug, Msg: "membership input ignored", Fields: []Field{{"error", err.Error()}}})
	}
	if len(evs) == 0 {
		return
	}
	var downed []member.UniqueAddress
	var follow []member.Event
	selfUp := false
	for _, ev := range evs {
		switch ev.(type) {
		case member.OldestChanged, member.UnreachableMember, member.ReachableMember:
			// Not membership changes; the shell tracks reachability.
		case member.MemberJoined:
			// A joining member is not counted by the resolver, and moves Up only once
			// every counted member knows it (MaybeUp): as in Akka, its arrival does not
			// restart stable-after, so that a node restarted during an unreachability
			// does not turn the resolver's decision into down-all-when-unstable.
		default:
			c.res.MembershipChanged(now)
		}
		switch e := ev.(type) {
		case member.MemberUp:
			selfUp = selfUp || e.Member.Unique == c.self
		case member.MemberDowned:
			if e.Member.Unique != c.self {
				downed = append(downed, e.Member.Unique)
			}
		case member.MemberRemoved:
			u := e.Member.Unique
			if u == c.self {
				break
			}
			delete(c.serfFailed, u)
			delete(c.legacy, u)
			c.table.Remove(u)
			c.out = append(c.out, Removed{Member: u, Harmless: e.PreviousStatus != member.Down})
			follow = append(follow, c.margins.Removed(e, now)...)
		}
	}
	c.publish(evs)
	if selfUp {
		// After the snapshot is published: those waiting read the state and find
		// this member Up in it.
		c.out = append(c.out, MarkUp{})
	}
	c.publish(follow)
	// A downed member is removed at once (a downed node stops its cluster services);
	// this also removes an old incarnation that a restarted node replaced. Its work is
	// taken over only after the removal margin (RemovalMarginPassed).
	for _, u := range downed {
		c.apply(c.ms.Remove(u))
	}
}

// publish gathers the events with the state they leave.
func (c *Core) publish(evs []member.Event) {
	if len(evs) == 0 {
		return
	}
	c.out = append(c.out, Publish{Events: evs, State: c.Snapshot()})
}

// MarginsDue publishes the RemovalMarginPassed events due at now.
func (c *Core) MarginsDue(now time.Time) []Effect {
	c.now = now
	c.publish(c.margins.Due(now))
	return c.take()
}

// MaybeUp moves this member to Up once it has joined and min-nr-of-members are in,
// with an age from the wall clock now. A member that joined an existing cluster also
// waits until it sees a member Up there: it then picks an age above that member's, so
// the members that formed the cluster stay older than those that joined it, and the
// oldest does not move while a cluster forms.
//
// Such a member also waits until the cluster has converged, as Akka's leader moves a
// joining member Up only then: every member that the resolvers count (Up, Leaving,
// Exiting) knows it, and none of them, nor this member, sees a member unreachable.
// Each has answered its welcome request (MaybeUp asks each member
// it waits for at once, and the shell asks them all again at every tick while this
// member waits: AskWelcomes), and the members waited for are those this member
// counts and those the last answer of each member counted, less those this member
// knows to be Down or removed. A member that joined through one side of a partition
// learns of the other side from the answers. Without this, a member that moved Up on
// one side of a partition would be counted by that side's resolver only: with two
// members joining the side that had one member of three, both sides would count a
// majority and keep running. Across a partition (or to a crashed member) the request
// goes unanswered, and the member stays Joining until the resolvers have decided.
func (c *Core) MaybeUp(now time.Time) []Effect {
	c.now = now
	self, ok := c.ms.Member(c.self)
	if !ok || self.Status != member.Joining || c.leaving || c.downed || !c.joined || !c.ms.MinMembersMet() {
		return nil
	}
	if !c.founder {
		if _, seen := c.ms.Oldest(""); !seen {
			return nil
		}
		if want, missing := c.awaitedWelcomes(); missing {
			var fresh []member.UniqueAddress
			for _, u := range want {
				if !c.asked[u] {
					fresh = append(fresh, u)
				}
			}
			c.askWelcome(fresh)
			return c.take()
		}
	}
	var tell []member.UniqueAddress
	if !c.founder {
		tell, _ = c.awaitedWelcomes()
	}
	self.Status = member.Up
	self.UpNumber = c.ms.NextUpNumber(now.UnixMilli())
	c.apply(c.ms.Observe(self))
	c.publishSelf()
	if me, ok := c.ms.Member(c.self); ok && me.Status == member.Up && len(tell) > 0 {
		// serf spreads the new tags by gossip, which now and then misses a member
		// until the next full exchange (30 s later): until then that member would not
		// count this one, nor take its regions or its replicas' messages.
		c.out = append(c.out, AnnounceUp{To: tell, Self: me})
	}
	return c.take()
}

// AnnouncedUp takes in a joining member's notice that it moved itself Up (see
// MaybeUp): the member m, as it publishes itself in its tags. A member this node
// knows as Joining is Up from now on, as when serf brings the same tags; any other
// notice (an unknown or removed member, a member past Joining here) changes nothing.
func (c *Core) AnnouncedUp(m member.Member, now time.Time) []Effect {
	c.now = now
	if m.Status != member.Up || c.ms.WasRemoved(m.Unique) {
		return nil
	}
	if cur, ok := c.ms.Member(m.Unique); !ok || cur.Status != member.Joining {
		return nil
	}
	c.apply(c.ms.Observe(m))
	return c.take()
}

// Legacy records that member u does not speak the welcome exchange (its tags lack
// membership.TagWelcome, as Troupe v0.1.0's do): a joining member does not wait for
// its answer, which would never come, nor announce itself Up to it. It keeps the
// convergence rule among the members that speak it, and a cluster in a rolling
// upgrade from v0.1.0 lets new members move Up.
func (c *Core) Legacy(u member.UniqueAddress) {
	if c.ms.WasRemoved(u) {
		return // serf still reports it; it is gone here, and kept no more
	}
	if c.legacy == nil {
		c.legacy = make(map[member.UniqueAddress]bool)
	}
	c.legacy[u] = true
}

// awaitedWelcomes returns the members whose welcome this joining member waits for
// (see MaybeUp), sorted, and whether any of them has not answered yet.
func (c *Core) awaitedWelcomes() ([]member.UniqueAddress, bool) {
	set := make(map[member.UniqueAddress]bool)
	for _, u := range c.Counted() {
		set[u] = true
	}
	for _, w := range c.welcomed {
		for _, u := range w.Counted {
			set[u] = true
		}
	}
	delete(set, c.self)
	var want []member.UniqueAddress
	missing := false
	for u := range set {
		if m, ok := c.ms.Member(u); ok && m.Status == member.Down || c.ms.WasRemoved(u) || c.legacy[u] {
			continue
		}
		want = append(want, u)
		if w, ok := c.welcomed[u]; !ok || w.Unreachable {
			missing = true
		}
	}
	if len(c.table.Records(c.Live)) > 0 {
		missing = true // not converged: wait, and keep asking
	}
	slices.SortFunc(want, member.CompareAddress)
	return want, missing
}

// AskWelcomes asks, while this member has joined and waits to move itself Up, every
// member it waits for to answer its welcome request again (see MaybeUp): the answers
// bring the members each counts now. The shell calls it every tick.
func (c *Core) AskWelcomes() []Effect {
	self, ok := c.ms.Member(c.self)
	if !ok || self.Status != member.Joining || c.founder || !c.joined || c.leaving || c.downed {
		return nil
	}
	want, _ := c.awaitedWelcomes()
	c.askWelcome(want)
	return c.take()
}

// askWelcome asks the members of to for a welcome (an AskWelcome effect), if any.
func (c *Core) askWelcome(to []member.UniqueAddress) {
	if len(to) == 0 {
		return
	}
	if c.asked == nil {
		c.asked = make(map[member.UniqueAddress]bool)
	}
	for _, u := range to {
		c.asked[u] = true
	}
	c.out = append(c.out, AskWelcome{To: to})
}

// Welcome is a member's answer to a joining member's welcome request: it knows the
// joining member, counts Counted, and sees a member unreachable or not.
type Welcome struct {
	Counted     []member.UniqueAddress
	Unreachable bool
}

// Welcome returns this node's answer to a welcome request (see MaybeUp).
func (c *Core) Welcome() Welcome {
	return Welcome{Counted: c.Counted(), Unreachable: len(c.table.Records(c.Live)) > 0}
}

// Welcomed takes in from's answer to this member's welcome request (see MaybeUp), and
// moves this member Up if that was the last answer it waited for.
func (c *Core) Welcomed(from member.UniqueAddress, w Welcome, now time.Time) []Effect {
	if c.welcomed == nil {
		c.welcomed = make(map[member.UniqueAddress]Welcome)
	}
	c.welcomed[from] = w
	return c.MaybeUp(now)
}

// Counted returns the members the resolver counts (Up, Leaving, Exiting), this one
// included when it is: what an answer to a welcome request carries.
func (c *Core) Counted() []member.UniqueAddress {
	var us []member.UniqueAddress
	for _, m := range c.ms.Members() {
		if m.Status == member.Up || m.Status == member.Leaving || m.Status == member.Exiting {
			us = append(us, m.Unique)
		}
	}
	return us
}

// publishSelf asks for this member's current status and age in its serf tags.
func (c *Core) publishSelf() {
	if self, ok := c.ms.Member(c.self); ok {
		c.out = append(c.out, SetTags{Self: self})
	}
}

// Down declares the members Down and then, if it is listed, this node; members this
// node does not know are skipped. The shell spreads a decision of its own first.
func (c *Core) Down(us []member.UniqueAddress, now time.Time) []Effect {
	c.now = now
	c.down(us)
	return c.take()
}

// down is Down's body.
func (c *Core) down(us []member.UniqueAddress) {
	if c.downed || len(us) == 0 {
		return
	}
	self := false
	for _, u := range us {
		if u == c.self {
			self = true
			continue
		}
		if _, known := c.ms.Member(u); known {
			c.apply(c.ms.Down(u))
		}
	}
	if self {
		c.downSelf()
	}
}

// downSelf stops this node's cluster services: it was downed, by the resolver on its
// own side or by another member.
func (c *Core) downSelf() {
	c.downed = true
	c.out = append(c.out, Log{Level: Warn, Msg: "this member was downed; stopping the cluster services"})
	c.apply(c.ms.Down(c.self))
	c.out = append(c.out, Stop{})
	c.apply(c.ms.Remove(c.self))
	c.out = append(c.out, Downed{})
}

// QuarantinedBy handles the refusal of a connection from this incarnation by the
// system at addr, which has quarantined it. A member quarantines another when it
// removes it, and it removes it when it is Down: so a live member (in this node's
// view) that refuses this incarnation has applied a Down of it that never reached
// this node (a one-way fault can stop both the decider's serf event and its notice).
// This node then downs itself at once. A refusal while this node leaves is expected.
func (c *Core) QuarantinedBy(addr string, now time.Time) []Effect {
	c.now = now
	if c.leaving || c.downed || !c.joined {
		return nil
	}
	for _, m := range c.ms.Members() {
		if m.Unique.Addr == addr && m.Unique != c.self && m.Status != member.Down {
			c.out = append(c.out, Log{Level: Warn,
				Msg: "a member refuses this incarnation: it quarantined it, as it does when it removes this member from the cluster; " +
					"the decision that downed this member did not reach it",
				Fields: []Field{{"by", m.Unique.String()}}})
			c.downSelf()
			break
		}
	}
	return c.take()
}

// Leave starts a graceful leave: this member is Leaving, in its tags too. ok is false
// when there is nothing to do (it leaves already, or was downed); the shell then
// leaves serf.
func (c *Core) Leave(now time.Time) (effects []Effect, ok bool) {
	c.now = now
	if c.leaving || c.downed {
		return nil, false
	}
	c.leaving = true
	c.apply(c.ms.Leave(c.self))
	c.publishSelf()
	return c.take(), true
}

// LeaveDone says serf's leave ended: this member is Exiting and removed, and the
// services stop.
func (c *Core) LeaveDone(now time.Time) []Effect {
	c.now = now
	c.apply(c.ms.SetStatus(c.self, member.Exiting))
	c.apply(c.ms.Remove(c.self))
	c.out = append(c.out, Stop{})
	return c.take()
}
