package singleton_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// TicketIssued is persistentTickets' event.
type TicketIssued struct{ N int }

// persistentTickets is ticketCounter (example_test.go) made persistent: its state is
// its events, which the next instance replays wherever it starts.
type persistentTickets struct{ next int }

func (c *persistentTickets) PersistenceID() string { return "tickets" }

func (c *persistentTickets) Recover(ctx persistence.Context) {
	if ev, ok := ctx.Message().(TicketIssued); ok {
		c.next = ev.N
	}
}

func (c *persistentTickets) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case NextTicket:
		err := persistence.Persist(ctx, TicketIssued{N: c.next + 1}, func(ev TicketIssued) {
			c.next = ev.N
			_ = ctx.Respond(Ticket(ev))
		})
		if err != nil {
			_ = ctx.Respond(Ticket{}) // no ticket: 0
		}
	case Terminate:
		_ = ctx.Stop(ctx.Self())
	}
}

// A singleton's in-memory state does not move with it: after a graceful hand-over the
// plain ticket counter starts again from 1, while the persistent one, on a journal the
// members share, goes on from where the old instance was.
func TestPersistentSingletonStateSurvivesHandOver(t *testing.T) {
	reg := testRegistry(t)
	for _, err := range []error{
		serialization.Register[NextTicket](reg, "test.NextTicket"),
		serialization.Register[Ticket](reg, "test.Ticket"),
		serialization.Register[TicketIssued](reg, "test.TicketIssued"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	c := multinode.Start(t, multinode.Options{Nodes: 2, Registry: reg})
	for _, n := range c.Nodes() {
		if _, err := persistence.Start(n.System, persistence.Config{Journal: store, Registry: reg}); err != nil {
			t.Fatal(err)
		}
		for _, cfg := range []singleton.Config{
			{Name: "plain", Props: actor.PropsOf(func() actor.Actor { return &ticketCounter{} })},
			{Name: "persistent", Props: persistence.Props(func() persistence.Entity { return &persistentTickets{} }),
				TerminationMessage: Terminate{}},
		} {
			if _, err := singleton.Start(n.System, cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
	ticket := func(name string) int {
		t.Helper()
		proxy, err := singleton.Proxy(c.Node(1).System, singleton.ProxyConfig{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		tk, err := actor.Ask[Ticket](ctx, proxy, NextTicket{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = c.Node(1).System.Stop(proxy)
		return tk.N
	}
	for want := 1; want <= 3; want++ {
		for _, name := range []string{"plain", "persistent"} {
			if got := ticket(name); got != want {
				t.Fatalf("%s: ticket %d, want %d", name, got, want)
			}
		}
	}
	if m := singleton.Get(c.Node(0).System, "persistent"); !m.Status().Running {
		t.Fatalf("node 0, the oldest, does not run the singleton: %+v", m.Status())
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(30*time.Second))
	defer cancel()
	if err := c.Node(0).System.Shutdown(ctx); err != nil { // a graceful hand-over to node 1
		t.Fatal(err)
	}
	if got := ticket("plain"); got != 1 {
		t.Errorf("plain: ticket %d after the hand-over, want 1 (its state stayed behind)", got)
	}
	if got := ticket("persistent"); got != 4 {
		t.Errorf("persistent: ticket %d after the hand-over, want 4", got)
	}
}
