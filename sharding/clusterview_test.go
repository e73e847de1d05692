package sharding

import (
	"testing"

	"github.com/troupe-go/troupe/cluster"
)

// A node that restarts at once: its new incarnation joins while the old one is still a
// member, then the old one is downed and removed, and the new one comes Up; the events
// of the two interleave in every order the cluster may publish them. The view ends
// with the new incarnation Up and reachable at the address, whatever the order.
func TestMemberViewFollowsARestartedNode(t *testing.T) {
	const addr = "troupe://sys@10.0.0.1:2552"
	old := cluster.UniqueAddress{Addr: addr, UID: 11}
	neu := cluster.UniqueAddress{Addr: addr, UID: 22}
	m := func(u cluster.UniqueAddress, s cluster.MemberStatus, up int64) cluster.Member {
		return cluster.Member{Unique: u, Status: s, UpNumber: up}
	}
	oldUp := cluster.MemberUp{Member: m(old, cluster.Up, 1)}
	newJoined := cluster.MemberJoined{Member: m(neu, cluster.Joining, 0)}
	oldUnreachable := cluster.UnreachableMember{Member: m(old, cluster.Up, 1)}
	oldDowned := cluster.MemberDowned{Member: m(old, cluster.Down, 1)}
	newUp := cluster.MemberUp{Member: m(neu, cluster.Up, 5)}
	oldRemoved := cluster.MemberRemoved{Member: m(old, cluster.Removed, 1), PreviousStatus: cluster.Down}
	for _, tc := range []struct {
		name   string
		events []any
	}{
		{"the new one Up after the old one is removed", []any{oldUp, newJoined, oldUnreachable, oldDowned, oldRemoved, newUp}},
		{"the new one Up while the old one is down", []any{oldUp, newJoined, oldUnreachable, oldDowned, newUp, oldRemoved}},
		{"the new one Up before the old one is downed", []any{oldUp, newJoined, oldUnreachable, newUp, oldDowned, oldRemoved}},
		{"the old one's news after the new one's", []any{oldUp, newJoined, newUp, oldUnreachable, oldDowned, oldRemoved}},
		{"with the resolver's news", []any{oldUp, newJoined, oldUnreachable,
			cluster.ReachabilityChanged{Observations: []cluster.Observation{{Observer: neu, Subject: old}}},
			cluster.DowningDecision{Strategy: "keep-majority", Action: "down-unreachable", Down: []cluster.UniqueAddress{old}},
			oldDowned, oldRemoved, newUp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newMemberView()
			for _, ev := range tc.events {
				if !v.apply(ev) {
					t.Fatalf("%T not taken as a cluster event", ev)
				}
			}
			if got := v.members[addr]; got.Unique != neu || got.Status != cluster.Up {
				t.Fatalf("view has %v %v at the address, want the new incarnation Up", got.Unique, got.Status)
			}
			infos := v.nodeInfos("")
			if len(infos) != 1 || infos[0].Unreachable || infos[0].Address != neu {
				t.Fatalf("node infos %+v, want the new incarnation, reachable", infos)
			}
			if v.oldest("") != addr {
				t.Fatalf("oldest %q, want %q", v.oldest(""), addr)
			}
		})
	}
}
