package ddata

import (
	"fmt"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit"
)

// A node restarts at once on the same address, and the cluster's events about its two
// incarnations come in every order they may: as this cluster publishes them (the new
// incarnation downs the old one, which is removed at once), after a slower restart, and
// with the new incarnation's news before the old one's. The replicas that reads and
// writes count (the peers) never include a downed incarnation or two incarnations of
// one address, so a majority is never counted over a dead incarnation; at the end the
// new incarnation counts, reachable.
func TestReplicaSetFollowsARestartedNode(t *testing.T) {
	member := func(i int, uid uint64, s cluster.MemberStatus, up int64) cluster.Member {
		return cluster.Member{Unique: cluster.UniqueAddress{Addr: fmt.Sprintf("troupe://sys@10.0.0.%d:2552", i), UID: uid},
			Status: s, UpNumber: up}
	}
	self, other := member(1, 11, cluster.Up, 1), member(2, 22, cluster.Up, 2)
	old, neu := member(3, 33, cluster.Up, 3), member(3, 99, cluster.Up, 7)
	with := func(m cluster.Member, s cluster.MemberStatus) cluster.Member {
		m.Status = s
		return m
	}
	newJoined := cluster.MemberJoined{Member: with(neu, cluster.Joining)}
	newJoined.Member.UpNumber = 0
	newUp := cluster.MemberUp{Member: neu}
	oldUnreachable := cluster.UnreachableMember{Member: old}
	oldDowned := cluster.MemberDowned{Member: with(old, cluster.Down)}
	oldRemoved := cluster.MemberRemoved{Member: with(old, cluster.Removed), PreviousStatus: cluster.Down}
	for order, events := range map[string][]any{
		"the new one joins and downs the old one":      {oldDowned, newJoined, oldRemoved, newUp},
		"the new one is admitted Up":                   {oldDowned, newUp, oldRemoved},
		"the old one is removed before the new one":    {oldUnreachable, oldDowned, oldRemoved, newJoined, newUp},
		"the new one Up after the old one is removed":  {newJoined, oldUnreachable, oldDowned, oldRemoved, newUp},
		"the new one Up while the old one is down":     {newJoined, oldUnreachable, oldDowned, newUp, oldRemoved},
		"the new one Up before the old one is downed":  {newJoined, oldUnreachable, newUp, oldDowned, oldRemoved},
		"the old one's news after the new one's":       {newJoined, newUp, oldUnreachable, oldDowned, oldRemoved},
		"the old one removed after the new one's news": {newJoined, newUp, oldDowned, oldUnreachable, oldRemoved},
	} {
		t.Run(order, func(t *testing.T) {
			h := &Replicator{sys: testkit.NewSystem(t), self: self.Unique, cfg: Config{}.withDefaults(),
				reg: testRegistry(t), stopped: make(chan struct{})}
			a := newReplicator(h)
			a.clusterEvent(cluster.CurrentClusterState{Members: []cluster.Member{self, other, old}})
			downed := false
			for _, ev := range events {
				a.clusterEvent(ev)
				if _, ok := ev.(cluster.MemberDowned); ok {
					downed = true
				}
				ps := a.peers()
				var addrs []string
				for _, p := range ps {
					if downed && p.Node == old.Unique {
						t.Fatalf("after %T: the downed incarnation still counts: %+v", ev, ps)
					}
					addrs = append(addrs, p.Node.Addr)
				}
				slices.Sort(addrs)
				if len(slices.Compact(addrs)) != len(ps) {
					t.Fatalf("after %T: two incarnations of one address count: %+v", ev, ps)
				}
			}
			ps := a.peers()
			slices.SortFunc(ps, func(x, y peer) int { return x.Node.Compare(y.Node) })
			want := []peer{{Node: other.Unique, Reachable: true}, {Node: neu.Unique, Reachable: true}}
			slices.SortFunc(want, func(x, y peer) int { return x.Node.Compare(y.Node) })
			if !slices.Equal(ps, want) {
				t.Fatalf("peers %+v, want %+v", ps, want)
			}
		})
	}
}
