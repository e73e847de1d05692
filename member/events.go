package member

// Event is a cluster event for subscribers: MemberJoined, MemberUp, MemberLeft,
// MemberExited, MemberDowned, MemberRemoved, RemovalMarginPassed, UnreachableMember,
// ReachableMember or OldestChanged. The cluster publishes events in the order they
// happened; a subscriber is first given a CurrentClusterState and then every later
// event, in that order.
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

// RemovalMarginPassed says that a removed member's work may now be taken over: its
// services have stopped. It follows MemberRemoved at once for a member that left
// gracefully (it handed its work over before it was removed), and after the down-removal
// margin for a member that was downed (the margin is the time the downed side needs to
// notice and stop; see cluster.DowningConfig.DownRemovalMargin).
type RemovalMarginPassed struct {
	// Member is the member with status Removed.
	Member Member
	// PreviousStatus is the status it had before it was removed: Exiting or Down.
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

func (MemberJoined) clusterEvent()        {}
func (MemberUp) clusterEvent()            {}
func (MemberLeft) clusterEvent()          {}
func (MemberExited) clusterEvent()        {}
func (MemberDowned) clusterEvent()        {}
func (MemberRemoved) clusterEvent()       {}
func (RemovalMarginPassed) clusterEvent() {}
func (UnreachableMember) clusterEvent()   {}
func (ReachableMember) clusterEvent()     {}
func (OldestChanged) clusterEvent()       {}

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
	// AwaitingRemovalMargin holds the members removed after being downed whose
	// down-removal margin has not passed yet, in the order they were removed; a
	// RemovalMarginPassed event follows for each.
	AwaitingRemovalMargin []Member
}

// The cluster sends its events to subscribers that may stop without unsubscribing;
// such a dead letter is expected, and counted, but not logged.

// SuppressDeadLetterLog marks the event as an expected dead letter (see above).
func (MemberJoined) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (MemberUp) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (MemberLeft) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (MemberExited) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (MemberDowned) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (MemberRemoved) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (RemovalMarginPassed) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (UnreachableMember) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (ReachableMember) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (OldestChanged) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the snapshot as an expected dead letter.
func (CurrentClusterState) SuppressDeadLetterLog() {}

// DowningDecision says this node's split-brain resolver decided to down members (see
// package cluster): the strategy's name, the action's name, the members downed,
// and whether reachability had not settled.
type DowningDecision struct {
	Strategy string
	Action   string
	Down     []UniqueAddress
	Unstable bool
}

// ReachabilityChanged says the reachability table changed: Observations is who
// cannot reach whom now (empty when every member reaches every other).
type ReachabilityChanged struct {
	Observations []Observation
}

// Observation is one entry of the reachability table: Observer cannot reach Subject.
type Observation struct {
	Observer UniqueAddress
	Subject  UniqueAddress
}

func (DowningDecision) clusterEvent()     {}
func (ReachabilityChanged) clusterEvent() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (DowningDecision) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog marks the event as an expected dead letter.
func (ReachabilityChanged) SuppressDeadLetterLog() {}
