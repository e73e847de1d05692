package sharding

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// The event-sourced coordinator replays batches of allocations: a batch that applies is
// applied whole, one that does not (here it names a shard already allocated) is
// replayed as its single allocations, so only that shard is skipped. The journal's
// region is gone; with remember-entities its shards get new homes at once, which shows
// what the replay recovered: every shard of both batches.
func TestPersistentCoordinatorRecoversBatches(t *testing.T) {
	journal := memjournal.New()
	defer journal.Close()
	sys, err := actor.New("recover", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	defer func() { _ = sys.Shutdown(ctx) }()

	const gone = RegionID("troupe://old@10.9.9.9:1/system/sharding/Counter#1")
	pid := coordinatorPersistenceID("Counter")
	events := []shardcore.CoordEvent{
		shardcore.RegionRegistered{Region: gone},
		shardcore.ShardHomesAllocated{Homes: []shardcore.RegionShards{{Region: gone, Shards: []ShardID{"1", "2", "3"}}}},
		shardcore.ShardHomeAllocated{Shard: "4", Region: gone},
		shardcore.ShardHomesAllocated{Homes: []shardcore.RegionShards{{Region: gone, Shards: []ShardID{"5", "1"}}}},
	}
	codec := serialization.NewRegistry()
	var records []persistence.Record
	for i, e := range events {
		man, b, err := codec.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, persistence.Record{PersistenceID: pid, SequenceNr: uint64(i + 1), Manifest: man, Payload: b})
	}
	errs, err := journal.WriteMessages(ctx, []persistence.AtomicWrite{{PersistenceID: pid, Events: records}})
	if err = errors.Join(append(errs, err)...); err != nil {
		t.Fatal(err)
	}

	probe := testkit.NewProbe(t, sys)
	actor.Subscribe[ShardEvent](sys.EventStream(), probe.Ref())
	reg := testRegistry(t)
	if _, err := persistence.Start(sys, persistence.Config{Journal: journal, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	s, err := Start(sys, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Counter", EntityConfig{
		EntityFactory:    trackedCounters(newIncarnations(), "recover"),
		NumberOfShards:   10,
		StateStoreMode:   StateStorePersistence,
		RememberEntities: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ShardID{"1", "2", "3", "4", "5"}
	homed := map[ShardID]bool{}
	for len(homed) < len(want) {
		if a, ok := probe.ReceiveN(1, 10*time.Second)[0].(ShardAllocated); ok {
			homed[a.Shard] = true
		}
	}
	if got := slices.Sorted(maps.Keys(homed)); !slices.Equal(got, want) {
		t.Fatalf("re-homed %v, want %v", got, want)
	}
	// An entity of shard 1 answers once the new homes are stored.
	id := entityInShard(t, "1", 10)
	if _, err := actor.Ask[int](ctx, region, Envelope{EntityID: id, Message: GetCount{}}); err != nil {
		t.Fatal(err)
	}

	// The new homes went to the journal in one batch.
	var batches []shardcore.ShardHomesAllocated
	err = journal.ReplayMessages(ctx, pid, uint64(len(events)+1), persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		v, err := codec.Unmarshal(r.Manifest, r.Payload)
		if e, ok := v.(shardcore.ShardHomesAllocated); ok && err == nil {
			batches = append(batches, e)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(batches) != 1 || len(batches[0].Singles()) != len(want) {
		t.Fatalf("journal holds batches %+v, want one of %d shards", batches, len(want))
	}
}

// entityInShard returns an entity ID the default extractor places in shard s.
func entityInShard(t *testing.T, s ShardID, shards int) EntityID {
	t.Helper()
	for i := range 10000 {
		if id := EntityID(fmt.Sprint("e", i)); HashShardID(id, shards) == s {
			return id
		}
	}
	t.Fatalf("no entity ID in shard %q", s)
	return ""
}
