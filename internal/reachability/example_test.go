package reachability_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/member"
)

// Node a monitors b; b stops answering, a records the observation in its row, and node
// c learns it by merging a's gossiped rows.
func Example() {
	a := member.UniqueAddress{Addr: "a:1", UID: 1}
	b := member.UniqueAddress{Addr: "b:1", UID: 1}
	c := member.UniqueAddress{Addr: "c:1", UID: 1}
	mon, _ := reachability.NewMonitor(reachability.MonitorConfig{
		Interval: time.Second, AcceptablePause: 3 * time.Second, Threshold: 8,
		MinStdDeviation: 100 * time.Millisecond, ExpectedFirst: time.Second, Monitors: 5, MaxSamples: 200,
	}, a)
	start := time.Unix(0, 0)
	mon.SetTargets(reachability.Ring(a, []member.UniqueAddress{b}, func(member.UniqueAddress) bool { return false }, 5), start)
	for i := range 10 {
		sent := start.Add(time.Duration(i) * time.Second)
		mon.Response(b, sent, sent.Add(2*time.Millisecond))
	}
	at, _ := mon.NextCheck()
	down, _ := mon.Check(at)
	fmt.Println("unreachable after", at.Sub(start.Add(9*time.Second)).Round(100*time.Millisecond), down)

	table := reachability.NewTable(a)
	table.SetOwn(mon.Unreachable())
	other := reachability.NewTable(c)
	other.Merge(table.Rows(), func(member.UniqueAddress) bool { return true }, func(member.UniqueAddress) bool { return false })
	fmt.Println(other.Records(func(member.UniqueAddress) bool { return true }))
	// Output:
	// unreachable after 4.6s [b:1#1]
	// [{a:1#1 b:1#1}]
}
