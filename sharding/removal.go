package sharding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
)

// RemovalConfig says what RemoveInternalData removes, and from where.
type RemovalConfig struct {
	// Journal holds the data. Required.
	Journal persistence.Journal
	// Snapshots holds the snapshots, when there is a snapshot store.
	Snapshots persistence.SnapshotStore
	// Registry reads the coordinator's events (RemoveInternalData registers sharding's
	// stored types in it). Nil means a private one.
	Registry *serialization.Registry
	// TypeNames are the entity types whose data goes. Required.
	TypeNames []string
	// Shards are more shard IDs whose remembered entities go, besides those the
	// coordinator's journal names (needed when the coordinator kept its state in
	// distributed data, which leaves nothing in the journal).
	Shards []ShardID
	// NumberOfShards, when above 0, adds the shards of the default extractor ("0" to
	// NumberOfShards-1).
	NumberOfShards int
}

// RemovalReport says what RemoveInternalData removed.
type RemovalReport struct {
	// PersistenceIDs are the histories deleted (events and snapshots), sorted.
	PersistenceIDs []string
}

// RemoveInternalData removes sharding's own data of the given entity types from a
// journal and snapshot store: the event-sourced coordinator's history
// ("/sharding/<type>Coordinator") and the remembered entities of every shard
// ("/sharding/<type>Shard/<shard>"). It is Akka's RemoveInternalClusterShardingData:
// for a cluster whose coordinator cannot start because its stored state is corrupt
// (two clusters ran at once, say). Application data (the entities' own events) is not
// touched.
//
// Never run it while a node of the cluster runs with sharding: stop every node first.
// The next start begins with no shard allocated and no entity remembered.
func RemoveInternalData(ctx context.Context, cfg RemovalConfig) (RemovalReport, error) {
	var report RemovalReport
	if cfg.Journal == nil || len(cfg.TypeNames) == 0 {
		return report, fmt.Errorf("%w: RemovalConfig needs a Journal and TypeNames", ErrInvalidConfig)
	}
	reg := cfg.Registry
	if reg == nil {
		reg = serialization.NewRegistry()
	}
	for _, typeName := range cfg.TypeNames {
		if err := validateTypeName(typeName); err != nil {
			return report, err
		}
		shards, err := coordinatorShards(ctx, cfg, reg, typeName)
		if err != nil {
			return report, err
		}
		shards = append(shards, cfg.Shards...)
		for i := range cfg.NumberOfShards {
			shards = append(shards, ShardID(strconv.Itoa(i)))
		}
		slices.Sort(shards)
		pids := []string{coordinatorPersistenceID(typeName)}
		for _, s := range slices.Compact(shards) {
			pids = append(pids, rememberPersistenceID(typeName, s))
		}
		for _, pid := range pids {
			removed, err := removeHistory(ctx, cfg, pid)
			if err != nil {
				return report, err
			}
			if removed {
				report.PersistenceIDs = append(report.PersistenceIDs, pid)
			}
		}
	}
	slices.Sort(report.PersistenceIDs)
	return report, nil
}

// coordinatorShards returns every shard the event-sourced coordinator's stored state
// names (allocated or waiting for a home).
func coordinatorShards(ctx context.Context, cfg RemovalConfig, reg *serialization.Registry, typeName string) ([]ShardID, error) {
	pid := coordinatorPersistenceID(typeName)
	seen := map[ShardID]bool{}
	from := uint64(1)
	if cfg.Snapshots != nil {
		snap, ok, err := cfg.Snapshots.LoadSnapshot(ctx, pid, persistence.SnapshotCriteria{})
		if err != nil {
			return nil, fmt.Errorf("sharding: reading the snapshot of %s: %w", pid, err)
		}
		if ok {
			v, err := reg.UnmarshalContext(snap.Manifest, snap.Payload, nil)
			if err == nil {
				if st, ok := v.(*shardcore.CoordState); ok {
					for _, s := range st.AllShards() {
						seen[s] = true
					}
				}
			}
			// A snapshot that does not decode is what this tool is for: go on with the
			// events it covered skipped, and delete it with the rest.
			from = snap.Metadata.SequenceNr + 1
		}
	}
	err := cfg.Journal.ReplayMessages(ctx, pid, from, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		ev, err := reg.UnmarshalContext(r.Manifest, r.Payload, nil)
		if err != nil {
			return nil // corrupt events are removed too
		}
		switch e := ev.(type) {
		case shardcore.ShardHomeAllocated:
			seen[e.Shard] = true
		case shardcore.ShardHomesAllocated:
			for _, one := range e.Singles() {
				seen[one.Shard] = true
			}
		}
		return nil
	})
	var corrupt *persistence.CorruptRecordError
	if err != nil && !errors.As(err, &corrupt) {
		return nil, fmt.Errorf("sharding: reading %s: %w", pid, err)
	}
	out := make([]ShardID, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	return out, nil
}

// removeHistory deletes the events and snapshots of pid; it reports whether there was
// anything.
func removeHistory(ctx context.Context, cfg RemovalConfig, pid string) (bool, error) {
	highest, err := cfg.Journal.HighestSequenceNr(ctx, pid)
	if err != nil {
		return false, fmt.Errorf("sharding: %s: %w", pid, err)
	}
	if highest > 0 {
		if err := cfg.Journal.DeleteMessagesTo(ctx, pid, highest); err != nil {
			return false, fmt.Errorf("sharding: deleting the events of %s: %w", pid, err)
		}
	}
	if cfg.Snapshots != nil {
		if err := cfg.Snapshots.DeleteSnapshots(ctx, pid, persistence.SnapshotCriteria{}); err != nil {
			return false, fmt.Errorf("sharding: deleting the snapshots of %s: %w", pid, err)
		}
	}
	return highest > 0, nil
}
