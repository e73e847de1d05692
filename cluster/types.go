package cluster

import (
	"fmt"

	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
)

// The member model is package member's: these names are the same types, kept here so
// that a user of the cluster needs one import. Package member documents them in full.

// UniqueAddress identifies one incarnation of a node: Addr, the remote address it is
// reached at (troupe://system@host:port), and UID, the incarnation uid its transport
// drew when it started (never 0). A node restarted on the same address is a new
// incarnation and a new member. String returns "addr#uid"; u.Compare(o) orders two
// identities by host (IP addresses first, as addresses: IPv4 before IPv6; then host
// names, as strings), then port (numerically), then system name, then uid: the order
// of every "lowest address" rule (the equal split, equal ages).
//
// See member.UniqueAddress.
type UniqueAddress = member.UniqueAddress

// MemberStatus is where a member is in its lifecycle: Joining, Up, Leaving, Exiting,
// Down, Removed, in that order. Statuses only move forward, may skip steps, and reach
// Removed only from Exiting or Down. String returns the name.
//
// See member.MemberStatus.
type MemberStatus = member.MemberStatus

// The member statuses; see member.Joining and the others.
const (
	// Joining is a member that has been seen but is not Up yet: it waits for
	// min-nr-of-members, or for its own move to Up to reach this node.
	Joining = member.Joining
	// Up is a full member, with an age.
	Up = member.Up
	// Leaving is a member leaving gracefully; it still serves while the layers above
	// hand its work over.
	Leaving = member.Leaving
	// Exiting is a member that has handed its work over and is about to be removed.
	Exiting = member.Exiting
	// Down is a member declared dead, by the split-brain resolver or by hand; it is
	// removed at once and never comes back.
	Down = member.Down
	// Removed is a member that is gone; its identity never comes back.
	Removed = member.Removed
)

// Member is one node of the cluster as this node sees it. Its fields:
//
//   - Unique UniqueAddress: its identity.
//   - Status MemberStatus: where it is in its lifecycle.
//   - Roles []string: its roles, sorted, without duplicates.
//   - AppVersion string: the application version it runs, as its Config says.
//   - UpNumber int64: its age, chosen once when it becomes Up and never changed; 0
//     before. Lower is older; equal ages are ordered by address.
//
// m.HasRole(role) reports whether it has the role ("" is every member's), and
// m.IsOlderThan(o) compares ages: every node that sees the same members agrees on
// the oldest, where the singleton and the sharding coordinator live.
//
// See member.Member.
type Member = member.Member

// Event is a cluster event, as a subscriber receives it (see Cluster.Subscribe):
// MemberJoined, MemberUp, MemberLeft, MemberExited, MemberDowned, MemberRemoved,
// RemovalMarginPassed, UnreachableMember, ReachableMember or OldestChanged.
//
// See member.Event.
type Event = member.Event

// MemberJoined says a member was seen for the first time, Joining. Field: Member.
//
// See member.MemberJoined.
type MemberJoined = member.MemberJoined

// MemberUp says a member became Up (or was first seen Up); Member.UpNumber is its age.
// Field: Member.
//
// See member.MemberUp.
type MemberUp = member.MemberUp

// MemberLeft says a member is Leaving. Field: Member.
//
// See member.MemberLeft.
type MemberLeft = member.MemberLeft

// MemberExited says a member is Exiting: it has handed its work over. Field: Member.
//
// See member.MemberExited.
type MemberExited = member.MemberExited

// MemberDowned says a member was declared Down. Field: Member.
//
// See member.MemberDowned.
type MemberDowned = member.MemberDowned

// MemberRemoved says a member is gone for good. Fields: Member (status Removed) and
// PreviousStatus, Exiting after a graceful leave and Down otherwise.
//
// A downed member may still be running on the other side of a partition when it is
// removed here: do not start its work elsewhere on this event, wait for
// RemovalMarginPassed.
//
// See member.MemberRemoved.
type MemberRemoved = member.MemberRemoved

// RemovalMarginPassed says a removed member's work may be taken over: it follows
// MemberRemoved at once after a graceful leave, and after the down-removal margin
// (DowningConfig.DownRemovalMargin) when the member was downed, by which time the
// downed member has stopped its cluster services (see the package documentation).
// Fields: Member (status Removed) and PreviousStatus (Exiting or Down).
//
// See member.RemovalMarginPassed.
type RemovalMarginPassed = member.RemovalMarginPassed

// DowningDecision says this node's split-brain resolver decided to down members. It
// goes to this node's subscribers only (the others see the MemberDowned events that
// follow it, here and on every member that learns of the decision). Fields: Strategy,
// the configured strategy's name (keep-majority, ...); Action, the decision:
// down-unreachable (this side survives), down-reachable (this side loses and downs
// itself), down-all, down-indirectly-connected or reverse-down-indirectly-connected;
// Down, the members downed, ordered by address (this node among them when its side
// loses); Unstable, set when reachability did not settle within the stable margin,
// which downs everyone.
//
// See member.DowningDecision.
type DowningDecision = member.DowningDecision

// ReachabilityChanged says the detail behind the unreachable members changed: who
// cannot reach whom (Field: Observations, as Cluster.Observations returns it). It
// comes before the UnreachableMember and ReachableMember events the change causes, and
// also when only the observers of an unreachable member change.
//
// See member.ReachabilityChanged.
type ReachabilityChanged = member.ReachabilityChanged

// Observation is one entry of the reachability table this node knows: Observer cannot
// reach Subject (its heartbeats to it go unanswered, or serf lost it). Fields:
// Observer, Subject.
//
// See member.Observation.
type Observation = member.Observation

// UnreachableMember says a member became unreachable: serf, or an observer's
// heartbeats, lost contact with it. Field: Member.
//
// See member.UnreachableMember.
type UnreachableMember = member.UnreachableMember

// ReachableMember says an unreachable member is reachable again: no observer reports
// it unreachable any more. Field: Member.
//
// See member.ReachableMember.
type ReachableMember = member.ReachableMember

// OldestChanged says the oldest Up or Leaving member changed, overall (Role "") or
// among the members with Role. Fields: Role, and Oldest (nil when there is none).
//
// See member.OldestChanged.
type OldestChanged = member.OldestChanged

// CurrentClusterState is the snapshot a subscriber receives before any event, and what
// Cluster.State returns. Fields:
//
//   - Members []Member: every member that is not Removed, ordered by address.
//   - Unreachable []Member: the members unreachable for some observer (never this
//     node itself), ordered by address.
//   - Oldest *Member: the oldest Up or Leaving member, nil when none.
//   - OldestByRole map[string]Member: the oldest member of each role that has one.
//   - MinMembersMet bool: whether min-nr-of-members (overall and per role) is met.
//   - AwaitingRemovalMargin []Member: members removed after being downed whose
//     down-removal margin has not passed yet; a RemovalMarginPassed event follows for
//     each.
//
// See member.CurrentClusterState.
type CurrentClusterState = member.CurrentClusterState

// Strategy is the split-brain resolver's rule for choosing the side of a partition
// that survives; see the package documentation. String returns the configuration name
// ("keep-majority" and so on). The zero value is KeepMajority.
type Strategy uint8

// The downing strategies, in the order the resolver (internal/sbr) numbers them.
const (
	// KeepMajority keeps the side with more members (of DowningConfig.Role when set);
	// on an equal split, the side holding the member with the lowest address.
	KeepMajority Strategy = iota
	// StaticQuorum keeps a side with at least DowningConfig.QuorumSize members; with
	// more than 2*QuorumSize-1 members everything is downed.
	StaticQuorum
	// KeepOldest keeps the side with the oldest member; a lone oldest is downed
	// instead, unless DowningConfig.KeepOldestIfAlone.
	KeepOldest
	// DownAll downs every member whenever one is unreachable.
	DownAll
	// LeaseMajority keeps the side that acquires DowningConfig.Lease; the minority side
	// tries only after DowningConfig.AcquireLeaseDelayForMinority.
	LeaseMajority
)

// String returns the strategy's configuration name, such as "keep-majority".
func (s Strategy) String() string { return sbr.Strategy(s).String() }

// ParseStrategy returns the strategy with the configuration name: "keep-majority",
// "static-quorum", "keep-oldest", "down-all" or "lease-majority"; "" is KeepMajority.
// An unknown name is an error wrapping ErrInvalidConfig.
func ParseStrategy(name string) (Strategy, error) {
	s, err := sbr.ParseStrategy(name)
	if err != nil {
		return 0, fmt.Errorf("%w: unknown downing strategy %q", ErrInvalidConfig, name)
	}
	return Strategy(s), nil
}
