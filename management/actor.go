package management

import (
	"context"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
)

// actorName is the name of the management actor: /system/management.
const actorName = "management"

// leaveRequest asks another member's management actor to make its member leave the
// cluster; UID names the incarnation meant, so that a node restarted on the same
// address does not leave by mistake.
type leaveRequest struct {
	UID uint64
}

// leaveAck answers leaveRequest; Error says why the member refused.
type leaveAck struct {
	Error string
}

func init() {
	wiretypes.MustRegister[leaveRequest]("troupe.management.Leave")
	wiretypes.MustRegister[leaveAck]("troupe.management.LeaveAck")
}

// managementActor feeds the event streams with the cluster's events and sharding's
// rebalance events, and answers leave requests from other members' management
// servers.
type managementActor struct {
	m *Management
}

func (a *managementActor) Receive(ctx actor.Context) {
	now := time.Now()
	switch msg := ctx.Message().(type) {
	case actor.Started:
		actor.Subscribe[sharding.ShardEvent](ctx.System().EventStream(), ctx.Self())
	case actor.Stopped:
		ctx.System().EventStream().Unsubscribe(ctx.Self())
		if c := cluster.Get(ctx.System()); c != nil {
			_ = c.Unsubscribe(ctx.Self())
		}
	case cluster.CurrentClusterState:
		// The state before the first event: GET /cluster/members serves it.
	case leaveRequest:
		a.onLeave(ctx, msg)
	default:
		if ev, ok := clusterEvent(msg, now); ok {
			a.m.hub.publish(ev)
			a.m.watchSingletons() // a singleton started since the last event
			return
		}
		if ev, ok := shardEvent(msg, now); ok {
			a.m.hub.publish(ev)
		}
	}
}

// onLeave makes this member leave the cluster, as the leave route does for its own
// member: coordinated shutdown hands shards and singletons over, leaves and
// terminates the system.
func (a *managementActor) onLeave(ctx actor.Context, msg leaveRequest) {
	c := cluster.Get(ctx.System())
	switch {
	case c == nil:
		_ = ctx.Respond(leaveAck{Error: "the cluster is not started on this node"})
		return
	case c.SelfUniqueAddress().UID != msg.UID:
		_ = ctx.Respond(leaveAck{Error: "the request is for another incarnation of this member"})
		return
	}
	_ = ctx.Respond(leaveAck{})
	a.m.log.Warn("management: this member leaves the cluster at another member's request: running coordinated shutdown",
		zap.Stringer("from", ctx.Sender()))
	sys := ctx.System()
	go func() { _ = sys.Shutdown(context.Background()) }()
}
