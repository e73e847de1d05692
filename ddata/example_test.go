package ddata_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/serialization"
)

// Two replicas of a cart change it concurrently; a delta carries one change, a
// merge carries everything, and both end alike.
func Example() {
	alice := cluster.UniqueAddress{Addr: "10.0.0.1:2552", UID: 1}
	bob := cluster.UniqueAddress{Addr: "10.0.0.2:2552", UID: 2}
	cart := ddata.NewKey[*ddata.ORSet[string]]("cart-42")

	a := ddata.NewORSet[string]()
	a.Add(alice, "apples")
	a.Add(alice, "pears")
	b := a.Clone() // bob starts from alice's state
	a.TakeDelta()

	a.Remove("pears")   // alice removes pears...
	b.Add(bob, "pears") // ...while bob adds them again: the add wins
	b.Add(bob, "plums")

	// Bob's changes reach alice as one small delta.
	d, _ := b.TakeDelta()
	if err := a.MergeDelta(d); err != nil {
		fmt.Println(err)
	}
	// Alice's full state reaches bob by gossip.
	if err := b.MergeData(a); err != nil {
		fmt.Println(err)
	}

	reg := serialization.NewRegistry()
	if err := ddata.RegisterTypes(reg); err != nil {
		fmt.Println(err)
	}
	da, _ := ddata.DigestOf(reg, a)
	db, _ := ddata.DigestOf(reg, b)
	v, _ := cart.Cast(a)
	items := v.Elements()
	slices.Sort(items)
	fmt.Println(cart.ID(), items, da == db)
	// Output: cart-42 [apples pears plums] true
}

func ExampleGCounter() {
	self := cluster.UniqueAddress{Addr: "10.0.0.1:2552", UID: 1}
	c := ddata.NewGCounter()
	c.Increment(self, 2)
	c.Increment(self, 3)
	d, _ := c.TakeDelta()
	other := ddata.NewGCounter()
	_ = other.MergeDelta(d)
	fmt.Println(c.Value(), other.Value(), d.Size())
	// Output: 5 5 1
}

func ExampleReadMajority() {
	level := ddata.ReadMajority(3e9, 5)
	for _, n := range []int{1, 3, 7, 12} {
		fmt.Print(level.Required(n), " ")
	}
	fmt.Println()
	// Output: 1 3 5 7
}

// The replicator from plain Go code: blocking calls with a context, typed by the
// key. (Without a Cluster the replicator runs alone and every majority acts as
// local; a real node passes its cluster.Cluster and remote registry.)
func Example_replicator() {
	sys, err := actor.New("shop", actor.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	repl, err := ddata.Start(context.Background(), sys, ddata.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	self := repl.SelfUniqueAddress()
	cart := ddata.NewKey[*ddata.ORSet[string]]("cart-42")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	add := func(item string) func(*ddata.ORSet[string]) (*ddata.ORSet[string], error) {
		return func(s *ddata.ORSet[string]) (*ddata.ORSet[string], error) {
			s.Add(self, item)
			return s, nil
		}
	}
	// nil initial: an absent key starts from an empty set.
	if err := ddata.Update(ctx, repl, cart, ddata.WriteMajority(3*time.Second, 0), nil, add("apples")); err != nil {
		fmt.Println(err)
	}
	if err := ddata.Update(ctx, repl, cart, ddata.WriteLocal(), nil, add("pears")); err != nil {
		fmt.Println(err)
	}
	items, err := ddata.Read(ctx, repl, cart, ddata.ReadMajority(3*time.Second, 0))
	if err != nil {
		fmt.Println(err)
	}
	list := items.Elements()
	slices.Sort(list)
	fmt.Println(list)

	_, err = ddata.Read(ctx, repl, ddata.NewKey[*ddata.GCounter]("hits"), ddata.ReadLocal())
	fmt.Println(errors.Is(err, ddata.ErrNotFound))
	// Output:
	// [apples pears]
	// true
}

// counter counts page hits from inside an actor: SendUpdate returns at once, and
// the reply arrives as a message carrying the request context.
type counter struct {
	repl *ddata.Replicator
	done chan string
}

var hits = ddata.NewKey[*ddata.GCounter]("hits")

type hit struct{ page string }

func (c *counter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case hit:
		self := c.repl.SelfUniqueAddress()
		inc := func(g *ddata.GCounter) (*ddata.GCounter, error) { g.Increment(self, 1); return g, nil }
		if err := ddata.SendUpdate(ctx, c.repl, hits, ddata.WriteLocal(), nil, inc, m.page); err != nil {
			c.done <- err.Error()
		}
	case ddata.UpdateResponse[*ddata.GCounter]:
		if m.Err != nil {
			c.done <- m.Err.Error()
			return
		}
		_ = ddata.SendRead(ctx, c.repl, hits, ddata.ReadLocal(), m.Context)
	case ddata.ReadResponse[*ddata.GCounter]:
		c.done <- fmt.Sprintf("%v: %d hits", m.Context, m.Value.Value())
	}
}

func ExampleSendUpdate() {
	sys, err := actor.New("site", actor.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	repl, err := ddata.Start(context.Background(), sys, ddata.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan string, 1)
	ref, err := sys.Spawn(actor.PropsOf(func() actor.Actor { return &counter{repl: repl, done: done} }), "counter")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = ref.Tell(hit{page: "/home"})
	fmt.Println(<-done)
	_ = ref.Tell(hit{page: "/cart"})
	fmt.Println(<-done)
	// Output:
	// /home: 1 hits
	// /cart: 2 hits
}
