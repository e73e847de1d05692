package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/testkit/pgtest"
	"go.uber.org/zap"
)

// writeHistories writes one event to each persistence id in a badger journal in dir.
func writeHistories(t *testing.T, dir string, pids ...string) {
	t.Helper()
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
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
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
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

	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
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

// remove-sharding-data works on a PostgreSQL journal too: it refuses one that a node
// still uses and a database without the journal's tables, and removes only sharding's
// histories.
func TestRemoveShardingDataFromPostgres(t *testing.T) {
	ctx := context.Background()
	target, release, err := pgtest.Acquire(ctx, pgtest.Options{})
	if errors.Is(err, pgtest.ErrNoPostgres) && !pgtest.Required() {
		t.Skip("no PostgreSQL:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	open := func(schema string) *pgjournal.Store {
		t.Helper()
		store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: target.ConnString, Schema: schema, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		return store
	}
	pids := []string{"/sharding/CounterShard/0", "/sharding/CartShard/0", "Counter-a"}
	node := open("removal")
	var writes []persistence.AtomicWrite
	for _, pid := range pids {
		writes = append(writes, persistence.AtomicWrite{PersistenceID: pid, Events: []persistence.Record{
			{PersistenceID: pid, SequenceNr: 1, Manifest: "test", Payload: []byte("x")},
		}})
	}
	if errs, err := node.WriteMessages(ctx, writes); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	run := func(args ...string) result {
		return runCLI(ctx, append([]string{"remove-sharding-data", "-postgres", target.ConnString}, args...)...)
	}
	run("-schema", "removal", "-shards", "1", "Counter").expect(t, "journal in use", exitError, "is in use")
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	r := run("-schema", "removal", "-shards", "1", "Counter")
	r.expect(t, "remove", exitOK)
	checkRendered(t, "removal from PostgreSQL", r.stdout, lines("removed /sharding/CounterShard/0", "1 histories removed"))
	store := open("removal")
	defer store.Close()
	for i, want := range []int{0, 1, 1} {
		if got := countEvents(t, store, pids[i]); got != want {
			t.Errorf("%s after the removal: %d events, want %d", pids[i], got, want)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	run("-schema", "nothing_here", "Counter").expect(t, "no journal", exitError, "no troupe journal in that database and schema")
	runCLI(ctx, "remove-sharding-data", "-dir", t.TempDir(), "-postgres", target.ConnString, "Counter").expect(t, "both", exitUsage, "not both")
}

// countEvents returns how many events pid has in store.
func countEvents(t *testing.T, store *pgjournal.Store, pid string) int {
	t.Helper()
	n := 0
	if err := store.ReplayMessages(context.Background(), pid, 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error {
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}
