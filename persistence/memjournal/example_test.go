package memjournal_test

import (
	"context"
	"fmt"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
)

func Example() {
	ctx := context.Background()
	store := memjournal.New()
	defer store.Close()

	write := persistence.AtomicWrite{PersistenceID: "counter-1", Events: []persistence.Record{
		{PersistenceID: "counter-1", SequenceNr: 1, Manifest: "counter.Incremented", Payload: []byte{1}},
		{PersistenceID: "counter-1", SequenceNr: 2, Manifest: "counter.Incremented", Payload: []byte{2}},
	}}
	results, err := store.WriteMessages(ctx, []persistence.AtomicWrite{write})
	fmt.Println(results, err)

	_ = store.ReplayMessages(ctx, "counter-1", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		fmt.Println(r.SequenceNr, r.Manifest, r.Payload)
		return nil
	})
	// Output:
	// [<nil>] <nil>
	// 1 counter.Incremented [1]
	// 2 counter.Incremented [2]
}
