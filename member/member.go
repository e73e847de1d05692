package member

import (
	"slices"
	"strconv"
)

// UniqueAddress identifies one incarnation of a node: the address it is reached at plus
// the uid it drew when it started. A node restarted on the same address draws a new uid
// and is a new member; the old incarnation never comes back.
type UniqueAddress struct {
	// Addr is where the node is reached: "host:port" or a full troupe address string
	// (troupe://system@host:port). It is compared as described at CompareAddress.
	Addr string
	// UID is the incarnation uid; never 0 for a real node.
	UID uint64
}

// String returns "addr#uid".
func (u UniqueAddress) String() string {
	return u.Addr + "#" + strconv.FormatUint(u.UID, 10)
}

// MemberStatus is where a member is in its lifecycle. Statuses only move forward, in the
// order of the constants: Joining, Up, Leaving, Exiting, Down, Removed (see CanMoveTo).
type MemberStatus uint8

const (
	// Joining is a member that has been seen but is not Up yet: it is waiting for
	// min-nr-of-members, or for its own decision to become Up to reach us.
	Joining MemberStatus = iota + 1
	// Up is a full member; it has an age (UpNumber) from the moment it became Up.
	Up
	// Leaving is a member that asked to leave; it is still serving while the layers above
	// hand its work over.
	Leaving
	// Exiting is a member that has handed its work over and is about to be removed.
	Exiting
	// Down is a member that was declared dead (by the split-brain resolver or by hand);
	// it will be removed and can never come back.
	Down
	// Removed is a member that is gone; its identity can never be a member again.
	Removed
)

var statusNames = [...]string{"Unknown", "Joining", "Up", "Leaving", "Exiting", "Down", "Removed"}

// String returns the status name, such as "Up", or "Unknown" for the zero value and
// values out of range.
func (s MemberStatus) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Unknown"
}

// Valid reports whether s is one of the six statuses.
func (s MemberStatus) Valid() bool { return s >= Joining && s <= Removed }

// CanMoveTo reports whether a member in status s may move to status next. Statuses only
// move forward, and may skip steps (a Joining member may leave before it was Up), with
// one restriction: Removed can only be reached from Exiting or Down, so that a member
// is never dropped without either a graceful exit or a downing decision. Any status but
// Removed may move to Down.
func (s MemberStatus) CanMoveTo(next MemberStatus) bool {
	if !s.Valid() || !next.Valid() || next <= s {
		return false
	}
	if next == Removed {
		return s == Exiting || s == Down
	}
	return true
}

// HasAge reports whether a member in this status takes part in the age ordering: only
// Up and Leaving members do. Joining members have no age yet, Exiting members are
// handing over and are dropped, as Akka's singleton does, and Down or Removed members
// will never serve again.
func (s MemberStatus) HasAge() bool { return s == Up || s == Leaving }

// Member is one node of the cluster as this node sees it.
type Member struct {
	// Unique is the member's identity.
	Unique UniqueAddress
	// Status is the member's lifecycle status.
	Status MemberStatus
	// Roles is the member's set of roles, sorted, without duplicates (see NormalizeRoles).
	Roles []string
	// AppVersion is the application version the member runs, as the user set it; the
	// layers above use it to prefer newer nodes in rolling upgrades.
	AppVersion string
	// UpNumber is the member's age: lower is older. It is 0 until the member becomes Up,
	// and then never changes. The member chooses it itself, without a leader: the
	// larger of its wall clock in milliseconds and one more than the highest UpNumber
	// it sees.
	UpNumber int64
}

// HasRole reports whether the member has the role. Every member has the empty role "",
// which stands for "no role restriction".
func (m Member) HasRole(role string) bool {
	if role == "" {
		return true
	}
	_, found := slices.BinarySearch(m.Roles, role)
	return found
}

// IsOlderThan reports whether m is older than o: a lower UpNumber, and on equal
// UpNumbers the lower address (CompareAddress). A member without an age (UpNumber 0) is
// younger than every member with one. The order is total and the same on every node
// that sees the same members, so all of them agree on the oldest.
func (m Member) IsOlderThan(o Member) bool {
	return CompareAge(m, o) < 0
}

// CompareAge orders members oldest first, as IsOlderThan does: -1 when a is older than
// b, +1 when b is older, 0 when they are the same member. It suits slices.SortFunc.
func CompareAge(a, b Member) int {
	ua, ub := a.UpNumber, b.UpNumber
	switch {
	case ua > 0 && ub <= 0:
		return -1
	case ua <= 0 && ub > 0:
		return 1
	case ua < ub:
		return -1
	case ua > ub:
		return 1
	}
	return CompareAddress(a.Unique, b.Unique)
}

// Clone returns a copy of m that shares no memory with it (its own Roles).
func (m Member) Clone() Member {
	m.Roles = slices.Clone(m.Roles)
	return m
}

// NormalizeRoles returns roles sorted with duplicates removed, in a new slice; nil for
// no roles.
func NormalizeRoles(roles []string) []string {
	if len(roles) == 0 {
		return nil
	}
	out := slices.Clone(roles)
	slices.Sort(out)
	return slices.Compact(out)
}

// SortByAge sorts members oldest first (see IsOlderThan), in place.
func SortByAge(members []Member) {
	slices.SortFunc(members, CompareAge)
}

// Oldest returns the oldest member with the role (every member when role is ""), among
// members whose status HasAge (Up or Leaving); ok is false when there is none.
// Reachability does not matter: an unreachable oldest stays the oldest until it is
// downed or removed, so that a partition alone never moves a singleton.
func Oldest(members []Member, role string) (oldest Member, ok bool) {
	for _, m := range members {
		if !m.Status.HasAge() || !m.HasRole(role) {
			continue
		}
		if !ok || CompareAge(m, oldest) < 0 {
			oldest, ok = m, true
		}
	}
	if ok {
		oldest = oldest.Clone()
	}
	return oldest, ok
}

// OldestByRole returns, for each role any of the members has, the oldest member with
// that role (see Oldest). Roles whose members are all without age are left out.
func OldestByRole(members []Member) map[string]Member {
	out := make(map[string]Member)
	for _, m := range members {
		if !m.Status.HasAge() {
			continue
		}
		for _, r := range m.Roles {
			if cur, ok := out[r]; !ok || CompareAge(m, cur) < 0 {
				out[r] = m
			}
		}
	}
	for r, m := range out {
		out[r] = m.Clone()
	}
	return out
}
