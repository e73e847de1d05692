package sbr_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
)

// Five members; a and b observe d and e unreachable. Node a waits for stable-after,
// then keep-majority downs the minority.
func Example() {
	var members []member.Member
	for i, addr := range []string{"a:1", "b:1", "c:1", "d:1", "e:1"} {
		members = append(members, member.Member{
			Unique: member.UniqueAddress{Addr: addr, UID: 1}, Status: member.Up, UpNumber: int64(i + 1),
		})
	}
	u := func(i int) member.UniqueAddress { return members[i].Unique }
	in := sbr.Input{Self: u(0), Members: members, Unreachable: []sbr.Record{
		{Observer: u(0), Subject: u(3)}, {Observer: u(0), Subject: u(4)},
		{Observer: u(1), Subject: u(3)}, {Observer: u(1), Subject: u(4)},
	}}
	start := time.Unix(0, 0)
	r, _ := sbr.NewResolver(sbr.Config{StableAfter: 10 * time.Second, DownAllWhenUnstable: 7500 * time.Millisecond}, start)
	r.ReachabilityChanged(start.Add(time.Second))

	step := r.Step(start.Add(2*time.Second), in)
	fmt.Println(step.Decision.Action, "until", step.Next.Sub(start))
	step = r.Step(step.Next, in)
	fmt.Println(step.Decision.Action, step.Decision.Down)
	// Output:
	// no-action until 11s
	// down-unreachable [d:1#1 e:1#1]
}
