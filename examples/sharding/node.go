package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
)

// node is one member of the demo cluster: an actor system with remoting, cluster
// membership, persistence on the shared journal, and the Counter entity type.
type node struct {
	name    string
	sys     *actor.System
	cluster *cluster.Cluster
	region  actor.Ref
}

// nodeConfig is what every node shares.
type nodeConfig struct {
	reg        *serialization.Registry
	journal    persistence.Journal
	snapshots  persistence.SnapshotStore
	idle       time.Duration
	shards     int
	logger     *zap.Logger
	remotePort int
	gossipPort int
}

// startNode starts a node of its own (-node): its actor system, remoting, cluster
// membership, and the services on them. The demo in one process starts its nodes with
// testkit/multinode instead, and the services on each with startServices.
func startNode(name string, seeds []string, cfg nodeConfig) (*node, error) {
	sys, err := actor.New(name, actor.Config{Logger: cfg.logger})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*node, error) {
		_ = sys.Shutdown(context.Background())
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := remote.Start(sys, remote.Config{Registry: cfg.reg, ListenPort: cfg.remotePort}); err != nil {
		return fail(err)
	}
	c, err := cluster.Start(sys, cluster.Config{
		GossipPort: cfg.gossipPort,
		SeedNodes:  seeds,
		Timing:     cluster.TestTiming(), // failures detected in about a second; production keeps the defaults
		Downing:    cluster.DowningConfig{StableAfter: stableAfter},
	})
	if err != nil {
		return fail(err)
	}
	region, err := startServices(sys, cfg)
	if err != nil {
		return fail(err)
	}
	return &node{name: name, sys: sys, cluster: c, region: region}, nil
}

// stableAfter is the split-brain resolver's stable-after of the demo's nodes.
const stableAfter = 2 * time.Second

// startServices starts persistence on the shared journal, sharding, and the Counter
// entity type on sys, whose remoting and cluster run; it returns the type's region.
func startServices(sys *actor.System, cfg nodeConfig) (actor.Ref, error) {
	if _, err := persistence.Start(sys, persistence.Config{Journal: cfg.journal, Snapshots: cfg.snapshots, Registry: cfg.reg}); err != nil {
		return actor.Ref{}, err
	}
	s, err := sharding.Start(sys, sharding.Config{Registry: cfg.reg})
	if err != nil {
		return actor.Ref{}, err
	}
	return s.Start("Counter", sharding.EntityConfig{
		EntityFactory:         counterProps(cfg.idle),
		NumberOfShards:        cfg.shards,
		StateStoreMode:        sharding.StateStorePersistence,
		RememberEntitiesStore: sharding.RememberStoreJournal,
		HandOffStopMessage:    Stop{},
		Timings:               sharding.Timings{RetryInterval: 500 * time.Millisecond},
	})
}

// leave shuts the node down gracefully: its shards are handed off first.
func (n *node) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.sys.Shutdown(ctx)
}

// send sends cmd to counter id through this node and waits for the Count.
func (n *node) send(id string, cmd any) (Count, error) {
	ref, err := sharding.EntityRefFor[any](n.sys, "Counter", sharding.EntityID(id))
	if err != nil {
		return Count{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sharding.Ask[Count, any](ctx, ref, cmd)
}

// shards returns this node's shards, "shard: entities".
func (n *node) shards() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := actor.Ask[sharding.ShardRegionState](ctx, n.region, sharding.GetShardRegionState{})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, s := range st.Shards {
		ids := make([]string, len(s.Entities))
		for i, e := range s.Entities {
			ids[i] = string(e)
		}
		sort.Strings(ids)
		parts = append(parts, fmt.Sprintf("%s[%s]", s.Shard, strings.Join(ids, " ")))
	}
	return strings.Join(parts, " "), nil
}
