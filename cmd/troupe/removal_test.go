package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
)

// writeHistories writes one event to each persistence id in a badger journal in dir.
func writeHistories(t *testing.T, dir string, pids ...string) {
	t.Helper()
	store, err := badgerjournal.Open(badgerjournal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var writes []persistence.AtomicWrite
	for _, pid := range pids {
		writes = append(writes, persistence.AtomicWrite{PersistenceID: pid, Events: []persistence.Record{
			{PersistenceID: pid, SequenceNr: 1, Manifest: "test", Payload: []byte("x")},
		}})
	}
	errs, err := store.WriteMessages(context.Background(), writes)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// eventCounts returns how many events each pid has in the journal in dir.
func eventCounts(t *testing.T, dir string, pids ...string) []uint64 {
	t.Helper()
	store, err := badgerjournal.Open(badgerjournal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out []uint64
	for _, pid := range pids {
		var n uint64
		err := store.ReplayMessages(context.Background(), pid, 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error {
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// remove-sharding-data removes the remembered entities of the shards it is given and
// leaves the application's events alone; it refuses a journal in use and a folder
// without one.
func TestRemoveShardingData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	writeHistories(t, dir, "/sharding/CounterShard/0", "/sharding/CounterShard/1", "/sharding/CartShard/0", "Counter-a")
	ctx := context.Background()

	r := runCLI(ctx, "remove-sharding-data", "-dir", dir, "-shards", "2", "Counter")
	r.expect(t, "remove", exitOK)
	checkRendered(t, "removal", r.stdout, lines(
		"removed /sharding/CounterShard/0",
		"removed /sharding/CounterShard/1",
		"2 histories removed",
	))
	if got := eventCounts(t, dir, "/sharding/CounterShard/0", "/sharding/CounterShard/1", "/sharding/CartShard/0", "Counter-a"); got[0] != 0 || got[1] != 0 || got[2] != 1 || got[3] != 1 {
		t.Fatalf("events after the removal: %v", got)
	}
	r = runCLI(ctx, "-json", "remove-sharding-data", "-dir", dir, "-shards", "1", "Counter,Cart")
	r.expect(t, "remove -json, types comma-separated", exitOK)
	// A history removed before still counts (its highest sequence number stays):
	// sharding.RemoveInternalData reports what it deleted or found deleted.
	checkRendered(t, "removal -json", r.stdout, lines(`{"persistenceIds":["/sharding/CartShard/0","/sharding/CounterShard/0"]}`))

	store, err := badgerjournal.Open(badgerjournal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	runCLI(ctx, "remove-sharding-data", "-dir", dir, "Counter").expect(t, "journal in use", exitError, "is in use: stop every node")
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(t.TempDir(), "typo")
	runCLI(ctx, "remove-sharding-data", "-dir", missing, "Counter").expect(t, "no journal", exitError, "no badger journal in "+missing)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("the command created %s: %v", missing, err)
	}
}
