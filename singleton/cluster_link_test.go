package singleton

import (
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
)

// restartOrders are the orders in which a member hears of a node that restarts at once
// on the same address (the old incarnation Up, the new one joining and coming Up, the
// old one downed, removed, and its margin passed): as this cluster publishes them (a
// new incarnation downs the old one, which is removed at once), after a slower restart,
// and with the new incarnation's news before the old one's, the orders
// sharding's cluster view is tested with. Each ends with the old incarnation's margin.
func restartOrders(old, neu cluster.Member) map[string][]any {
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
	margin := cluster.RemovalMarginPassed{Member: with(old, cluster.Removed), PreviousStatus: cluster.Down}
	return map[string][]any{
		"the new one joins and downs the old one":      {oldDowned, newJoined, oldRemoved, newUp, margin},
		"the new one is admitted Up":                   {oldDowned, newUp, oldRemoved, margin},
		"the margin passes before the new one is Up":   {oldDowned, newJoined, oldRemoved, margin, newUp},
		"the old one is removed before the new one":    {oldUnreachable, oldDowned, oldRemoved, newJoined, newUp, margin},
		"the new one Up after the old one is removed":  {newJoined, oldUnreachable, oldDowned, oldRemoved, newUp, margin},
		"the new one Up while the old one is down":     {newJoined, oldUnreachable, oldDowned, newUp, oldRemoved, margin},
		"the new one Up before the old one is downed":  {newJoined, oldUnreachable, newUp, oldDowned, oldRemoved, margin},
		"the old one's news after the new one's":       {newJoined, newUp, oldUnreachable, oldDowned, oldRemoved, margin},
		"the old one removed after the new one's news": {newJoined, newUp, oldDowned, oldUnreachable, oldRemoved, margin},
	}
}

// restartMembers returns three members a (oldest), b and c with the roles given, the
// restarted incarnation of member i (same address, new uid, youngest) and the
// snapshot every member had before.
func restartMembers(i int, roles [3][]string) (ms [3]cluster.Member, neu cluster.Member, st cluster.CurrentClusterState) {
	for j := range ms {
		ms[j] = cluster.Member{
			Unique: cluster.UniqueAddress{Addr: fmt.Sprintf("troupe://sys@10.0.0.%d:2552", j+1), UID: uint64(10 + j)},
			Status: cluster.Up, UpNumber: int64(j + 1), Roles: roles[j],
		}
	}
	neu = ms[i]
	neu.Unique.UID = 99
	neu.UpNumber = 7
	st = cluster.CurrentClusterState{Members: ms[:]}
	return ms, neu, st
}

// A node restarts at once on the same address, with the cluster's events in every
// order they may come in: the cores keep one member per incarnation, so the singleton
// starts once, only after the old incarnation's margin when it ran there, never
// again while it runs elsewhere, and proxies turn to the member that hosts it.
func TestCoresFollowARestartedNode(t *testing.T) {
	r := []string{"r"}
	for _, sc := range []struct {
		name      string
		restarted int         // the member that restarts
		roles     [3][]string // the members' roles; the singleton's role is "r"
		manager   int         // the member whose manager is watched
		starts    bool        // it starts the singleton after the old incarnation's margin
		target    func(ms [3]cluster.Member, neu cluster.Member) cluster.UniqueAddress
	}{
		{
			name: "the oldest restarts", restarted: 0, roles: [3][]string{r, r, r},
			manager: 1, starts: true,
			target: func(ms [3]cluster.Member, _ cluster.Member) cluster.UniqueAddress { return ms[1].Unique },
		},
		{
			name: "a younger member restarts", restarted: 1, roles: [3][]string{r, r, r},
			manager: 0,
			target:  func(ms [3]cluster.Member, _ cluster.Member) cluster.UniqueAddress { return ms[0].Unique },
		},
		{
			name: "the only member with the role restarts", restarted: 0, roles: [3][]string{r, nil, nil},
			manager: -1,
			target:  func(_ [3]cluster.Member, neu cluster.Member) cluster.UniqueAddress { return neu.Unique },
		},
	} {
		ms, neu, st := restartMembers(sc.restarted, sc.roles)
		for order, events := range restartOrders(ms[sc.restarted], neu) {
			t.Run(sc.name+"/"+order, func(t *testing.T) {
				pself := ms[2].Unique
				proxy, err := core.NewProxyCore(core.ProxyID{Node: pself, Path: "/system/singleton-proxy/p#1"}, core.ProxyConfig{Role: "r"})
				if err != nil {
					t.Fatal(err)
				}
				var mgr *core.ManagerCore
				if sc.manager >= 0 {
					if mgr, err = core.NewManagerCore(ms[sc.manager].Unique, core.ManagerConfig{Role: "r"}, 0); err != nil {
						t.Fatal(err)
					}
				}
				starts, stops := 0, 0
				marginPassed := false
				feed := func(ev any) {
					for _, ce := range coreEvents(ev, pself) {
						proxy.Handle(ce)
					}
					if mgr == nil {
						return
					}
					for _, ce := range coreEvents(ev, ms[sc.manager].Unique) {
						for _, d := range mgr.Handle(ce) {
							switch d.(type) {
							case core.StartChild:
								starts++
								if sc.starts && !marginPassed {
									t.Fatalf("the singleton started before the old incarnation's margin passed, at %T", ev)
								}
							case core.SendTermination:
								stops++
							}
						}
					}
				}
				feed(st)
				before := starts
				for _, ev := range events {
					if _, ok := ev.(cluster.RemovalMarginPassed); ok {
						marginPassed = true
					}
					feed(ev)
				}
				if mgr != nil {
					want := before
					if sc.starts {
						want++
					}
					if starts != want || stops != 0 {
						t.Fatalf("the manager on member %d started the singleton %d times (%d before the restart), stopped it %d times; want %d starts, no stop",
							sc.manager, starts, before, stops, want)
					}
					if s := mgr.Status(); s.State != core.StateOldest && starts > 0 {
						t.Fatalf("the manager that hosts the singleton is in state %v", s.State)
					}
				}
				if got, want := proxy.Status().Target, sc.target(ms, neu); got != want {
					t.Fatalf("the proxy sends to %v, want %v", got, want)
				}
			})
		}
	}
}
