package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// The distributed-data scenarios: in-process nodes (actor system, remote, cluster
// and a replicator each) on 127.0.0.1.
func init() {
	scenarios["ddata-update-local"] = scenario{2_000_000, runDdataUpdateLocal}
	scenarios["ddata-write-majority"] = scenario{2_000, runDdataWriteMajority}
	scenarios["ddata-converge"] = scenario{1_000, runDdataConverge}
	scenarios["ddata-idle-gossip"] = scenario{10_000, runDdataIdleGossip}
	scenarios["ddata-orset-large"] = scenario{100_000, runDdataORSetLarge}
}

// ddataNode is one in-process node with a replicator.
type ddataNode struct {
	sys *actor.System
	r   *remote.Remote
	c   *cluster.Cluster
	rep *ddata.Replicator
}

// startDdataCluster starts n nodes (testkit/multinode), all joining the first, with a
// replicator on each with cfg, and waits until every node sees n members Up. No node
// is downed: the resolver's stable-after is a minute. stopDdata shuts them down.
func startDdataCluster(n int, cfg ddata.Config) ([]*ddataNode, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reps := make([]*ddata.Replicator, n)
	opts := clusterOptions(n)
	opts.Registry = serialization.NewRegistry()
	opts.StableAfter = time.Minute
	opts.ConfigureRemote = func(_ int, c *remote.Config) { // the transport's defaults
		c.ReconnectBackoffMin, c.ReconnectBackoffMax = 0, 0
	}
	opts.OnStart = func(nd *multinode.Node) (err error) {
		c := cfg
		c.Cluster, c.Registry = nd.Cluster, opts.Registry
		reps[nd.Index], err = ddata.Start(context.Background(), nd.System, c)
		return err
	}
	mc, err := multinode.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	var nodes []*ddataNode
	for i, nd := range mc.Nodes() {
		nodes = append(nodes, &ddataNode{sys: nd.System, r: nd.Remote, c: nd.Cluster, rep: reps[i]})
	}
	return nodes, nil
}

// awaitReplicators waits until every replicator sees all the others: a WriteAll
// from each succeeds.
func awaitReplicators(nodes []*ddataNode) error {
	warm := ddata.NewKey[*ddata.GCounter]("warm-up")
	for _, nd := range nodes {
		self := nd.rep.SelfUniqueAddress()
		inc := func(c *ddata.GCounter) (*ddata.GCounter, error) { c.Increment(self, 1); return c, nil }
		err := waitUntil(30*time.Second, "the replicators to see each other", func() (bool, error) {
			return ddata.Update(context.Background(), nd.rep, warm, ddata.WriteAll(200*time.Millisecond), nil, inc) == nil, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func stopDdata(nodes []*ddataNode) {
	for _, nd := range nodes {
		shutdown(nd.sys)
	}
}

// waitUntil polls cond every 10ms until it holds or timeout passes.
func waitUntil(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s within %v", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var benchCounter = ddata.NewKey[*ddata.GCounter]("bench-counter")

// updater is the actor of ddata-update-local: it keeps window updates in flight
// and counts the replies.
type updater struct {
	rep     *ddata.Replicator
	modify  func(*ddata.GCounter) (*ddata.GCounter, error)
	n, sent int
	acked   int
	done    chan error
}

type startUpdates struct{}

func (u *updater) send(ctx actor.Context) {
	if err := ddata.SendUpdate(ctx, u.rep, benchCounter, ddata.WriteLocal(), nil, u.modify, nil); err != nil {
		u.done <- err
	}
	u.sent++
}

func (u *updater) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case startUpdates:
		for u.sent < min(u.n, 10_000) {
			u.send(ctx)
		}
	case ddata.UpdateResponse[*ddata.GCounter]:
		if m.Err != nil {
			u.done <- m.Err
			return
		}
		u.acked++
		if u.sent < u.n {
			u.send(ctx)
		}
		if u.acked == u.n {
			u.done <- nil
		}
	}
}

// runDdataUpdateLocal: n GCounter increments with WriteLocal from one actor (at most
// 10,000 in flight), until every reply is in; a second node must then see the
// count (delta propagation takes the deltas at its ticks, not per update).
func runDdataUpdateLocal(n int) (result, error) {
	nodes, err := startDdataCluster(2, ddata.Config{})
	if err != nil {
		return nil, err
	}
	defer stopDdata(nodes)
	rep := nodes[0].rep
	self := rep.SelfUniqueAddress()
	u := &updater{rep: rep, n: n, done: make(chan error, 1), modify: func(c *ddata.GCounter) (*ddata.GCounter, error) {
		c.Increment(self, 1)
		return c, nil
	}}
	ref, err := nodes[0].sys.Spawn(actor.PropsOf(func() actor.Actor { return u }), "updater")
	if err != nil {
		return nil, err
	}
	res, err := measure(n, func() error {
		if err := ref.Tell(startUpdates{}); err != nil {
			return err
		}
		return <-u.done
	})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = waitUntil(30*time.Second, "the count on the other node", func() (bool, error) {
		c, err := ddata.Read(context.Background(), nodes[1].rep, benchCounter, ddata.ReadLocal())
		if errors.Is(err, ddata.ErrNotFound) {
			return false, nil
		}
		return err == nil && c.Value() == uint64(n), err
	})
	if err != nil {
		return nil, err
	}
	res["replicated_seconds"] = round(time.Since(start).Seconds(), 3)
	return res, nil
}

// latencies returns p50 and p99 of ds in microseconds.
func latencies(ds []time.Duration) (p50, p99 float64) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Nanoseconds()) / 1e3 }
	return round(at(0.50), 1), round(at(0.99), 1)
}

// runDdataWriteMajority: n sequential WriteMajority increments on one of 5 nodes
// (each needs 2 acknowledgements of the 4 others), with their latencies.
func runDdataWriteMajority(n int) (result, error) {
	nodes, err := startDdataCluster(5, ddata.Config{})
	if err != nil {
		return nil, err
	}
	defer stopDdata(nodes)
	rep := nodes[0].rep
	self := rep.SelfUniqueAddress()
	inc := func(c *ddata.GCounter) (*ddata.GCounter, error) { c.Increment(self, 1); return c, nil }
	ctx := context.Background()
	level := ddata.WriteMajority(3*time.Second, 0)
	// The replicators learn of each other from their cluster subscriptions: wait
	// until a majority write succeeds quickly.
	if err := waitUntil(30*time.Second, "a fast majority write", func() (bool, error) {
		t0 := time.Now()
		err := ddata.Update(ctx, rep, benchCounter, ddata.WriteMajority(100*time.Millisecond, 0), nil, inc)
		return err == nil && time.Since(t0) < 50*time.Millisecond, nil
	}); err != nil {
		return nil, err
	}
	before, err := ddata.Read(ctx, rep, benchCounter, ddata.ReadLocal())
	if err != nil {
		return nil, err
	}
	ds := make([]time.Duration, 0, n)
	res, err := measure(n, func() error {
		for range n {
			t0 := time.Now()
			if err := ddata.Update(ctx, rep, benchCounter, level, nil, inc); err != nil {
				return err
			}
			ds = append(ds, time.Since(t0))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A majority read must see every write.
	c, err := ddata.Read(ctx, nodes[4].rep, benchCounter, ddata.ReadMajority(3*time.Second, 0))
	if err != nil {
		return nil, err
	}
	if c.Value() != before.Value()+uint64(n) {
		return nil, fmt.Errorf("a majority read sees %d, want %d", c.Value(), before.Value()+uint64(n))
	}
	res["p50_us"], res["p99_us"] = latencies(ds)
	return res, nil
}

func bytesOut(nodes []*ddataNode) uint64 {
	var sum uint64
	for _, nd := range nodes {
		sum += nd.r.Stats().BytesOut
	}
	return sum
}

// runDdataConverge: 5 nodes each add an element to every one of n ORSet keys
// (WriteLocal); the time until every node holds every key with all 5 elements.
func runDdataConverge(n int) (result, error) {
	cfg := ddata.Config{}
	nodes, err := startDdataCluster(5, cfg)
	if err != nil {
		return nil, err
	}
	defer stopDdata(nodes)
	ctx := context.Background()
	keys := make([]ddata.Key[*ddata.ORSet[string]], n)
	for i := range keys {
		keys[i] = ddata.NewKey[*ddata.ORSet[string]]("set-" + strconv.Itoa(i))
	}
	if err := awaitReplicators(nodes); err != nil {
		return nil, err
	}
	b0 := bytesOut(nodes)
	start := time.Now()
	errs := make(chan error, len(nodes))
	for i, nd := range nodes {
		go func() {
			self := nd.rep.SelfUniqueAddress()
			elem := "node-" + strconv.Itoa(i)
			add := func(s *ddata.ORSet[string]) (*ddata.ORSet[string], error) { s.Add(self, elem); return s, nil }
			for _, k := range keys {
				if err := ddata.Update(ctx, nd.rep, k, ddata.WriteLocal(), nil, add); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	updated := time.Since(start)
	err = waitUntil(60*time.Second, "convergence", func() (bool, error) {
		for _, nd := range nodes {
			for _, k := range keys {
				s, err := ddata.Read(ctx, nd.rep, k, ddata.ReadLocal())
				if err != nil && !errors.Is(err, ddata.ErrNotFound) {
					return false, err
				}
				if err != nil || s.Len() != len(nodes) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	return result{"n": n, "seconds": round(took.Seconds(), 3), "updates_seconds": round(updated.Seconds(), 3),
		"gossip_interval_seconds": ddata.DefaultGossipInterval.Seconds(), "bytes_sent": bytesOut(nodes) - b0}, nil
}

// runDdataIdleGossip: n GCounter keys on 3 nodes, replicated, then no updates: the
// bytes each node sends per second (digests only).
func runDdataIdleGossip(n int) (result, error) {
	nodes, err := startDdataCluster(3, ddata.Config{})
	if err != nil {
		return nil, err
	}
	defer stopDdata(nodes)
	ctx := context.Background()
	rep := nodes[0].rep
	self := rep.SelfUniqueAddress()
	inc := func(c *ddata.GCounter) (*ddata.GCounter, error) { c.Increment(self, 1); return c, nil }
	for i := range n {
		if err := ddata.Update(ctx, rep, ddata.NewKey[*ddata.GCounter]("idle-"+strconv.Itoa(i)), ddata.WriteLocal(), nil, inc); err != nil {
			return nil, err
		}
	}
	if err := waitUntil(120*time.Second, "every key everywhere", func() (bool, error) {
		for _, nd := range nodes {
			ks, err := ddata.Keys(ctx, nd.rep)
			if err != nil || len(ks) != n {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	time.Sleep(2 * ddata.DefaultGossipInterval) // deltas and the first gossip rounds settle
	const window = 10 * time.Second
	b0 := bytesOut(nodes)
	time.Sleep(window)
	per := float64(bytesOut(nodes)-b0) / float64(len(nodes)) / window.Seconds()
	return result{"n": n, "seconds": window.Seconds(), "bytes_per_sec_per_node": round(per, 0),
		"gossip_interval_seconds": ddata.DefaultGossipInterval.Seconds()}, nil
}

// runDdataORSetLarge: an ORSet of n elements: heap per element, the time to merge
// two such sets written on different nodes (half their elements shared), and the
// encoded size of one add's delta.
func runDdataORSetLarge(n int) (result, error) {
	a := cluster.UniqueAddress{Addr: "troupe://bench@127.0.0.1:1", UID: 1}
	b := cluster.UniqueAddress{Addr: "troupe://bench@127.0.0.1:2", UID: 2}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	x := ddata.NewORSet[string]()
	for i := range n {
		x.Add(a, "element-"+strconv.Itoa(i))
	}
	x.TakeDelta()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	perElem := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(n)

	y := ddata.NewORSet[string]()
	for i := n / 2; i < n+n/2; i++ {
		y.Add(b, "element-"+strconv.Itoa(i))
	}
	z := x.Clone()
	t0 := time.Now()
	z.Merge(y)
	merge := time.Since(t0)
	if z.Len() != n+n/2 {
		return nil, fmt.Errorf("merged set of %d, want %d", z.Len(), n+n/2)
	}

	reg := serialization.NewRegistry()
	if err := ddata.RegisterTypes(reg); err != nil {
		return nil, err
	}
	x.Add(a, "one-more")
	d, _ := x.TakeDelta()
	_, enc, err := reg.Marshal(d)
	if err != nil {
		return nil, err
	}
	_, full, err := reg.Marshal(x)
	if err != nil {
		return nil, err
	}
	runtime.KeepAlive(x)
	return result{"n": n, "bytes_per_element": round(perElem, 1), "merge_seconds": round(merge.Seconds(), 4),
		"delta_bytes": len(enc), "full_state_bytes": len(full)}, nil
}
