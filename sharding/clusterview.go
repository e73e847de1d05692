package sharding

import (
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/member"
)

// The sharding actors follow the cluster through its events: which members run (and
// with which roles and app versions), which are unreachable, and which one is the oldest
// (where the coordinator runs). A system without a cluster is a cluster of one.

// clusterFor finds the cluster node of sys (cluster.Get), or nil when the system runs
// without one.
func clusterFor(sys *actor.System) *cluster.Cluster { return cluster.Get(sys) }

// memberView is one actor's picture of the cluster, built from cluster events.
//
// It keeps one incarnation per address: while a restarted node's new incarnation joins
// and its old one is downed and removed, the events of both arrive, and the view keeps
// the one still in the cluster (see put).
type memberView struct {
	members     map[string]cluster.Member // by address (UniqueAddress.Addr)
	unreachable map[string]uint64         // address -> the UID of the incarnation unreachable there
}

func newMemberView() *memberView {
	return &memberView{members: map[string]cluster.Member{}, unreachable: map[string]uint64{}}
}

// soloView is the view of a system without a cluster: itself, Up.
func soloView(sys *actor.System) *memberView {
	v := newMemberView()
	addr := sys.Address().String()
	v.members[addr] = cluster.Member{Unique: cluster.UniqueAddress{Addr: addr, UID: 1}, Status: cluster.Up, UpNumber: 1}
	return v
}

// apply takes a cluster event (or the initial state) and reports whether it was one.
func (v *memberView) apply(ev any) bool {
	switch e := ev.(type) {
	case cluster.CurrentClusterState:
		clear(v.members)
		clear(v.unreachable)
		for _, m := range e.Members {
			v.members[m.Unique.Addr] = m
		}
		for _, m := range e.Unreachable {
			v.unreachable[m.Unique.Addr] = m.Unique.UID
		}
	case cluster.MemberJoined:
		v.put(e.Member)
	case cluster.MemberUp:
		v.put(e.Member)
	case cluster.MemberLeft:
		v.put(e.Member)
	case cluster.MemberExited:
		v.put(e.Member)
	case cluster.MemberDowned:
		v.put(e.Member)
	case cluster.MemberRemoved:
		addr := e.Member.Unique.Addr
		if cur, ok := v.members[addr]; ok && cur.Unique == e.Member.Unique {
			delete(v.members, addr)
		}
		if v.unreachable[addr] == e.Member.Unique.UID {
			delete(v.unreachable, addr)
		}
	case cluster.UnreachableMember:
		v.unreachable[e.Member.Unique.Addr] = e.Member.Unique.UID
		v.put(e.Member)
	case cluster.ReachableMember:
		if v.unreachable[e.Member.Unique.Addr] == e.Member.Unique.UID {
			delete(v.unreachable, e.Member.Unique.Addr)
		}
		v.put(e.Member)
	case cluster.OldestChanged, cluster.RemovalMarginPassed:
	default:
		// Any other cluster event is still the cluster's, never a user's message.
		_, ok := ev.(cluster.Event)
		return ok
	}
	return true
}

// put records m, unless another incarnation at its address has the better claim: one
// still in the cluster beats one that is downed or removed (the old incarnation's news
// arrives late, or the new incarnation's Up comes after the old one was downed); of two
// still in the cluster the one further along stays (a new incarnation joining while
// the old one is still up waits for its own Up), and of two Up the younger (the new
// incarnation: the old one's reachability news may come after the new one's Up).
func (v *memberView) put(m cluster.Member) {
	cur, ok := v.members[m.Unique.Addr]
	if ok && cur.Unique.UID != m.Unique.UID {
		mGone, curGone := gone(m.Status), gone(cur.Status)
		switch {
		case mGone && !curGone:
			return
		case !mGone && !curGone && (m.Status < cur.Status || m.Status == cur.Status && m.UpNumber < cur.UpNumber):
			return
		}
	}
	v.members[m.Unique.Addr] = m
}

// gone reports whether a member with status s has left the cluster for good or is
// about to be removed without handing anything over.
func gone(s cluster.MemberStatus) bool { return s == cluster.Down || s == cluster.Removed }

// status returns the status of the member at a node address (0 when unknown).
func (v *memberView) status(addr string) cluster.MemberStatus {
	return v.members[addr].Status
}

// byAge returns the members with the role that have an age, oldest first.
func (v *memberView) byAge(role string) []cluster.Member {
	var out []cluster.Member
	for _, m := range v.members {
		if m.UpNumber > 0 && m.HasRole(role) && m.Status != cluster.Removed && m.Status != cluster.Down {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, member.CompareAge)
	return out
}

// coordinatorNodes returns the node addresses where the coordinator may run: the oldest
// Up member with the role, and the older members that are Leaving or Exiting (the
// coordinator may still be there while it moves), oldest first.
func (v *memberView) coordinatorNodes(role string) []string {
	var out []string
	for _, m := range v.byAge(role) {
		switch m.Status {
		case cluster.Leaving, cluster.Exiting:
			out = append(out, m.Unique.Addr)
		case cluster.Up:
			return append(out, m.Unique.Addr)
		}
	}
	return out
}

// oldest returns the address of the oldest Up or Leaving member with the role, or "".
func (v *memberView) oldest(role string) string {
	for _, m := range v.byAge(role) {
		if m.Status == cluster.Up || m.Status == cluster.Leaving {
			return m.Unique.Addr
		}
	}
	return ""
}

// nodeInfos describes the members with the role to an allocation strategy, in address
// order (cluster.UniqueAddress.Compare).
func (v *memberView) nodeInfos(role string) []NodeInfo {
	var out []NodeInfo
	for addr, m := range v.members {
		if !m.HasRole(role) {
			continue
		}
		out = append(out, NodeInfo{
			Address:     m.Unique,
			Status:      m.Status,
			AppVersion:  m.AppVersion,
			UpNumber:    m.UpNumber,
			Unreachable: v.unreachable[addr] == m.Unique.UID,
		})
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return a.Address.Compare(b.Address) })
	return out
}

// unsubscribe ends ref's cluster events, unless the cluster node has stopped already.
func unsubscribe(sys *actor.System, ref actor.Ref) {
	c := clusterFor(sys)
	if c == nil {
		return
	}
	select {
	case <-c.Stopped():
	default:
		c.Unsubscribe(ref)
	}
}

// RemovalMargin is how long the coordinator waits, after a region's node was removed
// from the cluster without handing its shards off (it was downed, or crashed), before
// it gives that region's shards new homes: the time the other side of a partition
// needs to have stopped them. It is the cluster's down-removal margin (zero without a
// cluster).
func removalMargin(sys *actor.System) time.Duration {
	if c := cluster.Get(sys); c != nil {
		return c.DownRemovalMargin()
	}
	return 0
}
