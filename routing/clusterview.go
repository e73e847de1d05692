package routing

import (
	"slices"

	"github.com/troupe-go/troupe/member"
)

// clusterView is the pure part of a cluster-aware group: from the cluster's state and
// events it keeps the members a routee may live on (Up, reachable, with the role), in
// address order. It does no I/O.
type clusterView struct {
	role        string
	self        member.UniqueAddress
	allowLocal  bool
	members     map[member.UniqueAddress]member.Member
	unreachable map[member.UniqueAddress]bool
}

func newClusterView(role string, self member.UniqueAddress, allowLocal bool) *clusterView {
	return &clusterView{
		role: role, self: self, allowLocal: allowLocal,
		members:     map[member.UniqueAddress]member.Member{},
		unreachable: map[member.UniqueAddress]bool{},
	}
}

// reset replaces the view with a state snapshot.
func (v *clusterView) reset(s member.CurrentClusterState) {
	clear(v.members)
	clear(v.unreachable)
	for _, m := range s.Members {
		v.members[m.Unique] = m
	}
	for _, m := range s.Unreachable {
		v.unreachable[m.Unique] = true
	}
}

// apply takes one cluster event; it reports whether the view may have changed.
func (v *clusterView) apply(ev any) bool {
	switch e := ev.(type) {
	case member.CurrentClusterState:
		v.reset(e)
	case member.MemberJoined:
		v.members[e.Member.Unique] = e.Member
	case member.MemberUp:
		v.members[e.Member.Unique] = e.Member
	case member.MemberLeft:
		v.members[e.Member.Unique] = e.Member
	case member.MemberExited:
		v.members[e.Member.Unique] = e.Member
	case member.MemberDowned:
		v.members[e.Member.Unique] = e.Member
	case member.MemberRemoved:
		delete(v.members, e.Member.Unique)
		delete(v.unreachable, e.Member.Unique)
	case member.UnreachableMember:
		v.unreachable[e.Member.Unique] = true
	case member.ReachableMember:
		delete(v.unreachable, e.Member.Unique)
	default:
		return false
	}
	return true
}

// available returns the members that should hold a routee, in address order.
func (v *clusterView) available() []member.UniqueAddress {
	var out []member.UniqueAddress
	for u, m := range v.members {
		if m.Status != member.Up || v.unreachable[u] {
			continue
		}
		if v.role != "" && !m.HasRole(v.role) {
			continue
		}
		if !v.allowLocal && u == v.self {
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, member.CompareAddress)
	return out
}
