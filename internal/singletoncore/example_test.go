package singletoncore_test

import (
	"fmt"

	"github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/member"
)

// describe writes one line per decision, leaving out status reports.
func describe(ds []singletoncore.Decision) {
	for _, d := range ds {
		switch d := d.(type) {
		case singletoncore.SendToManager:
			fmt.Printf("  send %T to %s\n", d.Message, d.To.Addr)
		case singletoncore.SendToProxy:
			fmt.Printf("  send %+v to proxy %s\n", d.Message, d.To.Path)
		case singletoncore.StartTimer:
			fmt.Printf("  start timer %s every %v\n", d.Name, d.Interval)
		case singletoncore.CancelTimer:
			fmt.Printf("  cancel timer %s\n", d.Name)
		case singletoncore.Deliver:
			fmt.Printf("  deliver %s\n", d.Envelope.Payload.Data)
		case singletoncore.StateChanged:
		default:
			fmt.Printf("  %T\n", d)
		}
	}
}

// The manager on member b takes the singleton over from member a, which leaves, and
// delivers a message a proxy sent before the move.
func Example() {
	a := member.UniqueAddress{Addr: "10.0.0.1:2552", UID: 1}
	b := member.UniqueAddress{Addr: "10.0.0.2:2552", UID: 2}
	m, err := singletoncore.NewManagerCore(b, singletoncore.ManagerConfig{}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	step := func(what string, ev singletoncore.Event) {
		fmt.Println(what)
		describe(m.Handle(ev))
	}
	step("a is Up", singletoncore.MemberChanged{Member: singletoncore.Member{Node: a, Status: member.Up, UpNumber: 1}})
	step("b is Up", singletoncore.MemberChanged{Member: singletoncore.Member{Node: b, Status: member.Up, UpNumber: 2}})
	fmt.Println("state:", m.Status().State)
	step("a leaves", singletoncore.TakeOverFromMe{From: a})
	step("a's singleton is still stopping", singletoncore.HandOverInProgress{From: a})
	proxy := singletoncore.ProxyID{Node: a, Path: "/user/proxy#7"}
	step("a hands over", singletoncore.HandOverDone{From: a, Final: true,
		Ordered: []singletoncore.Envelope{{Proxy: proxy, Seq: 1, Payload: singletoncore.Payload{Manifest: "m", Data: []byte("hello")}}}})
	fmt.Println("state:", m.Status().State, "running:", m.Status().ChildRunning)
	// Output:
	// a is Up
	// b is Up
	// state: Younger
	// a leaves
	//   send singletoncore.HandOverToMe to 10.0.0.1:2552
	//   start timer hand-over-retry every 1s
	// a's singleton is still stopping
	//   cancel timer hand-over-retry
	// a hands over
	//   send singletoncore.HandOverComplete to 10.0.0.1:2552
	//   singletoncore.StartChild
	//   deliver hello
	// state: Oldest running: true
}
