package singleton_test

import (
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/singleton"
)

// describe writes one line per decision, leaving out status reports.
func describe(ds []singleton.Decision) {
	for _, d := range ds {
		switch d := d.(type) {
		case singleton.SendToManager:
			fmt.Printf("  send %T to %s\n", d.Message, d.To.Addr)
		case singleton.SendToProxy:
			fmt.Printf("  send %+v to proxy %s\n", d.Message, d.To.Path)
		case singleton.StartTimer:
			fmt.Printf("  start timer %s every %v\n", d.Name, d.Interval)
		case singleton.CancelTimer:
			fmt.Printf("  cancel timer %s\n", d.Name)
		case singleton.Deliver:
			fmt.Printf("  deliver %s\n", d.Envelope.Payload.Data)
		case singleton.StateChanged:
		default:
			fmt.Printf("  %T\n", d)
		}
	}
}

// The manager on member b takes the singleton over from member a, which leaves, and
// delivers a message a proxy sent before the move.
func Example() {
	a := cluster.UniqueAddress{Addr: "10.0.0.1:2552", UID: 1}
	b := cluster.UniqueAddress{Addr: "10.0.0.2:2552", UID: 2}
	m, err := singleton.NewManagerCore(b, singleton.Config{
		Props: actor.PropsFunc(func(actor.Context) {}),
	}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	step := func(what string, ev singleton.Event) {
		fmt.Println(what)
		describe(m.Handle(ev))
	}
	step("a is Up", singleton.MemberChanged{Member: singleton.Member{Node: a, Status: cluster.Up, UpNumber: 1}})
	step("b is Up", singleton.MemberChanged{Member: singleton.Member{Node: b, Status: cluster.Up, UpNumber: 2}})
	fmt.Println("state:", m.Status().State)
	step("a leaves", singleton.TakeOverFromMe{From: a})
	step("a's singleton is still stopping", singleton.HandOverInProgress{From: a})
	proxy := singleton.ProxyID{Node: a, Path: "/user/proxy#7"}
	step("a hands over", singleton.HandOverDone{From: a, Final: true,
		Ordered: []singleton.Envelope{{Proxy: proxy, Seq: 1, Payload: singleton.Payload{Manifest: "m", Data: []byte("hello")}}}})
	fmt.Println("state:", m.Status().State, "running:", m.Status().ChildRunning)
	// Output:
	// a is Up
	// b is Up
	// state: Younger
	// a leaves
	//   send singleton.HandOverToMe to 10.0.0.1:2552
	//   start timer hand-over-retry every 1s
	// a's singleton is still stopping
	//   cancel timer hand-over-retry
	// a hands over
	//   send singleton.HandOverComplete to 10.0.0.1:2552
	//   singleton.StartChild
	//   deliver hello
	// state: Oldest running: true
}
