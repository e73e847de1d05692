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
	"github.com/troupe-go/troupe/testkit/faultnet"
	"go.uber.org/zap"
)

// node is one member of the demo cluster: an actor system with remoting, cluster
// membership, persistence on the shared journal, and the Counter entity type.
type node struct {
	name    string
	sys     *actor.System
	cluster *cluster.Cluster
	region  actor.Ref
	net     *faultnet.Network
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
	// net, when set, connects the nodes in this process through the transports'
	// seams, so that the demo can crash one: cut all its links at once.
	net *faultnet.Network
}

func startNode(name string, seeds []string, cfg nodeConfig) (*node, error) {
	sys, err := actor.New(name, actor.Config{Logger: cfg.logger})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*node, error) {
		_ = sys.Shutdown(context.Background())
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rc := remote.Config{Registry: cfg.reg, ListenPort: cfg.remotePort}
	cc := cluster.Config{
		GossipPort: cfg.gossipPort,
		SeedNodes:  seeds,
		Timing:     cluster.TestTiming(), // failures detected in about a second; production keeps the defaults
		Downing:    cluster.DowningConfig{StableAfter: 2 * time.Second},
	}
	if cfg.net != nil { // nodes in this process (not -process)
		cfg.net.Node(name).Install(&rc, &cc)
	}
	if _, err := remote.Start(sys, rc); err != nil {
		return fail(err)
	}
	c, err := cluster.Start(sys, cc)
	if err != nil {
		return fail(err)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: cfg.journal, Snapshots: cfg.snapshots, Registry: cfg.reg}); err != nil {
		return fail(err)
	}
	s, err := sharding.Start(sys, sharding.Config{Registry: cfg.reg})
	if err != nil {
		return fail(err)
	}
	region, err := s.Start("Counter", sharding.EntityConfig{
		EntityFactory:         counterProps(cfg.idle),
		NumberOfShards:        cfg.shards,
		StateStoreMode:        sharding.StateStorePersistence,
		RememberEntitiesStore: sharding.RememberStoreJournal,
		HandOffStopMessage:    Stop{},
		Timings:               sharding.Timings{RetryInterval: 500 * time.Millisecond},
	})
	if err != nil {
		return fail(err)
	}
	return &node{name: name, sys: sys, cluster: c, region: region, net: cfg.net}, nil
}

// leave shuts the node down gracefully: its shards are handed off first.
func (n *node) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.sys.Shutdown(ctx)
}

// crash kills the node as a crashed process would, as far as the others can tell: all
// its links are cut at once, so they hear nothing more from it (no leave, no
// hand-off). Behind the cut it downs itself, which stops its cluster services, and its
// system shuts down.
func (n *node) crash() {
	n.net.Isolate(n.name)
	_ = n.cluster.Down(n.cluster.SelfUniqueAddress())
	<-n.cluster.Stopped()
	_ = n.sys.Shutdown(context.Background())
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

// waitUp waits until n sees want members Up.
func (n *node) waitUp(want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		up := 0
		for _, m := range n.cluster.State().Members {
			if m.Status == cluster.Up {
				up++
			}
		}
		if up == want && len(n.cluster.State().Members) == want {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: %d members not Up within %v", n.name, want, timeout)
}
