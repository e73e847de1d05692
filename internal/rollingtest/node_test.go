package rollingtest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/pgjournal"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
)

// The test binary is also the node program: TestMain runs runNode instead of the tests
// when envNode names a node. The node's whole configuration comes from the environment,
// so that a restart with the same environment is a restart with the same configuration.
const (
	envNode     = "ROLLINGTEST_NODE"  // the node's (and its system's) name
	envSeeds    = "ROLLINGTEST_SEEDS" // gossip addresses, comma-separated, the same on every node
	envRemote   = "ROLLINGTEST_REMOTE_PORT"
	envGossip   = "ROLLINGTEST_GOSSIP_PORT"
	envPostgres = "ROLLINGTEST_POSTGRES"
	envSchema   = "ROLLINGTEST_SCHEMA" // the journal's schema: a new one for each run of the test
)

// nodeSettings is what a node and the test's client share.
func clusterConfig(seeds []string, gossipPort int, roles []string) cluster.Config {
	return cluster.Config{
		GossipHost: "127.0.0.1",
		GossipPort: gossipPort,
		SeedNodes:  seeds,
		Roles:      roles,
		Timing:     cluster.TestTiming(),
		Downing:    cluster.DowningConfig{StableAfter: 2 * time.Second},
	}
}

func shardTimings() sharding.Timings {
	return sharding.Timings{RetryInterval: 200 * time.Millisecond}
}

// runNode is a node process: it prints "ready ADDR#UID", runs until SIGTERM, shuts down
// on it and exits 0 when the shutdown succeeded, 1 otherwise.
func runNode() int {
	if err := node(); err != nil {
		fmt.Fprintln(os.Stderr, os.Getenv(envNode)+":", err)
		return 1
	}
	return 0
}

func node() error {
	name := os.Getenv(envNode)
	remotePort, err1 := strconv.Atoi(os.Getenv(envRemote))
	gossipPort, err2 := strconv.Atoi(os.Getenv(envGossip))
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad ports %q %q", os.Getenv(envRemote), os.Getenv(envGossip))
	}
	log, err := zap.NewDevelopment(zap.IncreaseLevel(zap.WarnLevel))
	if err != nil {
		return err
	}
	log = log.Named(name)
	reg, err := registry()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	store, err := pgjournal.Open(ctx, pgjournal.Config{ConnString: os.Getenv(envPostgres), Schema: os.Getenv(envSchema), MaxConns: 4})
	cancel()
	if err != nil {
		return err
	}
	defer store.Close()
	sys, err := actor.New(name, actor.Config{Logger: log})
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = sys.Shutdown(context.Background())
		return err
	}
	if _, err := remote.Start(sys, remote.Config{Registry: reg, ListenHost: "127.0.0.1", ListenPort: remotePort}); err != nil {
		return fail(err)
	}
	c, err := cluster.Start(sys, clusterConfig(strings.Split(os.Getenv(envSeeds), ","), gossipPort, []string{role}))
	if err != nil {
		return fail(err)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		return fail(err)
	}
	s, err := sharding.Start(sys, sharding.Config{Registry: reg})
	if err != nil {
		return fail(err)
	}
	if _, err := s.Start(typeName, sharding.EntityConfig{
		EntityFactory:      counterProps,
		NumberOfShards:     24,
		Role:               role,
		StateStoreMode:     sharding.StateStorePersistence,
		HandOffStopMessage: stop{},
		Timings:            shardTimings(),
	}); err != nil {
		return fail(err)
	}
	sys.ShutdownOnSignal()
	fmt.Printf("ready %s bound %s\n", c.SelfUniqueAddress(), sys.CoordinatedShutdown().Bound())
	<-sys.Terminated()
	return sys.Shutdown(context.Background())
}
