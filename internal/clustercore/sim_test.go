package clustercore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
)

// The simulation drives several nodes' cores with a model of serf: member events
// delivered in random orders, partitions, graceful leaves (some of whose leave
// intents are lost, so that the others hear "failed"), crashes and restarts, and down
// decisions by the majority side. It checks, after every step, that no observer ever
// brings a removed incarnation back and that statuses only move forward; after each
// failed report about a member seen leaving, that the member was removed as having
// left; and at the end, once every link is healed and every dead member downed, that
// the surviving nodes agree on the members. TestSimulationWithResolver lets the
// nodes' own heartbeats, reachability gossip and resolver decide the downs, and checks
// that each decision is taken on a view (members and unreachable set) unchanged for
// StableAfter.

const simMargin = 2 * time.Second

var simStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simNode is one incarnation of a node.
type simNode struct {
	core      *Core
	self      member.Member // as its tags say now
	group     int           // partition group
	crashed   bool
	stopped   bool                          // its cluster services stopped (left or downed)
	leaving   bool                          // it asked to leave and serf has not finished
	undecided bool                          // on a losing side, it has not downed itself yet
	summary   string                        // the resolver's unreachable summary, last tick
	stableAt  time.Time                     // when summary or the members last changed
	members   string                        // the members and statuses, last tick
	removed   map[member.UniqueAddress]bool // removed in its view
	lastSeen  map[member.UniqueAddress]member.MemberStatus
	published []member.Event
}

type sim struct {
	t     *testing.T
	rng   *rand.Rand
	now   time.Time
	nodes []*simNode // every incarnation ever started
	// current holds the latest incarnation at each address: serf keeps one entry per
	// address, so its events are about these only.
	current []*simNode
	// resolver: the nodes run their heartbeats, reachability gossip and split-brain
	// resolver (keep-majority) instead of the model's downMinority.
	resolver bool
	next     uint64    // next uid
	pending  []welcome // welcome answers on their way, delivered at the next tick
	notices  []notice  // Up notices on their way, delivered at the next tick
}

// notice is a joining member's notice that it moved itself Up.
type notice struct {
	to   *simNode
	self member.Member
}

// welcome is an answer to a joining member's welcome request.
type welcome struct {
	to     *simNode
	from   member.UniqueAddress
	answer Welcome
}

func simConfig(self member.Member) Config {
	return Config{
		Self:       self,
		Membership: membership.MembershipConfig{MinNrOfMembers: 1},
		Resolver:   sbr.Config{StableAfter: 3 * time.Second},
		Monitor: reachability.MonitorConfig{
			Interval: 100 * time.Millisecond, AcceptablePause: 300 * time.Millisecond, Threshold: 8,
			MinStdDeviation: 20 * time.Millisecond, ExpectedFirst: 200 * time.Millisecond, Monitors: 3, MaxSamples: 100,
		},
		DownRemovalMargin: simMargin,
	}
}

// start starts a new incarnation at address i.
func (s *sim) start(i int, founder bool) *simNode {
	s.next++
	self := member.Member{Unique: member.UniqueAddress{Addr: "troupe://sim@10.0.0." + strconv.Itoa(i+1) + ":2552", UID: s.next}, Status: member.Joining}
	c, err := New(simConfig(self), s.now)
	if err != nil {
		s.t.Fatal(err)
	}
	n := &simNode{core: c, self: self, removed: map[member.UniqueAddress]bool{}, lastSeen: map[member.UniqueAddress]member.MemberStatus{}}
	s.nodes = append(s.nodes, n)
	s.current[i] = n
	s.run(n, c.JoinedCluster(founder))
	return n
}

// live returns the incarnations whose services run.
func (s *sim) live() []*simNode {
	var out []*simNode
	for _, n := range s.nodes {
		if !n.crashed && !n.stopped {
			out = append(out, n)
		}
	}
	return out
}

// run carries out effects at n and checks the events.
func (s *sim) run(n *simNode, effects []Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case Publish:
			for _, ev := range e.Events {
				s.check(n, ev)
			}
			n.published = append(n.published, e.Events...)
		case SetTags:
			n.self = e.Self
		case Stop, Downed:
			n.stopped = true
		case AskWelcome:
			// Each member asked answers if the link is up and it knows n.
			for _, u := range e.To {
				if o := s.find(u); o != nil && !o.stopped && connected(n, o) && o.core.Live(n.self.Unique) {
					s.pending = append(s.pending, welcome{to: n, from: u, answer: o.core.Welcome()})
				}
			}
		case AnnounceUp:
			for _, u := range e.To {
				if o := s.find(u); o != nil && !o.stopped && connected(n, o) {
					s.notices = append(s.notices, notice{to: o, self: e.Self})
				}
			}
		}
	}
	s.observe(n)
	for _, m := range n.core.Snapshot().Members {
		if n.removed[m.Unique] {
			s.t.Fatalf("%s: removed %s is back in the state: %v", n.self.Unique, m.Unique, m.Status)
		}
	}
}

// observe notes when n's view (the resolver's unreachable summary and the members)
// last changed.
func (s *sim) observe(n *simNode) {
	unreachable, indirect := sbr.Summary(n.core.Input())
	summary := fmt.Sprint(unreachable, indirect)
	var ms []string
	for _, m := range n.core.Membership().Members() {
		if m.Status == member.Joining {
			continue // not counted: its arrival does not restart stable-after
		}
		ms = append(ms, m.Unique.String()+" "+m.Status.String())
	}
	members := fmt.Sprint(ms)
	if summary != n.summary || members != n.members || n.stableAt.IsZero() {
		n.summary, n.members, n.stableAt = summary, members, s.now
	}
}

// check checks one event published at n.
func (s *sim) check(n *simNode, ev member.Event) {
	var m member.Member
	switch e := ev.(type) {
	case member.MemberJoined:
		m = e.Member
	case member.MemberUp:
		m = e.Member
	case member.MemberLeft:
		m = e.Member
	case member.MemberExited:
		m = e.Member
	case member.MemberDowned:
		m = e.Member
	case member.MemberRemoved:
		m = e.Member
	default:
		return
	}
	u := m.Unique
	if n.removed[u] {
		s.t.Fatalf("%s: %T about %s after it was removed", n.self.Unique, ev, u)
	}
	if prev, ok := n.lastSeen[u]; ok && m.Status <= prev {
		s.t.Fatalf("%s: %s moved back from %v to %v", n.self.Unique, u, prev, m.Status)
	}
	n.lastSeen[u] = m.Status
	if m.Status == member.Removed {
		n.removed[u] = true
	}
}

// connected reports whether serf at o reaches s.
func connected(o, s *simNode) bool { return !s.crashed && !s.stopped && o.group == s.group }

// deliver gives o a serf event about s, checking the leave-then-failed rule.
func (s *sim) deliver(o, subj *simNode, kind Kind) {
	if o.crashed || o.stopped {
		return
	}
	cur, known := o.core.Membership().Member(subj.self.Unique)
	effects := o.core.MemberEvent(kind, subj.self.Unique.Addr, subj.self, "", "", s.now)
	s.run(o, effects)
	if kind == Failed && known && (cur.Status == member.Leaving || cur.Status == member.Exiting) && subj.self.Unique != o.self.Unique {
		ok := false
		for _, ev := range o.published {
			if r, isR := ev.(member.MemberRemoved); isR && r.Member.Unique == subj.self.Unique && r.PreviousStatus == member.Exiting {
				ok = true
			}
		}
		if !ok {
			s.t.Fatalf("%s: %s, seen %v, reported failed, was not removed as having left", o.self.Unique, subj.self.Unique, cur.Status)
		}
	}
}

// refuse has o's transport refuse subj when o removed it: subj hears that o
// quarantined it.
func (s *sim) refuse(o, subj *simNode) {
	if o.removed[subj.self.Unique] && connected(o, subj) {
		s.run(subj, subj.core.QuarantinedBy(o.self.Unique.Addr, s.now))
	}
}

// gossip delivers what serf would: each live observer hears about a random subject.
func (s *sim) gossip() {
	for _, o := range s.live() {
		subj := s.current[s.rng.IntN(len(s.current))]
		switch {
		case connected(o, subj):
			s.deliver(o, subj, Update)
			s.refuse(o, subj)
		case subj.crashed || o.group != subj.group:
			if subj.leaving && s.rng.IntN(2) == 0 && o.group == subj.group {
				s.deliver(o, subj, Leave)
			} else {
				s.deliver(o, subj, Failed)
			}
		case subj.stopped:
			if s.rng.IntN(3) == 0 {
				s.deliver(o, subj, Failed) // the leave intent was lost
			} else {
				s.deliver(o, subj, Leave)
			}
		}
	}
}

// tick advances time and lets each live node move itself Up and pass margins.
func (s *sim) tick(d time.Duration) {
	s.now = s.now.Add(d)
	pending := s.pending
	s.pending = nil
	for _, w := range pending {
		if !w.to.stopped {
			s.run(w.to, w.to.core.Welcomed(w.from, w.answer, s.now))
		}
	}
	notices := s.notices
	s.notices = nil
	for _, m := range notices {
		if !m.to.stopped {
			s.run(m.to, m.to.core.AnnouncedUp(m.self, s.now))
		}
	}
	for _, n := range s.live() {
		s.run(n, n.core.AskWelcomes())
		s.run(n, n.core.MaybeUp(s.now))
		s.run(n, n.core.MarginsDue(s.now))
	}
	if s.resolver {
		s.reachability()
	}
}

// find returns the incarnation u.
func (s *sim) find(u member.UniqueAddress) *simNode {
	for _, n := range s.nodes {
		if n.self.Unique == u {
			return n
		}
	}
	return nil
}

// reachability runs each live node's heartbeats (answered across working links),
// reachability gossip (to the members it reaches) and resolver, and checks that a
// decision is taken only on an unreachable set and members unchanged for StableAfter.
func (s *sim) reachability() {
	for _, n := range s.live() {
		for _, u := range n.core.Monitor().Targets() {
			if t := s.find(u); t != nil && connected(n, t) {
				n.core.HeartbeatAnswered(u, s.now.Add(-time.Millisecond), s.now)
			}
		}
		n.core.CheckMonitor(s.now)
	}
	for _, n := range s.live() {
		for _, o := range s.live() {
			if o != n && connected(n, o) {
				o.core.MergeRows(n.core.Table().Rows())
			}
		}
	}
	for _, n := range s.live() {
		s.run(n, n.core.RefreshReachability(s.now))
		effects, _ := n.core.Decide(s.now)
		for _, e := range effects {
			if d, ok := e.(Decided); ok && !d.Unstable && s.now.Sub(n.stableAt) < simConfig(n.self).Resolver.StableAfter {
				s.t.Fatalf("%s decided %v on a view stable for %v only", n.self.Unique, d.Decision.Action, s.now.Sub(n.stableAt))
			}
		}
		s.run(n, effects)
		for _, e := range effects {
			if sp, ok := e.(Spread); ok {
				for _, u := range sp.To {
					if t := s.find(u); t != nil && connected(n, t) {
						s.run(t, t.core.Down(sp.Down, s.now))
					}
				}
			}
		}
	}
}

// downMinority has the biggest group down the members it cannot reach; the others
// down themselves, at once or (undecided) before they can decide anything again, as
// a resolver on a losing side does.
func (s *sim) downMinority() {
	for _, n := range s.live() {
		if n.undecided {
			s.run(n, n.core.Down([]member.UniqueAddress{n.self.Unique}, s.now))
		}
	}
	live := s.live()
	if len(live) == 0 {
		return
	}
	count := map[int]int{}
	for _, n := range live {
		count[n.group]++
	}
	best := live[0].group
	for g, c := range count {
		if c > count[best] || c == count[best] && g < best {
			best = g
		}
	}
	var down []member.UniqueAddress
	for _, n := range s.nodes {
		if n.group != best || n.crashed {
			down = append(down, n.self.Unique)
		}
	}
	for _, n := range live {
		if n.group == best {
			s.run(n, n.core.Down(down, s.now))
		} else if s.rng.IntN(2) == 0 {
			// Its own resolver made the same decision: it downs itself.
			s.run(n, n.core.Down([]member.UniqueAddress{n.self.Unique}, s.now))
		} else {
			// It has not decided yet; it learns that it is out when a member that
			// removed it refuses it (refuse), or decides in a later round.
			n.undecided = true
		}
	}
}

func TestSimulation(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { simulate(t, seed, false) })
	}
}

// The same with the nodes' own heartbeats, reachability gossip and split-brain
// resolver deciding the downs.
func TestSimulationWithResolver(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 10
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { simulate(t, seed, true) })
	}
}

func simulate(t *testing.T, seed uint64, resolver bool) {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 30)), now: simStart, resolver: resolver}
	const addrs = 5
	s.current = make([]*simNode, addrs)
	s.start(0, true)
	for i := 1; i < addrs; i++ {
		s.start(i, false)
	}
	for range 300 {
		s.gossip()
		s.tick(time.Duration(s.rng.IntN(300)) * time.Millisecond)
		i := s.rng.IntN(addrs)
		n := s.current[i]
		switch r := s.rng.IntN(100); {
		case r < 4: // partition
			for _, m := range s.nodes {
				m.group = s.rng.IntN(2)
			}
		case r < 8: // heal
			for _, m := range s.nodes {
				m.group = 0
			}
		case r < 10 && !n.crashed && !n.stopped && !n.leaving:
			effects, ok := n.core.Leave(s.now)
			if ok {
				n.leaving = true
				s.run(n, effects)
			}
		case r < 14 && n.leaving && !n.stopped:
			n.leaving = false
			s.run(n, n.core.LeaveDone(s.now))
		case r < 16 && !n.crashed:
			n.crashed = true
		case r < 19 && (n.crashed || n.stopped):
			s.start(i, false) // a new incarnation at the same address
		case r < 22 && !s.resolver:
			s.downMinority()
		}
	}
	// Heal: every link works, every leave ends, and the majority downs what is gone.
	for _, m := range s.nodes {
		m.group = 0
		if m.leaving && !m.stopped {
			m.leaving = false
			s.run(m, m.core.LeaveDone(s.now))
		}
	}
	for range 3 {
		if !s.resolver {
			s.downMinority()
		}
		for range 30 {
			for _, o := range s.live() {
				for _, subj := range s.current {
					switch {
					case connected(o, subj):
						s.deliver(o, subj, Update)
						s.refuse(o, subj)
					case subj.stopped && !subj.crashed:
						s.deliver(o, subj, Leave)
					default:
						s.deliver(o, subj, Failed)
					}
				}
			}
			s.tick(100 * time.Millisecond)
		}
	}
	s.tick(simMargin)
	// The survivors agree on the members, and each sees itself and the others Up.
	live := s.live()
	if len(live) == 0 {
		return
	}
	view := func(n *simNode) string {
		var out []string
		for _, m := range n.core.Snapshot().Members {
			out = append(out, m.Unique.String()+" "+m.Status.String())
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	want := view(live[0])
	for _, n := range live[1:] {
		if got := view(n); got != want {
			t.Fatalf("the survivors disagree:\n%s: %s\n%s: %s", live[0].self.Unique, want, n.self.Unique, got)
		}
	}
	if len(live[0].core.Snapshot().Members) != len(live) {
		t.Fatalf("%d survivors, but their view holds %s", len(live), want)
	}
	for _, n := range live {
		if len(n.core.Snapshot().AwaitingRemovalMargin) != 0 {
			t.Errorf("%s: margins still pending after they passed", n.self.Unique)
		}
	}
}
