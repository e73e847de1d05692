package cluster_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// show writes one line per event.
func show(evs []cluster.Event) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case cluster.MemberJoined:
			fmt.Println("joined", e.Member.Unique.Addr)
		case cluster.MemberUp:
			fmt.Println("up", e.Member.Unique.Addr)
		case cluster.UnreachableMember:
			fmt.Println("unreachable", e.Member.Unique.Addr)
		case cluster.MemberDowned:
			fmt.Println("downed", e.Member.Unique.Addr)
		case cluster.OldestChanged:
			fmt.Printf("oldest %q is %s\n", e.Role, e.Oldest.Unique.Addr)
		}
	}
}

// Three nodes form a cluster with min-nr-of-members 3, as node c sees it; then node a
// crashes and the split-brain resolver, once the view has been stable, downs it.
func Example() {
	node := func(addr string, uid uint64) cluster.Member {
		tags, _ := cluster.EncodeTags(cluster.Member{
			Unique: cluster.UniqueAddress{Addr: addr, UID: uid}, Status: cluster.Joining,
		})
		m, _ := cluster.DecodeTags(tags) // what a peer reads from serf
		return m
	}
	self := node("10.0.0.3:2552", 3)
	ms, _ := cluster.NewMembership(cluster.MembershipConfig{MinNrOfMembers: 3}, self)

	// Node a became Up on its own side (it saw three members first) with its age.
	a := node("10.0.0.1:2552", 1)
	a.Status, a.UpNumber = cluster.Up, 1_700_000_000_000
	evs, _ := ms.Observe(a) // held: this node sees only two members so far
	show(evs)
	b := node("10.0.0.2:2552", 2)
	evs, _ = ms.Observe(b)
	show(evs)
	b.Status, b.UpNumber = cluster.Up, 1_700_000_000_200
	evs, _ = ms.Observe(b)
	show(evs)

	// Enough members: this node moves itself Up with an age younger than a's.
	self.Status, self.UpNumber = cluster.Up, ms.NextUpNumber(1_700_000_000_500)
	evs, _ = ms.Observe(self)
	show(evs)

	// a crashes.
	start := time.Unix(0, 0)
	resolver, _ := cluster.NewResolver(cluster.DowningConfig{StableAfter: 10 * time.Second}, start)
	evs, _ = ms.Unreachable(a.Unique)
	show(evs)
	resolver.Changed(start.Add(time.Second))
	fmt.Println(resolver.Decide(start.Add(5*time.Second), ms.DowningInput()).Action)
	d := resolver.Decide(start.Add(11*time.Second), ms.DowningInput())
	fmt.Println(d.Action)
	for _, u := range d.Down {
		evs, _ = ms.Down(u)
		show(evs)
	}
	// Output:
	// joined 10.0.0.1:2552
	// joined 10.0.0.2:2552
	// up 10.0.0.1:2552
	// oldest "" is 10.0.0.1:2552
	// up 10.0.0.2:2552
	// up 10.0.0.3:2552
	// unreachable 10.0.0.1:2552
	// no-action
	// down-unreachable
	// downed 10.0.0.1:2552
	// oldest "" is 10.0.0.2:2552
}
