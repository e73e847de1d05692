package sharding

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/testkit"
)

// Internal data removal deletes the coordinator's history and the remembered entities,
// and leaves the entities' own events alone.
func TestRemoveInternalData(t *testing.T) {
	journal := memjournal.New()
	defer journal.Close()
	table := newIncarnations()
	run := func(name string, before func(), ids ...EntityID) {
		sys, err := actor.New(name, actor.Config{})
		if err != nil {
			t.Fatal(err)
		}
		reg := testRegistry(t)
		if _, err := persistence.Start(sys, persistence.Config{Journal: journal, Snapshots: journal, Registry: reg}); err != nil {
			t.Fatal(err)
		}
		s, err := Start(sys, Config{Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		region, err := s.Start("Counter", EntityConfig{
			EntityFactory:         trackedCounters(table, name),
			NumberOfShards:        10,
			StateStoreMode:        StateStorePersistence,
			RememberEntities:      true,
			RememberEntitiesStore: RememberStoreJournal,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
		defer cancel()
		for _, id := range ids {
			if _, err := actor.Ask[int](ctx, region, Envelope{EntityID: id, Message: Increment{By: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if len(ids) == 0 {
			// A restart: wait for what the coordinator and remember-entities bring back.
			if _, err := actor.Ask[int](ctx, region, Envelope{EntityID: "probe", Message: GetCount{}}); err != nil {
				t.Fatal(err)
			}
		}
		if before != nil {
			before()
		}
		if err := sys.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run("first", nil, "a", "b", "c")
	run("second", func() { // remembered entities start again
		table.await(t, 5*time.Second, "remembered entities started", func(in *incarnations) bool {
			return in.starts["a"] == 2 && in.starts["b"] == 2 && in.starts["c"] == 2
		})
	})
	rep, err := RemoveInternalData(context.Background(), RemovalConfig{
		Journal: journal, Snapshots: journal, TypeNames: []string{"Counter"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/sharding/CounterCoordinator"}
	for _, id := range []EntityID{"a", "b", "c", "probe"} {
		want = append(want, rememberPersistenceID("Counter", HashShardID(id, 10)))
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(rep.PersistenceIDs, want) {
		t.Fatalf("removed %v, want %v", rep.PersistenceIDs, want)
	}
	run("third", nil) // nothing remembered any more
	for _, id := range []EntityID{"a", "b", "c"} {
		if table.startsOf(id) != 2 {
			t.Fatalf("%s started after the removal", id)
		}
	}
	if n, _ := journal.HighestSequenceNr(context.Background(), "Counter-a"); n != 1 {
		t.Fatalf("the entity's own events were touched: highest %d", n)
	}
	if _, err := RemoveInternalData(context.Background(), RemovalConfig{Journal: journal}); err == nil {
		t.Fatal("removal without type names succeeded")
	}
}
