package membership_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/member"
)

// show writes one line per event.
func show(evs []member.Event) {
	for _, ev := range evs {
		switch e := ev.(type) {
		case member.MemberJoined:
			fmt.Println("joined", e.Member.Unique.Addr)
		case member.MemberUp:
			fmt.Println("up", e.Member.Unique.Addr)
		case member.UnreachableMember:
			fmt.Println("unreachable", e.Member.Unique.Addr)
		case member.MemberDowned:
			fmt.Println("downed", e.Member.Unique.Addr)
		case member.MemberRemoved:
			fmt.Println("removed", e.Member.Unique.Addr)
		case member.RemovalMarginPassed:
			fmt.Println("margin passed", e.Member.Unique.Addr)
		case member.OldestChanged:
			fmt.Printf("oldest %q is %s\n", e.Role, e.Oldest.Unique.Addr)
		}
	}
}

// Three nodes form a cluster with min-nr-of-members 3, as node c sees it; then node a
// is downed and removed, and its work may be taken over once the down-removal margin
// has passed.
func Example() {
	node := func(addr string, uid uint64) member.Member {
		tags, _ := membership.EncodeTags(member.Member{
			Unique: member.UniqueAddress{Addr: addr, UID: uid}, Status: member.Joining,
		})
		m, _ := membership.DecodeTags(tags) // what a peer reads from serf
		return m
	}
	self := node("10.0.0.3:2552", 3)
	ms, _ := membership.NewMembership(membership.MembershipConfig{MinNrOfMembers: 3}, self)

	// Node a became Up on its own side (it saw three members first) with its age.
	a := node("10.0.0.1:2552", 1)
	a.Status, a.UpNumber = member.Up, 1_700_000_000_000
	evs, _ := ms.Observe(a) // held: this node sees only two members so far
	show(evs)
	b := node("10.0.0.2:2552", 2)
	evs, _ = ms.Observe(b)
	show(evs)
	b.Status, b.UpNumber = member.Up, 1_700_000_000_200
	evs, _ = ms.Observe(b)
	show(evs)

	// Enough members: this node moves itself Up with an age younger than a's.
	self.Status, self.UpNumber = member.Up, ms.NextUpNumber(1_700_000_000_500)
	evs, _ = ms.Observe(self)
	show(evs)

	// a becomes unreachable and is downed, then removed.
	evs, _ = ms.Unreachable(a.Unique)
	show(evs)
	evs, _ = ms.Down(a.Unique)
	show(evs)
	removed, _ := ms.Remove(a.Unique)
	show(removed)

	margins := membership.NewMargins(20 * time.Second)
	start := time.Unix(0, 0)
	show(margins.Removed(removed[0].(member.MemberRemoved), start))
	show(margins.Due(start.Add(19 * time.Second)))
	show(margins.Due(start.Add(20 * time.Second)))
	// Output:
	// joined 10.0.0.1:2552
	// joined 10.0.0.2:2552
	// up 10.0.0.1:2552
	// oldest "" is 10.0.0.1:2552
	// up 10.0.0.2:2552
	// up 10.0.0.3:2552
	// unreachable 10.0.0.1:2552
	// downed 10.0.0.1:2552
	// oldest "" is 10.0.0.2:2552
	// removed 10.0.0.1:2552
	// margin passed 10.0.0.1:2552
}
