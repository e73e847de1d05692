package sbr

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
)

// The simulation below runs the resolvers of a whole cluster in virtual time, as package
// cluster drives them: every node has its own view (the members it knows, its own
// observations and the rows it received from the others), tells its resolver of every
// change of that view, steps it, and acts on its decisions: it downs the members listed
// and sends the decision to every member it can reach, which downs those it knows.

// simNode is one node of a simulated cluster.
type simNode struct {
	u       member.UniqueAddress
	res     *Resolver
	knows   []bool  // by member index
	removed []bool  // downed here, hence removed
	rows    [][]int // rows[o]: the members o cannot reach, as received here
	key     string
	last    Input     // the input of the last Step
	next    time.Time // when the last Step asked to be asked again
	stopped bool
}

// simNotice is a decision on its way from one node to another.
type simNotice struct {
	at   time.Duration
	to   int
	down []member.UniqueAddress
}

// simCluster is the simulated cluster: the members with their statuses, the links
// between them (cut reports whether the link between two nodes is down at a moment,
// and since when), and how long each observer takes to notice a cut link.
type simCluster struct {
	t        *testing.T
	rng      *rand.Rand
	members  []member.Member
	nodes    []*simNode
	cut      func(i, j int, at time.Duration) (down bool, since time.Duration)
	detect   [][]time.Duration // detect[o][s]: o sees s unreachable this long after the cut
	delay    [][]time.Duration // delay[o][i]: o's row reaches i this late
	notices  []simNotice
	log      []string
	unstable []string // nodes whose resolver downed everyone for instability
}

// newSimCluster starts the members, each knowing those knows reports.
func newSimCluster(t *testing.T, seed uint64, cfg Config, members []member.Member,
	knows func(i int, m member.Member) bool) *simCluster {
	c := &simCluster{t: t, rng: rand.New(rand.NewPCG(seed, 27)), members: members}
	start := time.Unix(0, 0)
	for i, m := range members {
		r, err := NewResolver(cfg, start)
		if err != nil {
			t.Fatal(err)
		}
		n := &simNode{u: m.Unique, res: r, knows: make([]bool, len(members)),
			removed: make([]bool, len(members)), rows: make([][]int, len(members))}
		for j, o := range members {
			n.knows[j] = i == j || knows(i, o)
		}
		c.nodes = append(c.nodes, n)
	}
	c.detect = make([][]time.Duration, len(members))
	c.delay = make([][]time.Duration, len(members))
	for o := range members {
		c.detect[o] = make([]time.Duration, len(members))
		c.delay[o] = make([]time.Duration, len(members))
		for s := range members {
			// Detections of one cut spread over a second (stable-after is at least
			// twice the spread); rows arrive within 50ms.
			c.detect[o][s] = 300*time.Millisecond + time.Duration(c.rng.Int64N(int64(time.Second)))
			c.delay[o][s] = time.Millisecond + time.Duration(c.rng.Int64N(int64(50*time.Millisecond)))
		}
	}
	return c
}

// observes returns what node o cannot reach at the moment at: the members it knows
// whose link to it has been cut for longer than it takes o to notice.
func (c *simCluster) observes(o int, at time.Duration, out []int) []int {
	out = out[:0]
	for s := range c.members {
		if s == o || !c.nodes[o].knows[s] || c.nodes[o].removed[s] {
			continue
		}
		if down, since := c.cut(o, s, at); down && at-since >= c.detect[o][s] {
			out = append(out, s)
		}
	}
	return out
}

// input is node i's view at the moment at, as its table and membership give it.
func (c *simCluster) input(i int, at time.Duration) Input {
	n := c.nodes[i]
	live := func(j int) bool { return n.knows[j] && !n.removed[j] }
	in := Input{Self: n.u}
	for j, m := range c.members {
		if live(j) {
			in.Members = append(in.Members, m)
		}
	}
	for _, s := range c.observes(i, at, nil) {
		in.Unreachable = append(in.Unreachable, Record{Observer: n.u, Subject: c.members[s].Unique})
	}
	for o, m := range c.members {
		if o == i || !live(o) {
			continue
		}
		for _, s := range n.rows[o] {
			if live(s) {
				in.Unreachable = append(in.Unreachable, Record{Observer: m.Unique, Subject: c.members[s].Unique})
			}
		}
	}
	return in
}

// downAt downs the members at node i (those it knows), itself last.
func (c *simCluster) downAt(i int, at time.Duration, down []member.UniqueAddress) {
	n := c.nodes[i]
	changed := false
	for _, u := range down {
		j := slices.IndexFunc(c.members, func(m member.Member) bool { return m.Unique == u })
		if j != i && n.knows[j] && !n.removed[j] {
			n.removed[j] = true
			changed = true
		}
	}
	if changed {
		n.res.MembershipChanged(time.Unix(0, 0).Add(at))
	}
	if slices.Contains(down, n.u) {
		n.stopped = true
		c.log = append(c.log, fmt.Sprintf("%v: %s stopped", at, n.u.Addr))
	}
}

// run steps every node every 20ms until end, or until nothing is left to happen: no
// decision in flight, and no running node with a member unreachable or a deadline.
func (c *simCluster) run(end time.Duration) {
	for at := time.Duration(0); at <= end && !c.quiet(at); at += 20 * time.Millisecond {
		now := time.Unix(0, 0).Add(at)
		// Decisions in flight arrive.
		var later []simNotice
		for _, nt := range c.notices {
			switch {
			case nt.at > at:
				later = append(later, nt)
			case !c.nodes[nt.to].stopped:
				c.downAt(nt.to, at, nt.down)
			}
		}
		c.notices = later
		for i, n := range c.nodes {
			if n.stopped {
				continue
			}
			// Rows travel over the links that are up.
			for o := range c.members {
				if down, _ := c.cut(o, i, at); o != i && !down && !c.nodes[o].stopped && at >= c.delay[o][i] {
					n.rows[o] = c.observes(o, at-c.delay[o][i], n.rows[o])
				}
			}
			// As the cluster's core: the resolver is told of a change of the view and
			// asked at each change and at the moment it named.
			in := c.input(i, at)
			changed := !slices.EqualFunc(in.Members, n.last.Members, func(a, b member.Member) bool { return a.Unique == b.Unique }) ||
				!slices.Equal(in.Unreachable, n.last.Unreachable)
			if !changed && (n.next.IsZero() || now.Before(n.next)) {
				continue
			}
			n.last = in
			if changed {
				unreachable, indirect := Summary(in)
				if key := fmt.Sprint(unreachable, indirect); key != n.key {
					n.key = key
					n.res.ReachabilityChanged(now)
				}
			}
			st := n.res.Step(now, in)
			n.next = st.Next
			if st.Decision.Action == NoAction {
				continue
			}
			c.log = append(c.log, fmt.Sprintf("%v: %s decides %s %s", at, n.u.Addr, st.Decision.Action, addrs(st.Decision.Down)))
			if st.Unstable {
				c.unstable = append(c.unstable, n.u.Addr)
			}
			for j := range c.nodes {
				if down, _ := c.cut(i, j, at); j != i && !down {
					c.notices = append(c.notices, simNotice{at: at + c.delay[i][j], to: j, down: st.Decision.Down})
				}
			}
			c.downAt(i, at, st.Decision.Down)
		}
	}
}

// quiet reports whether nothing is left to happen at the moment at, once every cut of
// the partition at 0 has been noticed.
func (c *simCluster) quiet(at time.Duration) bool {
	if at < 2*time.Second || len(c.notices) > 0 {
		return false
	}
	for _, n := range c.nodes {
		if !n.stopped && (!n.next.IsZero() || len(n.last.Unreachable) > 0) {
			return false
		}
	}
	return true
}

// running returns the addresses of the nodes still running.
func (c *simCluster) running() []string {
	var out []string
	for _, n := range c.nodes {
		if !n.stopped {
			out = append(out, n.u.Addr)
		}
	}
	return out
}

// simMember is member i of a simulated cluster: on 10.0.0.(i+1), Up with age i+1, or
// Joining.
func simMember(i int, s member.MemberStatus) member.Member {
	m := member.Member{Unique: member.UniqueAddress{Addr: fmt.Sprintf("troupe://n%d@10.0.0.%d:2552", i, i+1), UID: uint64(i + 1)}, Status: s}
	if s == member.Up {
		m.UpNumber = int64(i + 1)
	}
	return m
}

var simConfig = Config{StableAfter: 2 * time.Second, DownAllWhenUnstable: 1500 * time.Millisecond}

// TestSimulationJoiningMemberOnTheMinority partitions six nodes 3|3, with a member
// still Joining on the minority side that only some nodes of the majority know (serf
// never tells a node of a member that it only hears of once the member has failed).
// Whatever node of the majority decides first, its decision is the side's: the
// majority stays, the minority downs itself, and nobody downs everyone.
//
// Before the resolver took a decision that reached it from its side as a decision, a
// majority node that knew the joining member was left with it unreachable after a
// sibling's decision downed the others; its stable-after wait started again, its
// instability measurement did not, and down-all-when-unstable downed the majority
// too: every node down.
func TestSimulationJoiningMemberOnTheMinority(t *testing.T) {
	sideOf := func(i int) int { return i / 3 } // nodes 0-2 | 3-5; node 5 is Joining
	for seed := range uint64(100) {
		var members []member.Member
		for i := range 6 {
			s := member.Up
			if i == 5 {
				s = member.Joining
			}
			members = append(members, simMember(i, s))
		}
		knowers := rand.New(rand.NewPCG(seed, 5))
		c := newSimCluster(t, seed, simConfig, members, func(i int, m member.Member) bool {
			return m.Status != member.Joining || sideOf(i) == 1 || knowers.IntN(2) == 0
		})
		c.cut = func(i, j int, _ time.Duration) (bool, time.Duration) { return sideOf(i) != sideOf(j), 0 }
		c.run(7 * time.Second)
		want := []string{members[0].Unique.Addr, members[1].Unique.Addr, members[2].Unique.Addr}
		if got := c.running(); !slices.Equal(got, want) || len(c.unstable) > 0 {
			t.Fatalf("seed %d: running %v, want the majority %v; down-all for instability on %v; knows the joining member: %v\n%s",
				seed, got, want, c.unstable, whoKnows(c, members[5].Unique), strings.Join(c.log, "\n"))
		}
	}
}

// whoKnows lists the nodes that know u.
func whoKnows(c *simCluster, u member.UniqueAddress) []string {
	var out []string
	for _, n := range c.nodes {
		if n.knows[slices.IndexFunc(c.members, func(m member.Member) bool { return m.Unique == u })] {
			out = append(out, n.u.Addr)
		}
	}
	return out
}

// TestSimulationUnstableNetworkDownsEveryone keeps the safety net: node 4 is cut off
// for good and the link between nodes 0-2 and node 3 flaps faster than stable-after,
// so some member is always unreachable and no view settles. Node 4, alone, downs
// itself; every other node is downed by down-all-when-unstable, although decisions
// (node 4's own) are taken meanwhile.
func TestSimulationUnstableNetworkDownsEveryone(t *testing.T) {
	for seed := range uint64(20) {
		var members []member.Member
		for i := range 5 {
			members = append(members, simMember(i, member.Up))
		}
		c := newSimCluster(t, seed, simConfig, members, func(int, member.Member) bool { return true })
		const period, cutFor = 1500 * time.Millisecond, 1200 * time.Millisecond
		c.cut = func(i, j int, at time.Duration) (bool, time.Duration) {
			switch {
			case i == 4 || j == 4:
				return i != j, 0
			case (i == 3) != (j == 3):
				since := at - at%period
				return at-since < cutFor, since
			}
			return false, 0
		}
		c.run(8 * time.Second)
		if got := c.running(); len(got) > 0 {
			t.Fatalf("seed %d: still running %v\n%s", seed, got, strings.Join(c.log, "\n"))
		}
		if len(c.unstable) == 0 {
			t.Fatalf("seed %d: no down-all for instability\n%s", seed, strings.Join(c.log, "\n"))
		}
	}
}
