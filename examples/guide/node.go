package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/singleton"
	"go.uber.org/zap"
)

// nodeConfig is what one node needs to start.
type nodeConfig struct {
	name       string
	host       string   // the address the other nodes reach this one at; default 127.0.0.1
	remotePort int      // 0: any free port
	gossipPort int      // 0: any free port
	seeds      []string // gossip addresses to join through
	minMembers int      // members that must join before any is Up
	journal    persistence.Journal
	snapshots  persistence.SnapshotStore
	logger     *zap.Logger
}

// node is one member of the bank's cluster.
type node struct {
	sys     *actor.System
	cluster *cluster.Cluster
	repl    *ddata.Replicator
	numbers actor.Ref // a proxy to the allocator singleton
}

// transactions is a cluster-wide count of the deposits and withdrawals carried out.
var transactions = ddata.NewKey[*ddata.GCounter]("bank.transactions")

// startNode starts a node: its actor system, and the layers on it.
func startNode(cfg nodeConfig) (*node, error) {
	sys, err := actor.New(cfg.name, actor.Config{Logger: cfg.logger})
	if err != nil {
		return nil, err
	}
	n, err := startServices(sys, cfg)
	if err != nil {
		_ = sys.Shutdown(context.Background())
		return nil, fmt.Errorf("%s: %w", cfg.name, err)
	}
	return n, nil
}

// startServices starts remote, cluster, persistence, distributed data, sharding and
// the singleton on sys, in that order.
func startServices(sys *actor.System, cfg nodeConfig) (*node, error) {
	reg := serialization.NewRegistry() // one registry for every layer
	if err := registerMessages(reg); err != nil {
		return nil, err
	}
	// 1. Remote: the transport between nodes.
	if _, err := remote.Start(sys, remote.Config{Registry: reg, ListenHost: cfg.host, ListenPort: cfg.remotePort}); err != nil {
		return nil, err
	}
	// 2. Cluster: membership, failure detection, the split-brain resolver.
	c, err := cluster.Start(sys, cluster.Config{GossipPort: cfg.gossipPort, SeedNodes: cfg.seeds, MinNrOfMembers: cfg.minMembers})
	if err != nil {
		return nil, err
	}
	// 3. Persistence: the journal every node shares.
	if _, err := persistence.Start(sys, persistence.Config{Journal: cfg.journal, Snapshots: cfg.snapshots, Registry: reg}); err != nil {
		return nil, err
	}
	// 4. Distributed data: the replicator (sharding keeps its coordinator's state there).
	repl, err := ddata.Start(context.Background(), sys, ddata.Config{Cluster: c, Registry: reg})
	if err != nil {
		return nil, err
	}
	// 5. Sharding: the accounts.
	s, err := sharding.Start(sys, sharding.Config{Registry: reg})
	if err != nil {
		return nil, err
	}
	if _, err := s.Start("Account", sharding.EntityConfig{
		EntityFactory: func(id sharding.EntityID) *actor.Props {
			return persistence.Props(func() persistence.Entity { return &account{id: string(id)} })
		},
		NumberOfShards:     30, // ten times the most nodes we expect
		HandOffStopMessage: Stop{},
	}); err != nil {
		return nil, err
	}
	// 6. The singleton: the allocator of account numbers, and a proxy to reach it.
	if _, err := singleton.Start(sys, singleton.Config{
		Name:               "account-numbers",
		Props:              persistence.Props(func() persistence.Entity { return &allocator{} }),
		TerminationMessage: Stop{},
	}); err != nil {
		return nil, err
	}
	numbers, err := singleton.Proxy(sys, singleton.ProxyConfig{Name: "account-numbers"})
	if err != nil {
		return nil, err
	}
	return &node{sys: sys, cluster: c, repl: repl, numbers: numbers}, nil
}

// open opens an account for owner under a fresh number from the allocator.
func (n *node) open(ctx context.Context, owner string) (Receipt, error) {
	num, err := actor.Ask[Number](ctx, n.numbers, NextNumber{})
	if err != nil {
		return Receipt{}, err
	}
	if num.Rejected != "" {
		return Receipt{}, fmt.Errorf("no account number: %s", num.Rejected)
	}
	return n.send(ctx, strconv.FormatInt(num.N, 10), Open{Owner: owner})
}

// send sends cmd to an account, wherever it lives, and waits for the receipt. A
// carried-out deposit or withdrawal is counted in the cluster-wide total.
func (n *node) send(ctx context.Context, id string, cmd any) (Receipt, error) {
	acct, err := sharding.EntityRefFor[any](n.sys, "Account", sharding.EntityID(id))
	if err != nil {
		return Receipt{}, err
	}
	r, err := sharding.Ask[Receipt](ctx, acct, cmd)
	if err != nil || r.Rejected != "" {
		return r, err
	}
	switch cmd.(type) {
	case Deposit, Withdraw:
		self := n.repl.SelfUniqueAddress()
		err = ddata.Update(ctx, n.repl, transactions, ddata.WriteLocal(), nil,
			func(c *ddata.GCounter) (*ddata.GCounter, error) {
				c.Increment(self, 1)
				return c, nil
			})
	}
	return r, err
}

// total reads the count of transactions from every node.
func (n *node) total(ctx context.Context) (uint64, error) {
	c, err := ddata.Read(ctx, n.repl, transactions, ddata.ReadAll(3*time.Second))
	if err != nil {
		return 0, err
	}
	return c.Value(), nil
}
