package management

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/singleton"
)

// The event types of GET /cluster/events, the names its type filter takes.
const (
	EventMemberJoined          = "member-joined"
	EventMemberUp              = "member-up"
	EventMemberLeft            = "member-left"
	EventMemberExited          = "member-exited"
	EventMemberDowned          = "member-downed"
	EventMemberRemoved         = "member-removed"
	EventRemovalMarginPassed   = "removal-margin-passed"
	EventUnreachableMember     = "unreachable-member"
	EventReachableMember       = "reachable-member"
	EventOldestChanged         = "oldest-changed"
	EventDowningDecision       = "downing-decision"
	EventShardAllocated        = "shard-allocated"
	EventShardHandOffStarted   = "shard-handoff-started"
	EventShardHandOffCompleted = "shard-handoff-completed"
	EventShardHandOffFailed    = "shard-handoff-failed"
	EventSingletonChanged      = "singleton-changed"
)

// EventTypes returns every event type, in the order of the constants.
func EventTypes() []string {
	return []string{
		EventMemberJoined, EventMemberUp, EventMemberLeft, EventMemberExited, EventMemberDowned,
		EventMemberRemoved, EventRemovalMarginPassed, EventUnreachableMember, EventReachableMember,
		EventOldestChanged, EventDowningDecision, EventShardAllocated, EventShardHandOffStarted, EventShardHandOffCompleted,
		EventShardHandOffFailed, EventSingletonChanged,
	}
}

// Event is one event of GET /cluster/events, the data of a server-sent event whose
// event name is Type. Only the fields of its type are set.
type Event struct {
	// Type is one of the Event* constants.
	Type string `json:"type"`
	// Time is when this node saw it.
	Time time.Time `json:"time"`
	// Member is the member a member-* or *-member event (or removal-margin-passed) is
	// about, as it is now.
	Member *MemberView `json:"member,omitempty"`
	// PreviousStatus is the status a removed member had before (member-removed,
	// removal-margin-passed): Exiting after a leave, Down after a downing.
	PreviousStatus string `json:"previousStatus,omitempty"`
	// Role is the role of an oldest-changed event ("" for every member).
	Role string `json:"role,omitempty"`
	// Oldest is the new oldest member of an oldest-changed event ("" when none).
	Oldest string `json:"oldest,omitempty"`
	// Downing is the decision of a downing-decision event.
	Downing *DowningView `json:"downing,omitempty"`
	// Shard is the shard of a shard-* event.
	Shard *ShardEventView `json:"shard,omitempty"`
	// Singleton is the singleton of a singleton-changed event.
	Singleton *SingletonView `json:"singleton,omitempty"`
}

// DowningView is a decision of this node's split-brain resolver
// (cluster.DowningDecision).
type DowningView struct {
	// Strategy is the configured strategy, such as "keep-majority".
	Strategy string `json:"strategy"`
	// Action is the decision: down-unreachable, down-reachable, down-all,
	// down-indirectly-connected or reverse-down-indirectly-connected.
	Action string `json:"action"`
	// Down lists the members downed (addresses with their uid, addr#uid).
	Down []string `json:"down"`
	// Unstable is set when reachability did not settle in time, which downs everyone.
	Unstable bool `json:"unstable,omitempty"`
}

// ShardEventView is a rebalance event of sharding (sharding.ShardEvent).
type ShardEventView struct {
	TypeName string `json:"typeName"`
	Shard    string `json:"shard"`
	// From is the node the shard moves (or moved) away from; "" for a first home.
	From string `json:"from,omitempty"`
	// To is the node a shard was allocated to (shard-allocated).
	To string `json:"to,omitempty"`
	// Rebalance is true when the allocation strategy moved the shard
	// (shard-handoff-started).
	Rebalance bool `json:"rebalance,omitempty"`
	// DurationMs is how long the hand-off took, or the shard was without a home.
	DurationMs float64 `json:"durationMs,omitempty"`
}

func addrString(a actor.Address) string {
	if a == (actor.Address{}) {
		return ""
	}
	return a.String()
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func memberEvent(typ string, m cluster.Member, at time.Time) Event {
	v := memberView(m, 0)
	return Event{Type: typ, Time: at, Member: &v}
}

// clusterEvent turns a cluster event into its Event; ok is false for anything else.
// The members' AgeOrder is left 0: an event carries one member, not the cluster.
func clusterEvent(ev any, at time.Time) (Event, bool) {
	switch e := ev.(type) {
	case cluster.MemberJoined:
		return memberEvent(EventMemberJoined, e.Member, at), true
	case cluster.MemberUp:
		return memberEvent(EventMemberUp, e.Member, at), true
	case cluster.MemberLeft:
		return memberEvent(EventMemberLeft, e.Member, at), true
	case cluster.MemberExited:
		return memberEvent(EventMemberExited, e.Member, at), true
	case cluster.MemberDowned:
		return memberEvent(EventMemberDowned, e.Member, at), true
	case cluster.MemberRemoved:
		out := memberEvent(EventMemberRemoved, e.Member, at)
		out.PreviousStatus = e.PreviousStatus.String()
		return out, true
	case cluster.RemovalMarginPassed:
		out := memberEvent(EventRemovalMarginPassed, e.Member, at)
		out.PreviousStatus = e.PreviousStatus.String()
		return out, true
	case cluster.UnreachableMember:
		return memberEvent(EventUnreachableMember, e.Member, at), true
	case cluster.ReachableMember:
		return memberEvent(EventReachableMember, e.Member, at), true
	case cluster.DowningDecision:
		v := DowningView{Strategy: e.Strategy, Action: e.Action, Down: make([]string, len(e.Down)), Unstable: e.Unstable}
		for i, u := range e.Down {
			v.Down[i] = u.String()
		}
		return Event{Type: EventDowningDecision, Time: at, Downing: &v}, true
	case cluster.OldestChanged:
		out := Event{Type: EventOldestChanged, Time: at, Role: e.Role}
		if e.Oldest != nil {
			out.Oldest = e.Oldest.Unique.Addr
		}
		return out, true
	}
	return Event{}, false
}

// shardEvent turns a sharding rebalance event into its Event; ok is false for anything
// else.
func shardEvent(ev any, at time.Time) (Event, bool) {
	var typ string
	var v ShardEventView
	switch e := ev.(type) {
	case sharding.ShardAllocated:
		typ = EventShardAllocated
		v = ShardEventView{TypeName: e.TypeName, Shard: string(e.Shard), From: addrString(e.From), To: addrString(e.To),
			DurationMs: millis(e.Duration)}
	case sharding.ShardHandOffStarted:
		typ = EventShardHandOffStarted
		v = ShardEventView{TypeName: e.TypeName, Shard: string(e.Shard), From: addrString(e.From), Rebalance: e.Rebalance}
	case sharding.ShardHandOffCompleted:
		typ = EventShardHandOffCompleted
		v = ShardEventView{TypeName: e.TypeName, Shard: string(e.Shard), From: addrString(e.From), DurationMs: millis(e.Duration)}
	case sharding.ShardHandOffFailed:
		typ = EventShardHandOffFailed
		v = ShardEventView{TypeName: e.TypeName, Shard: string(e.Shard), From: addrString(e.From), DurationMs: millis(e.Duration)}
	default:
		return Event{}, false
	}
	return Event{Type: typ, Time: at, Shard: &v}, true
}

// singletonEvent is the singleton-changed event of a manager's new status.
func singletonEvent(st singleton.Status, at time.Time) Event {
	v := singletonView(st)
	return Event{Type: EventSingletonChanged, Time: at, Singleton: &v}
}
