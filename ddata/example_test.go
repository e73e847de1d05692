package ddata_test

import (
	"fmt"
	"slices"

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
