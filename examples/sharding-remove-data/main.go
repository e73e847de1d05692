// Command sharding-remove-data removes the internal data of cluster sharding (the
// event-sourced coordinator's state and the remembered entities) from an embedded badger
// journal, as Akka's RemoveInternalClusterShardingData does. Use it when a coordinator
// cannot start because its stored state is corrupt, for example after two clusters ran
// at once. Application data is not touched.
//
// Stop every node of the cluster first: never run it while sharding runs.
//
// The troupe command does the same (troupe remove-sharding-data -dir DIR TYPE...); this
// program is its core, small enough to adapt (to a PostgreSQL journal, say).
//
//	go run ./examples/sharding-remove-data -dir troupe-data/journal -types Counter,Cart
//	go run ./examples/sharding-remove-data -dir troupe-data/journal -types Counter -shards 100
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/sharding"
)

func main() {
	dir := flag.String("dir", "", "the badger journal's folder (required)")
	types := flag.String("types", "", "entity type names, separated by commas (required)")
	shards := flag.Int("shards", 0, "also remove the remembered entities of shards 0 to n-1 (when the coordinator kept its state in distributed data)")
	flag.Parse()
	if err := run(*dir, *types, *shards); err != nil {
		fmt.Fprintln(os.Stderr, "sharding-remove-data:", err)
		os.Exit(1)
	}
}

func run(dir, types string, shards int) error {
	if dir == "" || types == "" {
		flag.Usage()
		return errors.New("-dir and -types are required")
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if errors.Is(err, badgerjournal.ErrLocked) {
		return fmt.Errorf("the journal in %s is in use: stop every node first (%w)", dir, err)
	}
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := sharding.RemoveInternalData(ctx, sharding.RemovalConfig{
		Journal:        store,
		Snapshots:      store,
		TypeNames:      strings.Split(types, ","),
		NumberOfShards: shards,
	})
	if err != nil {
		return err
	}
	for _, pid := range rep.PersistenceIDs {
		fmt.Println("removed", pid)
	}
	fmt.Printf("%d histories removed\n", len(rep.PersistenceIDs))
	return nil
}
