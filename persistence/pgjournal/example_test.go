package pgjournal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/pgjournal"
)

func Example() {
	ctx := context.Background()
	store, err := pgjournal.Open(ctx, pgjournal.Config{
		ConnString: os.Getenv("TROUPE_TEST_POSTGRES"), // postgres://user:password@host:5432/database
		Schema:     "example_journal",                 // created and migrated by Open
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	// Continue the history of cart-42 wherever an earlier run left it.
	highest, err := store.HighestSequenceNr(ctx, "cart-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	write := persistence.AtomicWrite{PersistenceID: "cart-42", Events: []persistence.Record{
		{PersistenceID: "cart-42", SequenceNr: highest + 1, Manifest: "cart.ItemAdded", Payload: []byte("apple")},
		{PersistenceID: "cart-42", SequenceNr: highest + 2, Manifest: "cart.ItemAdded", Payload: []byte("pear"), Tags: []string{"fruit"}},
	}}
	results, err := store.WriteMessages(ctx, []persistence.AtomicWrite{write})
	fmt.Println("write:", results[0], err)

	// Writing the same sequence numbers again, as a second node would
	// after a split brain, is refused: that entity stops instead of
	// forking the history.
	results, _ = store.WriteMessages(ctx, []persistence.AtomicWrite{write})
	fmt.Println("again:", results[0] != nil)

	_ = store.ReplayMessages(ctx, "cart-42", highest+1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		fmt.Println(r.Manifest, string(r.Payload))
		return nil
	})
	// Output:
	// write: <nil> <nil>
	// again: true
	// cart.ItemAdded apple
	// cart.ItemAdded pear
}
