package cluster

// Event is a cluster event for subscribers: MemberJoined, MemberUp, MemberLeft,
// MemberExited, MemberDowned, MemberRemoved, UnreachableMember, ReachableMember or
// OldestChanged. Membership returns events in the order they happened; a subscriber is
// first given a CurrentClusterState and then every later event, in that order.
type Event interface {
	clusterEvent()
}

// MemberJoined says a member was seen for the first time, in status Joining.
type MemberJoined struct {
	// Member is the member as it is now.
	Member Member
}

// MemberUp says a member became Up (or was first seen Up). Member.UpNumber is its age.
type MemberUp struct {
	// Member is the member as it is now.
	Member Member
}

// MemberLeft says a member is Leaving.
type MemberLeft struct {
	// Member is the member as it is now.
	Member Member
}

// MemberExited says a member is Exiting: it has handed its work over.
type MemberExited struct {
	// Member is the member as it is now.
	Member Member
}

// MemberDowned says a member was declared Down; it will be removed and never returns.
type MemberDowned struct {
	// Member is the member as it is now.
	Member Member
}

// MemberRemoved says a member is gone for good. Member.Status is Removed.
type MemberRemoved struct {
	// Member is the member with status Removed.
	Member Member
	// PreviousStatus is the status it had before: Exiting after a graceful leave, Down
	// otherwise.
	PreviousStatus MemberStatus
}

// UnreachableMember says the failure detector lost contact with a member.
type UnreachableMember struct {
	// Member is the member as it is now.
	Member Member
}

// ReachableMember says a member that was unreachable is reachable again.
type ReachableMember struct {
	// Member is the member as it is now.
	Member Member
}

// OldestChanged says the oldest member (see Oldest) changed, overall (Role "") or among
// the members with Role.
type OldestChanged struct {
	// Role is the role, or "" for all members.
	Role string
	// Oldest is the new oldest member, or nil when no member (with the role) is Up or
	// Leaving.
	Oldest *Member
}

func (MemberJoined) clusterEvent()      {}
func (MemberUp) clusterEvent()          {}
func (MemberLeft) clusterEvent()        {}
func (MemberExited) clusterEvent()      {}
func (MemberDowned) clusterEvent()      {}
func (MemberRemoved) clusterEvent()     {}
func (UnreachableMember) clusterEvent() {}
func (ReachableMember) clusterEvent()   {}
func (OldestChanged) clusterEvent()     {}

// CurrentClusterState is the snapshot a new subscriber gets before any event.
type CurrentClusterState struct {
	// Members holds every member that is not Removed, ordered by address
	// (CompareAddress).
	Members []Member
	// Unreachable holds the members that are unreachable, ordered by address.
	Unreachable []Member
	// Oldest is the oldest member overall, or nil when no member is Up or Leaving.
	Oldest *Member
	// OldestByRole holds the oldest member of each role that has one.
	OldestByRole map[string]Member
	// MinMembersMet reports whether min-nr-of-members (overall and per role) is met.
	MinMembersMet bool
}
