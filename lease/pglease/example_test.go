package pglease_test

import (
	"context"
	"fmt"
	"os"

	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/lease/pglease"
)

// Two nodes compete for one lease in a PostgreSQL table. The test suite sets
// TROUPE_TEST_POSTGRES to its server.
func Example() {
	ctx := context.Background()
	cfg := pglease.Config{ConnString: os.Getenv("TROUPE_TEST_POSTGRES"), Schema: "troupe_example"}
	a, err := pglease.New(ctx, lease.Settings{LeaseName: "shop-singleton", OwnerName: "10.0.0.1:2552"}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := pglease.New(ctx, lease.Settings{LeaseName: "shop-singleton", OwnerName: "10.0.0.2:2552"}, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	ok, err := a.Acquire(ctx, func(err error) { fmt.Println("a lost it:", err) })
	fmt.Println("a acquires:", ok, err)
	fence := a.Fence()
	ok, err = b.Acquire(ctx, nil)
	fmt.Println("b acquires:", ok, err)

	released, err := a.Release(ctx)
	fmt.Println("a releases:", released, err, "a holds:", a.CheckLease())
	ok, err = b.Acquire(ctx, nil)
	fmt.Println("b acquires:", ok, err, "with a higher fence:", b.Fence() > fence)
	_, _ = b.Release(ctx)
	// Output:
	// a acquires: true <nil>
	// b acquires: false <nil>
	// a releases: true <nil> a holds: false
	// b acquires: true <nil> with a higher fence: true
}
