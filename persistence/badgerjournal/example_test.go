package badgerjournal_test

import (
	"context"
	"fmt"
	"os"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
)

func Example() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	write := persistence.AtomicWrite{PersistenceID: "cart-42", Events: []persistence.Record{
		{PersistenceID: "cart-42", SequenceNr: 1, Manifest: "cart.ItemAdded", Payload: []byte("apple")},
		{PersistenceID: "cart-42", SequenceNr: 2, Manifest: "cart.ItemAdded", Payload: []byte("pear")},
	}}
	results, err := store.WriteMessages(ctx, []persistence.AtomicWrite{write})
	fmt.Println("write:", results[0], err)
	if err := store.Close(); err != nil {
		fmt.Println(err)
		return
	}

	// The events survive closing and reopening.
	store, err = badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	_ = store.ReplayMessages(ctx, "cart-42", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		fmt.Println(r.SequenceNr, r.Manifest, string(r.Payload))
		return nil
	})
	highest, _ := store.HighestSequenceNr(ctx, "cart-42")
	fmt.Println("highest:", highest)
	// Output:
	// write: <nil> <nil>
	// 1 cart.ItemAdded apple
	// 2 cart.ItemAdded pear
	// highest: 2
}

func ExampleStore_EventsByTag() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	ctx := context.Background()
	ev := func(pid string, seq uint64, payload string, tags ...string) persistence.AtomicWrite {
		return persistence.AtomicWrite{PersistenceID: pid, Events: []persistence.Record{
			{PersistenceID: pid, SequenceNr: seq, Manifest: "shop.Event", Payload: []byte(payload), Tags: tags},
		}}
	}
	_, _ = store.WriteMessages(ctx, []persistence.AtomicWrite{ev("cart-1", 1, "apple", "orders")})
	_, _ = store.WriteMessages(ctx, []persistence.AtomicWrite{ev("cart-2", 1, "browsing")})
	_, _ = store.WriteMessages(ctx, []persistence.AtomicWrite{ev("cart-2", 2, "pear", "orders")})

	// Read the tag from the start; a reader resumes from the last offset + 1.
	var next uint64
	_ = store.EventsByTag(ctx, "orders", next, 0, func(tr persistence.TaggedRecord) error {
		fmt.Println(tr.Record.PersistenceID, tr.Record.SequenceNr, string(tr.Record.Payload))
		next = tr.Offset + 1
		return nil
	})
	// Output:
	// cart-1 1 apple
	// cart-2 2 pear
}
