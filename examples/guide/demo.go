package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"go.uber.org/zap"
)

// demo runs three nodes in this process on an embedded badger journal and tells w
// what happens.
func demo(w io.Writer, logger *zap.Logger) error {
	began := time.Now()
	dir, err := os.MkdirTemp("", "troupe-guide-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		return err
	}
	defer store.Close()

	nodes := make([]*node, 3)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.sys.Shutdown(context.Background())
			}
		}
	}()
	for i := range nodes {
		cfg := nodeConfig{name: fmt.Sprintf("bank-%d", i), minMembers: 3,
			journal: store, snapshots: store, logger: logger}
		if i > 0 {
			cfg.seeds = []string{nodes[0].cluster.GossipAddress()}
		}
		if nodes[i], err = startNode(cfg); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.awaitUp(ctx, len(nodes)); err != nil {
			return err
		}
	}
	oldest := 0
	for i, n := range nodes {
		if o := nodes[0].cluster.State().Oldest; o != nil && o.Unique == n.cluster.SelfUniqueAddress() {
			oldest = i
		}
	}
	fmt.Fprintf(w, "1. three nodes are Up, sharing a badger journal; %s is the oldest: the allocator singleton runs there\n", nodes[oldest].sys.Name())

	fmt.Fprintln(w, "\n2. open three accounts, through different nodes (the singleton hands out the numbers)")
	var ids []string
	for i, owner := range []string{"ann", "bob", "cho"} {
		r, err := nodes[i].open(ctx, owner)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "   %s opened account %s for %s (the account runs on %s)\n", nodes[i].sys.Name(), r.Account, r.Owner, r.Node)
		ids = append(ids, r.Account)
	}

	fmt.Fprintln(w, "\n3. move money; every command goes to its account wherever it runs")
	want := map[string]int64{}
	for _, step := range []struct {
		via     int
		account int
		cmd     any
	}{
		{1, 0, Deposit{Amount: 100}},
		{2, 1, Deposit{Amount: 50}},
		{0, 2, Deposit{Amount: 70}},
		{2, 0, Withdraw{Amount: 30}},
		{0, 1, Withdraw{Amount: 80}}, // more than bob has
	} {
		r, err := nodes[step.via].send(ctx, ids[step.account], step.cmd)
		if err != nil {
			return err
		}
		outcome := "balance " + strconv.FormatInt(r.Balance, 10)
		if r.Rejected != "" {
			outcome = "rejected: " + r.Rejected
		}
		fmt.Fprintf(w, "   %s: %s on %s: %s\n", nodes[step.via].sys.Name(), describe(step.cmd), r.Account, outcome)
		want[r.Account] = r.Balance
	}

	survivor := nodes[(oldest+1)%3]
	total, err := survivor.total(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n4. transactions carried out, counted on every node in distributed data: %d\n", total)

	fmt.Fprintf(w, "\n5. %s, the oldest, leaves gracefully: its shards move, the singleton hands over\n", nodes[oldest].sys.Name())
	if err := nodes[oldest].sys.Shutdown(ctx); err != nil {
		return err
	}
	nodes[oldest] = nil
	r, err := survivor.open(ctx, "dan")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s opened account %s for %s: the new allocator recovered the last number from the journal\n",
		survivor.sys.Name(), r.Account, r.Owner)
	for _, id := range ids {
		r, err := survivor.send(ctx, id, GetBalance{})
		if err != nil {
			return err
		}
		if r.Balance != want[id] {
			return fmt.Errorf("account %s: balance %d, want %d", id, r.Balance, want[id])
		}
		fmt.Fprintf(w, "   account %s of %s: balance %d, intact (now on %s)\n", id, r.Owner, r.Balance, r.Node)
	}
	if _, err := survivor.send(ctx, r.Account, Deposit{Amount: 10}); err != nil {
		return err
	}
	if total, err = survivor.total(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "   one more deposit; transactions counted: %d\n", total)
	fmt.Fprintf(w, "\ndone in %v\n", time.Since(began).Round(100*time.Millisecond))
	return nil
}

// describe says what a command does, in a few words.
func describe(cmd any) string {
	switch c := cmd.(type) {
	case Deposit:
		return fmt.Sprintf("deposit %d", c.Amount)
	case Withdraw:
		return fmt.Sprintf("withdraw %d", c.Amount)
	}
	return fmt.Sprintf("%T", cmd)
}

// awaitUp waits until this node sees want members, all Up. Each node learns of the
// others' moves by gossip: a node that is Up itself may see another as Joining for a
// moment, and reads and writes of distributed data count only the members it sees Up.
func (n *node) awaitUp(ctx context.Context, want int) error {
	allUp := func() bool {
		st := n.cluster.State()
		for _, m := range st.Members {
			if m.Status != cluster.Up {
				return false
			}
		}
		return len(st.Members) == want
	}
	done := make(chan struct{})
	closed := false
	watcher, err := n.sys.Spawn(actor.PropsFunc(func(actor.Context) { // at each cluster event
		if !closed && allUp() {
			closed = true
			close(done)
		}
	}), "")
	if err != nil {
		return err
	}
	defer func() { _ = n.sys.Stop(watcher) }()
	if err := n.cluster.Subscribe(watcher); err != nil { // the current state first, then every change
		return err
	}
	defer func() { _ = n.cluster.Unsubscribe(watcher) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %d members not all Up: %w", n.sys.Name(), want, ctx.Err())
	}
}
