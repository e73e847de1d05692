package sbr

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/member"
)

// Record is one observation of the reachability table: Observer cannot reach Subject.
type Record struct {
	Observer member.UniqueAddress
	Subject  member.UniqueAddress
}

// Input is what the resolver decides from: the members this node sees and every
// unreachability observation it knows, its own and those gossiped by the others.
type Input struct {
	// Self is this node.
	Self member.UniqueAddress
	// Members is every member that is not Removed, in any order.
	Members []member.Member
	// Unreachable holds the observations; the order does not matter. Observations by or
	// about members that are Down or not in Members are ignored.
	Unreachable []Record
}

// Action is the kind of a Decision.
type Action uint8

const (
	// NoAction: nothing to down.
	NoAction Action = iota
	// DownUnreachable: the reachable side survives and downs the unreachable members.
	DownUnreachable
	// DownReachable: the reachable side loses and downs itself.
	DownReachable
	// DownEveryone: every member is downed.
	DownEveryone
	// DownIndirectlyConnected: the indirectly connected members are downed, together
	// with what the strategy decides about a clean partition beside them.
	DownIndirectlyConnected
	// ReverseDownIndirectlyConnected: under LeaseMajority, the lease was not acquired:
	// the indirectly connected members and the reachable side are downed.
	ReverseDownIndirectlyConnected
)

var actionNames = [...]string{"no-action", "down-unreachable", "down-reachable", "down-all",
	"down-indirectly-connected", "reverse-down-indirectly-connected"}

// String returns the action's name, such as "down-unreachable".
func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Decision is the resolver's verdict: which members to down.
type Decision struct {
	// Action is the kind of decision.
	Action Action
	// Down lists the members to down, ordered by address; never a member already Down.
	Down []member.UniqueAddress
}

// Downs reports whether the decision downs the member.
func (d Decision) Downs(u member.UniqueAddress) bool {
	return slices.Contains(d.Down, u)
}

// view is an Input analysed: the live members, the unreachable ones, and which of
// those are indirectly connected.
type view struct {
	self        member.UniqueAddress
	live        map[member.UniqueAddress]member.Member
	records     []Record
	unreachable map[member.UniqueAddress]bool
	indirect    map[member.UniqueAddress]bool
}

// analyze keeps the members that are neither Down nor Removed and the observations
// between two distinct such members, except those of observers across a broken link
// from this node (observers it cannot reach, or that cannot reach it) that no member
// bridges to this node's side. Such observations reached this node while the link was
// up, or through other members, and what they see of this side says nothing the
// observations of this side do not. A member bridges X when it is on this node's side
// (neither observes the other unreachable with this node) and neither it nor X
// observes the other unreachable: then X still talks to this side, the broken link is
// a failed link and not a partition, and X's observations count (see Decide).
func analyze(in Input) view {
	live := make(map[member.UniqueAddress]member.Member, len(in.Members))
	for _, m := range in.Members {
		if m.Status != member.Down && m.Status != member.Removed {
			live[m.Unique] = m
		}
	}
	across := make(map[member.UniqueAddress]bool)
	broken := make(map[[2]member.UniqueAddress]bool, len(in.Unreachable))
	for _, r := range in.Unreachable {
		broken[[2]member.UniqueAddress{r.Observer, r.Subject}] = true
		switch in.Self {
		case r.Observer:
			across[r.Subject] = true
		case r.Subject:
			across[r.Observer] = true
		}
	}
	bridged := make(map[member.UniqueAddress]bool)
	for x := range across {
		for y := range live {
			if y != in.Self && y != x && !across[y] &&
				!broken[[2]member.UniqueAddress{y, x}] && !broken[[2]member.UniqueAddress{x, y}] {
				bridged[x] = true
				break
			}
		}
	}
	var recs []Record
	for _, r := range in.Unreachable {
		_, o := live[r.Observer]
		_, s := live[r.Subject]
		if o && s && r.Observer != r.Subject && (r.Observer == in.Self || !across[r.Observer] || bridged[r.Observer]) {
			recs = append(recs, r)
		}
	}
	return withRecords(in.Self, live, recs)
}

// Summary returns the members the resolver considers unreachable, and the indirectly
// connected ones among them, ordered by address: what the caller watches for changes.
func Summary(in Input) (unreachable, indirect []member.UniqueAddress) {
	v := analyze(in)
	return sorted(v.unreachable), sorted(v.indirect)
}

// withRecords computes the unreachable and indirectly connected members of recs. A
// member is unreachable when any observer says so. It is indirectly connected when it
// also observes another member unreachable: it still talks to the cluster (its
// observations arrive), so the problem is in some links, not a clean partition or a
// crash, and no side can be trusted to hold it.
func withRecords(self member.UniqueAddress, live map[member.UniqueAddress]member.Member, recs []Record) view {
	v := view{self: self, live: live, records: recs,
		unreachable: make(map[member.UniqueAddress]bool), indirect: make(map[member.UniqueAddress]bool)}
	observers := make(map[member.UniqueAddress]bool)
	for _, r := range recs {
		v.unreachable[r.Subject] = true
		observers[r.Observer] = true
	}
	for u := range v.unreachable {
		if observers[u] {
			v.indirect[u] = true
		}
	}
	return v
}

// Decide returns the split-brain decision for the input, by the strategy in cfg, and
// this node downs itself when the decision lists it. It is a pure function of the
// members and the observations; which node asks matters only through what it cannot
// reach itself (see the rules), so the nodes that can reach each other and share a
// table decide the same. It does not look at time; Resolver adds the stable-after
// wait. Under LeaseMajority it returns the decision for a side that holds the lease.
//
// Rules:
//   - Members already Down (and Removed ones) are ignored. With no unreachable member
//     the decision is NoAction: nothing is ever downed on a timer alone.
//   - Observations by members across a broken link from this node (it cannot reach
//     them, or they cannot reach it) are left out: in a partition, rows of the other
//     side reach this side while a flapping link is up, and would make both sides look
//     indirectly connected. (Akka keeps them.) They are kept when another member of
//     this node's side still reaches that member both ways (a bridge): the broken
//     link is then a failed link, not a partition, and its two ends must see
//     themselves indirectly connected as every bystander does, so that all decide
//     the same without hearing from each other.
//   - The reachable side is every live member no observer reports unreachable; the
//     unreachable side is the rest. Sides are counted over members that are Up,
//     Leaving or Exiting (with Role when set); Joining members are not counted but go
//     with their side.
//   - Indirectly connected members (unreachable for some, yet observing others: their
//     observations still arrive, so some links work) are downed. When other members are
//     unreachable too, every observation by or about an indirectly connected member is
//     set aside and the strategy decides the clean split that remains; the indirectly
//     connected members are counted on the reachable side there, as the other side of
//     a partition, which cannot see them as indirect, counts them.
func Decide(cfg Config, in Input) Decision {
	return decide(cfg, analyze(in))
}

func decide(cfg Config, v view) Decision {
	if len(v.unreachable) == 0 {
		return Decision{Action: NoAction}
	}
	if len(v.indirect) == 0 {
		return decideSides(cfg, v)
	}
	down := make(map[member.UniqueAddress]bool, len(v.indirect))
	for u := range v.indirect {
		down[u] = true
	}
	// The indirectly connected members go whatever else happens, so what they observe
	// and what is observed about them says nothing more: set it aside and let the
	// strategy decide on the rest. No member of the rest is indirectly connected (it
	// would have been so in the whole table already).
	var rest []Record
	for _, r := range v.records {
		if !v.indirect[r.Observer] && !v.indirect[r.Subject] {
			rest = append(rest, r)
		}
	}
	if v2 := withRecords(v.self, v.live, rest); len(v2.unreachable) > 0 {
		for _, u := range decideSides(cfg, v2).Down {
			down[u] = true
		}
	}
	return Decision{Action: DownIndirectlyConnected, Down: sorted(down)}
}

// downAll downs every live member.
func downAll(v view) Decision {
	down := make(map[member.UniqueAddress]bool, len(v.live))
	for u := range v.live {
		down[u] = true
	}
	return Decision{Action: DownEveryone, Down: sorted(down)}
}

// sides counts the two sides over the members that count.
type sides struct {
	counted     []member.Member
	reachable   int
	unreachable int
}

func count(cfg Config, v view) sides {
	var s sides
	for _, m := range v.live {
		if m.Status < member.Up || !m.HasRole(cfg.Role) {
			continue
		}
		s.counted = append(s.counted, m)
		if v.unreachable[m.Unique] {
			s.unreachable++
		} else {
			s.reachable++
		}
	}
	slices.SortFunc(s.counted, func(a, b member.Member) int { return member.CompareAddress(a.Unique, b.Unique) })
	return s
}

// decideSides applies the strategy to a clean split between the reachable and the
// unreachable members of v.
func decideSides(cfg Config, v view) Decision {
	s := count(cfg, v)
	var action Action
	switch cfg.Strategy {
	case DownAll:
		return downAll(v)
	case StaticQuorum:
		switch {
		case len(s.counted) > 2*cfg.QuorumSize-1:
			return downAll(v)
		case s.reachable >= cfg.QuorumSize:
			action = DownUnreachable
		default:
			action = DownReachable
		}
	case KeepOldest:
		action = keepOldest(cfg, v, s)
	case LeaseMajority:
		action = DownUnreachable // the side that holds the lease
	default:
		action = keepMajority(v, s)
	}
	return sideDecision(action, v)
}

// sideDecision lists the members an action on a clean split downs.
func sideDecision(action Action, v view) Decision {
	down := make(map[member.UniqueAddress]bool)
	for u := range v.live {
		if action == DownUnreachable && v.unreachable[u] || action == DownReachable && !v.unreachable[u] {
			down[u] = true
		}
	}
	return Decision{Action: action, Down: sorted(down)}
}

// keepMajority decides by side size, and an equal split by the lowest address.
func keepMajority(v view, s sides) Action {
	switch {
	case s.reachable > s.unreachable:
		return DownUnreachable
	case s.reachable < s.unreachable:
		return DownReachable
	}
	// Equal split. A side whose counted members all announced that they leave (Leaving
	// or Exiting) has handed its work over and is going away: the other side is kept,
	// and both sides agree on that. (A leaving member that stops before the others see
	// it Exiting is unreachable for a moment; without this rule, a two-member cluster
	// whose remaining member has the higher address downed itself.)
	if reach, unreach := allLeaving(v, s, false), allLeaving(v, s, true); reach != unreach {
		if unreach {
			return DownUnreachable
		}
		return DownReachable
	}
	// Otherwise (or nothing counted at all): the side with the lowest address wins.
	pool := s.counted
	if len(pool) == 0 {
		for _, m := range v.live {
			pool = append(pool, m)
		}
	}
	lowest := pool[0].Unique
	for _, m := range pool[1:] {
		if member.CompareAddress(m.Unique, lowest) < 0 {
			lowest = m.Unique
		}
	}
	if v.unreachable[lowest] {
		return DownReachable
	}
	return DownUnreachable
}

// allLeaving reports whether the counted members of one side (the unreachable side when
// unreachable is true) are all Leaving or Exiting, and there is at least one.
func allLeaving(v view, s sides, unreachable bool) bool {
	n := 0
	for _, m := range s.counted {
		if v.unreachable[m.Unique] != unreachable {
			continue
		}
		if m.Status != member.Leaving && m.Status != member.Exiting {
			return false
		}
		n++
	}
	return n > 0
}

// keepOldest keeps the side of the oldest counted member, with the down-if-alone rule.
func keepOldest(cfg Config, v view, s sides) Action {
	oldest, ok := member.Oldest(s.counted, "")
	if !ok && len(s.counted) > 0 { // only Exiting members: the oldest of those
		oldest, ok = s.counted[0], true
		for _, m := range s.counted[1:] {
			if m.IsOlderThan(oldest) {
				oldest = m
			}
		}
	}
	if !ok {
		return keepMajority(v, s)
	}
	alone := !cfg.KeepOldestIfAlone
	if !v.unreachable[oldest.Unique] {
		if alone && s.reachable == 1 && s.unreachable >= 1 {
			return DownReachable
		}
		return DownUnreachable
	}
	if alone && s.unreachable == 1 && s.reachable >= 1 {
		return DownUnreachable
	}
	return DownReachable
}

// isMinority reports whether keep-majority would down the reachable side: under
// LeaseMajority that side waits before it tries to acquire the lease.
func isMinority(cfg Config, v view) bool {
	return keepMajority(v, count(cfg, v)) == DownReachable
}

// reverse turns the decision of a side that holds the lease into the decision of a
// side that could not acquire it: it downs itself (and the indirectly connected
// members).
func reverse(d Decision, v view) Decision {
	down := make(map[member.UniqueAddress]bool)
	for u := range v.live {
		if !v.unreachable[u] || v.indirect[u] {
			down[u] = true
		}
	}
	action := DownReachable
	if d.Action == DownIndirectlyConnected || d.Action == DownEveryone {
		action = ReverseDownIndirectlyConnected
	}
	return Decision{Action: action, Down: sorted(down)}
}

// responsible returns the member that acts for the reachable side under LeaseMajority:
// the lowest address among the reachable members that are Up or Leaving, or among all
// reachable members when none is.
func responsible(v view) (member.UniqueAddress, bool) {
	var best member.UniqueAddress
	found, foundUp := false, false
	for u, m := range v.live {
		if v.unreachable[u] {
			continue
		}
		up := m.Status.HasAge()
		switch {
		case !found, up && !foundUp, up == foundUp && member.CompareAddress(u, best) < 0:
			best, found, foundUp = u, true, up
		}
	}
	return best, found
}

func sorted(set map[member.UniqueAddress]bool) []member.UniqueAddress {
	out := make([]member.UniqueAddress, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.SortFunc(out, member.CompareAddress)
	return out
}
