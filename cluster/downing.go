package cluster

import (
	"fmt"
	"slices"
	"time"
)

// DefaultStableAfter is the stable-after period used when DowningConfig.StableAfter is 0:
// how long membership and reachability must stay unchanged before the split-brain
// resolver decides.
const DefaultStableAfter = 20 * time.Second

// Strategy is the split-brain resolver's rule for choosing the side that survives a
// partition. The zero value is KeepMajority, the default.
type Strategy uint8

const (
	// KeepMajority keeps the side with more members (counting only members with
	// DowningConfig.Role when it is set). On an exactly equal split the side holding
	// the member with the lowest address (CompareAddress) survives; every node computes
	// the same lowest address from the same members, so exactly one side survives.
	KeepMajority Strategy = iota
	// StaticQuorum keeps a side that has at least DowningConfig.QuorumSize members and
	// downs a side that has fewer. With more than 2*QuorumSize-1 members both sides could
	// reach the quorum, so the whole cluster is downed instead.
	StaticQuorum
	// KeepOldest keeps the side with the oldest member (see Oldest), so a singleton on
	// the oldest keeps running. Unless DowningConfig.KeepOldestIfAlone is set, an oldest
	// member that is alone on its side is downed and the other side survives.
	KeepOldest
	// DownAll downs every member, on both sides, whenever a member is unreachable.
	DownAll
)

var strategyNames = [...]string{"keep-majority", "static-quorum", "keep-oldest", "down-all"}

// String returns the strategy's configuration name, such as "keep-majority".
func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", uint8(s))
}

// ParseStrategy returns the strategy with the configuration name ("keep-majority",
// "static-quorum", "keep-oldest" or "down-all"); "" means KeepMajority.
func ParseStrategy(name string) (Strategy, error) {
	if name == "" {
		return KeepMajority, nil
	}
	for i, n := range strategyNames {
		if n == name {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown downing strategy %q", ErrInvalidConfig, name)
}

// DowningConfig holds the split-brain resolver's settings. The zero value is valid:
// keep-majority, stable-after DefaultStableAfter, no role.
type DowningConfig struct {
	// Strategy chooses the surviving side; KeepMajority by default.
	Strategy Strategy
	// StableAfter is how long membership and reachability must be unchanged before a
	// decision; 0 means DefaultStableAfter.
	StableAfter time.Duration
	// Role, when set, makes KeepMajority, StaticQuorum and KeepOldest count only members
	// with the role. Members without it are still downed with their side.
	Role string
	// QuorumSize is StaticQuorum's minimum side size; required (> 0) for StaticQuorum.
	QuorumSize int
	// KeepOldestIfAlone, for KeepOldest, keeps the oldest's side even when the oldest is
	// alone on it. By default (false) a lone oldest is downed and the other side
	// survives, so one node cut off cannot take the whole cluster down.
	KeepOldestIfAlone bool
}

// Validate reports an unknown strategy, a negative duration or quorum, or a
// StaticQuorum without QuorumSize, wrapping ErrInvalidConfig.
func (c DowningConfig) Validate() error {
	switch {
	case c.Strategy > DownAll:
		return fmt.Errorf("%w: unknown downing strategy %d", ErrInvalidConfig, c.Strategy)
	case c.StableAfter < 0:
		return fmt.Errorf("%w: StableAfter %v is negative", ErrInvalidConfig, c.StableAfter)
	case c.QuorumSize < 0:
		return fmt.Errorf("%w: QuorumSize %d is negative", ErrInvalidConfig, c.QuorumSize)
	case c.Strategy == StaticQuorum && c.QuorumSize == 0:
		return fmt.Errorf("%w: static-quorum needs QuorumSize", ErrInvalidConfig)
	}
	return nil
}

// stableAfter returns StableAfter with its default applied.
func (c DowningConfig) stableAfter() time.Duration {
	if c.StableAfter == 0 {
		return DefaultStableAfter
	}
	return c.StableAfter
}

// DowningInput is what the resolver decides from: this node's view of the cluster.
type DowningInput struct {
	// Self is this node.
	Self UniqueAddress
	// Members is every member that is not Removed, in any order.
	Members []Member
	// Unreachable holds the members this node sees as unreachable.
	Unreachable []UniqueAddress
	// IndirectlyConnected holds members that this node can reach but that others report
	// unreachable (or that report others unreachable), when the caller knows of any; it
	// may be empty. See Decide for how they are treated.
	IndirectlyConnected []UniqueAddress
}

// Action is the kind of a Decision.
type Action uint8

const (
	// NoAction: nothing to down (no unreachable member, or the state is not stable yet).
	NoAction Action = iota
	// DownUnreachable: this node's side survives and downs the other side.
	DownUnreachable
	// DownReachable: this node's side loses and downs itself, this node included.
	DownReachable
	// DownEveryone: every member is downed, on both sides.
	DownEveryone
	// DownSelf: this node is indirectly connected and downs only itself.
	DownSelf
)

var actionNames = [...]string{"no-action", "down-unreachable", "down-reachable", "down-all", "down-self"}

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
	// Down lists the members to down, ordered by address; it never holds a member that
	// is already Down. It holds Self when this node's side loses.
	Down []UniqueAddress
}

// Downs reports whether the decision downs the member.
func (d Decision) Downs(u UniqueAddress) bool {
	return slices.Contains(d.Down, u)
}

// Decide returns the split-brain decision for the input, by the strategy in cfg. It is
// a pure function: every node that sees the same members and the same unreachable set
// decides the same. It does not look at time; Resolver adds the stable-after wait.
//
// Rules:
//   - Members already Down (and Removed ones) are ignored. With no unreachable member
//     left, the decision is NoAction: the resolver never downs anything on a timer
//     alone.
//   - Sides are counted over members that are Up, Leaving or Exiting (with Role when it
//     is set). Joining members are not counted but are downed with their side.
//   - Indirectly connected members, a case a gossip failure detector like serf's mostly
//     hides, are handled simply: they are treated as unreachable for counting and are
//     downed whichever side wins. If this node is itself indirectly connected it downs
//     only itself (DownSelf), and the others down it too.
func Decide(cfg DowningConfig, in DowningInput) Decision {
	live := make(map[UniqueAddress]Member, len(in.Members))
	for _, m := range in.Members {
		if m.Status != Down && m.Status != Removed {
			live[m.Unique] = m
		}
	}
	unreachable := make(map[UniqueAddress]bool)
	for _, u := range in.Unreachable {
		if _, ok := live[u]; ok && u != in.Self {
			unreachable[u] = true
		}
	}
	for _, u := range in.IndirectlyConnected {
		if _, ok := live[u]; !ok {
			continue
		}
		if u == in.Self {
			return Decision{Action: DownSelf, Down: []UniqueAddress{in.Self}}
		}
		unreachable[u] = true
	}
	if len(unreachable) == 0 {
		return Decision{Action: NoAction}
	}

	var counted []Member
	reachableCount, unreachableCount := 0, 0
	for _, m := range live {
		if m.Status < Up || !m.HasRole(cfg.Role) {
			continue
		}
		counted = append(counted, m)
		if unreachable[m.Unique] {
			unreachableCount++
		} else {
			reachableCount++
		}
	}

	var action Action
	switch cfg.Strategy {
	case DownAll:
		action = DownEveryone
	case StaticQuorum:
		switch {
		case len(counted) > 2*cfg.QuorumSize-1:
			action = DownEveryone
		case reachableCount >= cfg.QuorumSize:
			action = DownUnreachable
		default:
			action = DownReachable
		}
	case KeepOldest:
		action = keepOldest(cfg, counted, unreachable, reachableCount, unreachableCount, live)
	default:
		action = keepMajority(counted, unreachable, reachableCount, unreachableCount, live)
	}

	// A losing side downs itself and the indirectly connected members; members on the
	// other side are left to that side's own decision.
	var down []UniqueAddress
	for u := range live {
		var d bool
		switch action {
		case DownEveryone:
			d = true
		case DownUnreachable:
			d = unreachable[u]
		case DownReachable:
			d = !unreachable[u] || slices.Contains(in.IndirectlyConnected, u)
		}
		if d {
			down = append(down, u)
		}
	}
	slices.SortFunc(down, CompareAddress)
	return Decision{Action: action, Down: down}
}

// keepMajority decides by side size, and an equal split by the lowest address.
func keepMajority(counted []Member, unreachable map[UniqueAddress]bool, r, u int,
	live map[UniqueAddress]Member) Action {
	switch {
	case r > u:
		return DownUnreachable
	case r < u:
		return DownReachable
	}
	// Equal split (or nothing counted at all): the side with the lowest address wins.
	pool := counted
	if len(pool) == 0 {
		for _, m := range live {
			pool = append(pool, m)
		}
	}
	lowest := pool[0].Unique
	for _, m := range pool[1:] {
		if CompareAddress(m.Unique, lowest) < 0 {
			lowest = m.Unique
		}
	}
	if unreachable[lowest] {
		return DownReachable
	}
	return DownUnreachable
}

// keepOldest keeps the side of the oldest counted member, with the down-if-alone rule.
func keepOldest(cfg DowningConfig, counted []Member, unreachable map[UniqueAddress]bool, r, u int,
	live map[UniqueAddress]Member) Action {
	oldest, ok := Oldest(counted, "")
	if !ok && len(counted) > 0 { // only Exiting members: the oldest of those
		oldest, ok = counted[0], true
		for _, m := range counted[1:] {
			if compareAge(m, oldest) < 0 {
				oldest = m
			}
		}
	}
	if !ok {
		return keepMajority(counted, unreachable, r, u, live)
	}
	alone := !cfg.KeepOldestIfAlone
	if !unreachable[oldest.Unique] {
		if alone && r == 1 && u >= 1 {
			return DownReachable
		}
		return DownUnreachable
	}
	if alone && u == 1 && r >= 1 {
		return DownUnreachable
	}
	return DownReachable
}

// StableTracker tells whether membership and reachability have been unchanged for the
// stable-after period. It reads no clock: the caller passes the times.
type StableTracker struct {
	stableAfter time.Duration
	last        time.Time
}

// NewStableTracker returns a tracker whose last change is at start: it is stable from
// start plus stableAfter on, unless Changed is called.
func NewStableTracker(stableAfter time.Duration, start time.Time) *StableTracker {
	return &StableTracker{stableAfter: stableAfter, last: start}
}

// Changed records a change of membership or reachability at time at. A time earlier
// than the last recorded change is ignored.
func (t *StableTracker) Changed(at time.Time) {
	if at.After(t.last) {
		t.last = at
	}
}

// Stable reports whether nothing has changed for at least the stable-after period
// before now.
func (t *StableTracker) Stable(now time.Time) bool {
	return t.Remaining(now) == 0
}

// Remaining returns how long from now until the state counts as stable, or 0 when it
// already does; the actor around the resolver sets its timer with it.
func (t *StableTracker) Remaining(now time.Time) time.Duration {
	d := t.last.Add(t.stableAfter).Sub(now)
	if d < 0 {
		return 0
	}
	return d
}

// Resolver is the split-brain resolver's state: the configuration and a StableTracker.
// Like Membership it is pure (times are passed in) and not safe for concurrent use.
type Resolver struct {
	cfg     DowningConfig
	tracker *StableTracker
}

// NewResolver returns a resolver that treats start as the last change, or an error for
// an invalid configuration.
func NewResolver(cfg DowningConfig, start time.Time) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Resolver{cfg: cfg, tracker: NewStableTracker(cfg.stableAfter(), start)}, nil
}

// Changed records a change of membership or reachability (any event from Membership)
// at time at, which restarts the stable-after wait.
func (r *Resolver) Changed(at time.Time) { r.tracker.Changed(at) }

// Remaining returns how long from now until the state counts as stable (0 if it does).
func (r *Resolver) Remaining(now time.Time) time.Duration { return r.tracker.Remaining(now) }

// Decide returns NoAction until the state has been stable for the stable-after period,
// and then Decide(cfg, in). The caller applies the decision (Membership.Down for each
// member listed) and feeds the resulting events back through Changed.
func (r *Resolver) Decide(now time.Time, in DowningInput) Decision {
	if !r.tracker.Stable(now) {
		return Decision{Action: NoAction}
	}
	return Decide(r.cfg, in)
}

// DowningInput returns the resolver's input from this membership: self, every member,
// and the unreachable ones.
func (ms *Membership) DowningInput() DowningInput {
	in := DowningInput{Self: ms.self, Members: ms.Members()}
	for _, m := range in.Members {
		if ms.IsUnreachable(m.Unique) {
			in.Unreachable = append(in.Unreachable, m.Unique)
		}
	}
	return in
}
