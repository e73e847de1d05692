package nodeproto

// Kinds of lines (Line.Kind).
const (
	KindNode       = "node"
	KindState      = "state"
	KindEvent      = "event"
	KindUp         = "up"
	KindDowned     = "downed"
	KindStopped    = "stopped"
	KindTerminated = "terminated"
	KindError      = "error"
)

// Events (Line.Event of a KindEvent line), one per cluster event type.
const (
	EventJoined       = "joined"        // cluster.MemberJoined
	EventUp           = "up"            // cluster.MemberUp
	EventLeaving      = "leaving"       // cluster.MemberLeft
	EventExiting      = "exiting"       // cluster.MemberExited
	EventDowned       = "downed"        // cluster.MemberDowned
	EventRemoved      = "removed"       // cluster.MemberRemoved (Previous: the status before)
	EventMarginPassed = "margin-passed" // cluster.RemovalMarginPassed (Previous: the status before removal)
	EventUnreachable  = "unreachable"   // cluster.UnreachableMember
	EventReachable    = "reachable"     // cluster.ReachableMember
	EventOldest       = "oldest"        // cluster.OldestChanged (Role; Member nil when none)
)

// Stop reasons (Line.Reason of a KindStopped line).
const (
	ReasonDowned = "downed" // this member was downed
	ReasonLeft   = "left"   // it left gracefully (or shut down)
)

// Member is a member as a line describes it.
type Member struct {
	// Addr is its remote address (troupe://system@host:port) and UID its incarnation.
	Addr string `json:"addr"`
	UID  uint64 `json:"uid"`
	// HostPort is the host:port of Addr: how the lines of a test name members.
	HostPort string `json:"hostPort"`
	// Status is its status name ("Up") as the writing node sees it.
	Status string `json:"status"`
	// Age is its UpNumber, 0 before it is Up.
	Age int64 `json:"age,omitempty"`
}

// Line is one line of the node program's output.
type Line struct {
	// Time is when the line was written, in Unix nanoseconds of the machine's wall
	// clock.
	Time int64 `json:"t"`
	// Kind says what the line reports.
	Kind string `json:"kind"`

	// Self is the writing node (KindNode lines only).
	Self *Member `json:"self,omitempty"`
	// Gossip is the node's gossip address, to give other nodes as a seed (KindNode).
	Gossip string `json:"gossip,omitempty"`

	// Event names the event of a KindEvent line, Member is the member it is about,
	// Previous the status before (EventRemoved, EventMarginPassed), Role the role of an
	// EventOldest ("" for all members).
	Event    string  `json:"event,omitempty"`
	Member   *Member `json:"member,omitempty"`
	Previous string  `json:"previous,omitempty"`
	Role     string  `json:"role,omitempty"`

	// Members and Unreachable are the state of a KindState line.
	Members     []Member `json:"members,omitempty"`
	Unreachable []Member `json:"unreachable,omitempty"`

	// Reason says why the services stopped (KindStopped), or what failed (KindError).
	Reason string `json:"reason,omitempty"`
}
