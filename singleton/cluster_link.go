package singleton

import (
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
)

// How the manager and the proxy see the cluster: the cluster node of their system,
// and its events translated into the cores' events.

// clusterOf returns sys's cluster node, or an error wrapping ErrInvalidConfig when
// the cluster is not started.
func clusterOf(sys *actor.System) (*cluster.Cluster, error) {
	if c := cluster.Get(sys); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w: the cluster is not started in system %q: call cluster.Start first",
		ErrInvalidConfig, sys.Name())
}

// removalMargin returns the down-removal margin of sys's cluster node, which bounds
// the hand-over retries; 0 when it cannot be known.
func removalMargin(sys *actor.System) time.Duration {
	if c := cluster.Get(sys); c != nil {
		return c.DownRemovalMargin()
	}
	return 0
}

// watchCluster tells self clusterDone when c stops (this member left the cluster, was
// downed, or its system shut down), unless stopped is closed first.
func watchCluster(self actor.Ref, c *cluster.Cluster, stopped <-chan struct{}) {
	done := c.Stopped()
	go func() {
		select {
		case <-done:
			_ = self.Tell(clusterDone{})
		case <-stopped:
		}
	}()
}

// clusterEvent wraps a cluster event (or the initial CurrentClusterState) on its way
// from the subscription adapter to the manager or proxy, so that a user message of a
// cluster event's type is never taken for one.
type clusterEvent struct{ ev any }

// SuppressDeadLetterLog: the adapter passes events on until it stops, and the manager
// or proxy, its parent, may have stopped first (at the end of a shutdown): an
// expected dead letter, as the cluster events themselves are.
func (clusterEvent) SuppressDeadLetterLog() {}

// subscribe spawns a child of the running actor that subscribes to c's events and
// passes each on to its parent as a clusterEvent.
func subscribe(ctx actor.Context, c *cluster.Cluster) error {
	parent := ctx.Self()
	adapter, err := ctx.Spawn(actor.PropsFunc(func(ac actor.Context) {
		switch m := ac.Message().(type) {
		case actor.Started, actor.Stopping, actor.Stopped, actor.Restarting:
		default:
			_ = parent.Tell(clusterEvent{ev: m})
		}
	}), "")
	if err != nil {
		return err
	}
	c.Subscribe(adapter)
	return nil
}

// coreEvents translates a cluster event into the cores' events, for the member self.
//
// The cores act on each event as it comes, so the members of the initial snapshot are
// fed oldest first, and this member last: a manager that starts on a member already
// Up must know every older member before it sees itself Up, or it would take itself
// for the oldest; a proxy then turns to the oldest at once. The members removed after
// a downing whose margin has not passed yet follow, as Down and then removed, so that
// the manager waits for their RemovalMarginPassed before it takes over.
func coreEvents(ev any, self cluster.UniqueAddress) []core.Event {
	switch e := ev.(type) {
	case cluster.CurrentClusterState:
		ms := slices.Clone(e.Members)
		slices.SortStableFunc(ms, func(a, b cluster.Member) int {
			switch {
			case a.Unique == self:
				return 1
			case b.Unique == self:
				return -1
			case a.IsOlderThan(b):
				return -1
			case b.IsOlderThan(a):
				return 1
			}
			return 0
		})
		out := make([]core.Event, 0, len(ms)+2*len(e.AwaitingRemovalMargin))
		for _, m := range e.AwaitingRemovalMargin {
			cm := coreMember(m)
			cm.Status = cluster.Down
			out = append(out, core.MemberChanged{Member: cm}, core.MemberRemoved{Node: m.Unique, Downed: true})
		}
		for _, m := range ms {
			out = append(out, core.MemberChanged{Member: coreMember(m)})
		}
		return out
	case cluster.MemberJoined:
		return one(e.Member)
	case cluster.MemberUp:
		return one(e.Member)
	case cluster.MemberLeft:
		return one(e.Member)
	case cluster.MemberExited:
		return one(e.Member)
	case cluster.MemberDowned:
		return one(e.Member)
	case cluster.MemberRemoved:
		return []core.Event{core.MemberRemoved{Node: e.Member.Unique, Downed: e.PreviousStatus == cluster.Down}}
	case cluster.RemovalMarginPassed:
		if e.PreviousStatus != cluster.Down {
			return nil // a member that left counts as gone at its removal
		}
		return []core.Event{core.RemovalMarginPassed{Node: e.Member.Unique}}
	}
	return nil
}

func one(m cluster.Member) []core.Event {
	return []core.Event{core.MemberChanged{Member: coreMember(m)}}
}

func coreMember(m cluster.Member) core.Member {
	return core.Member{Node: m.Unique, Status: m.Status, UpNumber: m.UpNumber, Roles: slices.Clone(m.Roles)}
}

// selfMember returns this node's member as c sees it now.
func selfMember(c *cluster.Cluster) (cluster.Member, bool) {
	self := c.SelfUniqueAddress()
	for _, m := range c.State().Members {
		if m.Unique == self {
			return m, true
		}
	}
	return cluster.Member{}, false
}
