package lease_test

import (
	"context"
	"fmt"

	"github.com/troupe-go/troupe/lease"
)

// Two nodes compete for one lease in a shared in-memory store.
func Example() {
	ctx := context.Background()
	store := lease.NewMemoryStore()
	a, _ := store.Lease(lease.Settings{LeaseName: "shop-sbr", OwnerName: "10.0.0.1:2552"})
	b, _ := store.Lease(lease.Settings{LeaseName: "shop-sbr", OwnerName: "10.0.0.2:2552"})

	ok, err := a.Acquire(ctx, func(err error) { fmt.Println("a lost it:", err) })
	fmt.Println("a acquires:", ok, err)
	ok, err = b.Acquire(ctx, nil)
	fmt.Println("b acquires:", ok, err)

	released, _ := a.Release(ctx)
	fmt.Println("a releases:", released, "a holds:", a.CheckLease())
	ok, _ = b.Acquire(ctx, nil)
	fmt.Println("b acquires:", ok)

	store.SetAvailable(false)
	_, err = a.Acquire(ctx, nil)
	fmt.Println("store down:", err)
	// Output:
	// a acquires: true <nil>
	// b acquires: false <nil>
	// a releases: true a holds: false
	// b acquires: true
	// store down: lease: store unavailable: acquiring "shop-sbr" for "10.0.0.1:2552"
}
