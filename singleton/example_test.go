package singleton_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
)

// NextTicket asks the ticket counter for a ticket.
type NextTicket struct{}

// Ticket is the ticket counter's answer.
type Ticket struct{ N int }

// ticketCounter hands out consecutive tickets: there must be one in the cluster.
type ticketCounter struct{ next int }

func (c *ticketCounter) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(NextTicket); ok {
		c.next++
		_ = ctx.Respond(Ticket{N: c.next})
	}
}

// A one-member cluster runs the singleton on its only member; asks through a proxy
// reach it. Every member would start the same manager, and any member a proxy.
func Example() {
	sys, _ := actor.New("tickets", actor.Config{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx) // hands the singleton over, then leaves the cluster
	}()
	// Messages sent through a proxy cross the wire: register their types.
	reg := serialization.NewRegistry()
	_ = serialization.Register[NextTicket](reg, "example.NextTicket")
	_ = serialization.Register[Ticket](reg, "example.Ticket")
	if _, err := remote.Start(sys, remote.Config{ListenHost: "127.0.0.1", Registry: reg}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := cluster.Start(sys, cluster.Config{Timing: cluster.TestTiming(),
		Downing: cluster.DowningConfig{StableAfter: 2 * time.Second}}); err != nil {
		fmt.Println(err)
		return
	}
	m, err := singleton.Start(sys, singleton.Config{
		Name:  "tickets",
		Props: actor.PropsOf(func() actor.Actor { return &ticketCounter{} }),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	proxy, err := singleton.Proxy(sys, singleton.ProxyConfig{Name: "tickets"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		t, err := actor.Ask[Ticket](ctx, proxy, NextTicket{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("ticket", t.N)
	}
	st := m.Status()
	fmt.Println(st.State, "running here:", st.Running)
	// Output:
	// ticket 1
	// ticket 2
	// ticket 3
	// Oldest running here: true
}
