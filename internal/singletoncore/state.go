package singletoncore

import "github.com/troupe-go/troupe/member"

// State is a manager's state: Akka's singleton manager's states, with a State prefix.
type State uint8

const (
	// StateStart (Akka's Start): this member is not Up yet; the manager waits.
	StateStart State = iota
	// StateYounger (Akka's Younger): another member is the oldest.
	StateYounger
	// StateBecomingOldest (Akka's BecomingOldest): this member is the oldest, but an older member has not yet
	// certified that its singleton stopped for good (HandOverDone) and has not been
	// removed; HandOverToMe is resent every retry interval.
	StateBecomingOldest
	// StateOldest (Akka's Oldest): the singleton runs here (once the lease, if any, is held).
	StateOldest
	// StateWasOldest (Akka's WasOldest): this member is leaving and hosts the singleton still; it asked the new
	// oldest to take over (TakeOverFromMe) and waits for its HandOverToMe.
	StateWasOldest
	// StateHandingOver (Akka's HandingOver): the singleton was sent its termination message; HandOverDone
	// follows when it has terminated.
	StateHandingOver
	// StateStopping (Akka's Stopping): this member was downed (or removed); the manager stops once the
	// singleton has terminated.
	StateStopping
	// StateEnd (Akka's End): the manager handed the singleton over and will never host it again; it
	// passes on what still reaches it and waits for its member's removal.
	StateEnd
)

var stateNames = [...]string{"Start", "Younger", "BecomingOldest", "Oldest", "WasOldest", "HandingOver", "Stopping", "End"}

// String returns the state's name.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// Status is what a manager reports about itself (StateChanged, ManagerCore.Status).
type Status struct {
	// State is the manager's state.
	State State
	// Oldest is the member the manager believes is the oldest (with the role, not
	// counting members that handed over or are leaving); zero when there is none.
	Oldest member.UniqueAddress
	// ChildRunning is true from StartChild until the singleton's termination is fed
	// back (ChildTerminated).
	ChildRunning bool
	// Finished is true when this member, leaving, may leave without losing anything:
	// the singleton has terminated here, what the manager held was passed on, and every
	// proxy that sent to it has detached. It is also true once the manager stopped.
	Finished bool
}

// ProxyStatus is what a proxy reports about itself (ProxyStateChanged,
// ProxyCore.Status).
type ProxyStatus struct {
	// Target is the member whose manager the proxy sends to (or is identifying);
	// zero when no member is a candidate.
	Target member.UniqueAddress
	// Identified is true when Target's manager confirmed that it hosts the singleton:
	// messages go there at once; otherwise they are buffered.
	Identified bool
	// Buffered is the number of messages in the buffer.
	Buffered int
	// Dropped counts the messages dropped because the buffer was full (or absent).
	Dropped uint64
}
