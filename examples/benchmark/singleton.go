package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/hooks"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
)

// The singleton scenarios: in-process nodes with the cluster scenarios' timing
// (cluster.TestTiming, stable-after 1.4s; the down-removal margin is stable-after, its
// default).
//
//   - singleton-handover: the oldest of three leaves gracefully; the time from its
//     shutdown until the new instance answers an ask through a proxy on the youngest.
//   - singleton-failover: the oldest of three crashes; the time from the crash until
//     the new instance answers an ask through a proxy on the youngest.
//   - singleton-proxy: 100-byte messages told through a proxy on one node to the
//     singleton on the other, against remote tells between the same two nodes in the
//     same run (alternated, best of two each).

// whoAreYou asks the benchmark singleton where it runs; it answers with iAm.
type whoAreYou struct{}

// iAm answers whoAreYou with the singleton's member's address.
type iAm struct{ Addr string }

// singletonRegistry registers the singleton scenarios' messages.
func singletonRegistry() (*serialization.Registry, error) {
	reg := serialization.NewRegistry()
	return reg, errors.Join(
		serialization.Register[*wireMsg](reg, "bench.WireMsg"),
		serialization.Register[*wireAck](reg, "bench.WireAck"),
		serialization.Register[whoAreYou](reg, "bench.WhoAreYou"),
		serialization.Register[iAm](reg, "bench.IAm"),
	)
}

// startSingletonCluster forms an n-node cluster whose transports share reg, with the
// backpressure the throughput scenario needs.
func startSingletonCluster(n int, reg *serialization.Registry) ([]*clusterNode, error) {
	var nodes []*clusterNode
	for i := range n {
		sys, err := actor.New(fmt.Sprintf("node%d", i), actor.Config{})
		if err != nil {
			stopCluster(nodes)
			return nil, err
		}
		r, err := remote.Start(sys, remote.Config{Registry: reg, BackpressureTimeout: 10 * time.Second})
		if err != nil {
			shutdown(sys)
			stopCluster(nodes)
			return nil, err
		}
		cfg := cluster.Config{
			JoinRetryInterval: 50 * time.Millisecond,
			Timing:            cluster.TestTiming(),
			Downing:           cluster.DowningConfig{StableAfter: stableAfter},
		}
		if i > 0 {
			cfg.SeedNodes = []string{nodes[0].c.GossipAddress()}
		}
		c, err := cluster.Start(sys, cfg)
		if err != nil {
			shutdown(sys)
			stopCluster(nodes)
			return nil, err
		}
		nodes = append(nodes, &clusterNode{sys: sys, r: r, c: c})
	}
	err := waitFor(nodes, 60*time.Second, func(st cluster.CurrentClusterState) bool {
		up := 0
		for _, m := range st.Members {
			if m.Status == cluster.Up {
				up++
			}
		}
		return up == n
	})
	if err != nil {
		stopCluster(nodes)
		return nil, err
	}
	return nodes, nil
}

// whoProps is the hand-over scenarios' singleton: it answers whoAreYou.
func whoProps(addr string) *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(whoAreYou); ok {
			_ = ctx.Respond(iAm{Addr: addr})
		}
	})
}

// moveSetup forms three nodes with a singleton manager each, returns them oldest
// first, with a proxy on the youngest, once that proxy reaches the singleton on the
// oldest.
func moveSetup() (nodes []*clusterNode, proxy actor.Ref, err error) {
	reg, err := singletonRegistry()
	if err != nil {
		return nil, actor.Ref{}, err
	}
	if nodes, err = startSingletonCluster(3, reg); err != nil {
		return nil, actor.Ref{}, err
	}
	// Nodes that became Up together are ordered by their ages, not their start.
	age := make(map[cluster.UniqueAddress]cluster.Member)
	for _, m := range nodes[0].c.State().Members {
		age[m.Unique] = m
	}
	slices.SortFunc(nodes, func(a, b *clusterNode) int {
		ma, mb := age[a.c.SelfUniqueAddress()], age[b.c.SelfUniqueAddress()]
		switch {
		case ma.IsOlderThan(mb):
			return -1
		case mb.IsOlderThan(ma):
			return 1
		}
		return 0
	})
	for _, n := range nodes {
		addr := n.c.SelfUniqueAddress().Addr
		if _, err := singleton.Start(n.sys, singleton.Config{Name: "bench", Props: whoProps(addr)}); err != nil {
			stopCluster(nodes)
			return nil, actor.Ref{}, err
		}
	}
	proxy, err = singleton.Proxy(nodes[2].sys, singleton.ProxyConfig{Name: "bench", IdentificationInterval: 100 * time.Millisecond})
	if err == nil {
		_, err = awaitAnswerFrom(proxy, nodes[0].c.SelfUniqueAddress().Addr, 30*time.Second, time.Second)
	}
	if err != nil {
		stopCluster(nodes)
		return nil, actor.Ref{}, err
	}
	return nodes, proxy, nil
}

// awaitAnswerFrom asks through proxy, each ask bounded by per, until the singleton on
// addr answers, and returns when it did.
func awaitAnswerFrom(proxy actor.Ref, addr string, timeout, per time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), per)
		a, err := actor.Ask[iAm](ctx, proxy, whoAreYou{})
		cancel()
		if err == nil && a.Addr == addr {
			return time.Now(), nil
		}
	}
	return time.Time{}, fmt.Errorf("the singleton on %s did not answer within %v", addr, timeout)
}

// oneEvent is the result of a scenario that times one event: n 1, so that ns_per_op
// is the event's time.
func oneEvent(took time.Duration) result {
	return result{"n": 1, "seconds": round(took.Seconds(), 3), "ns_per_op": took.Nanoseconds(),
		"stable_after_seconds": stableAfter.Seconds()}
}

// runSingletonHandover times a graceful hand-over.
func runSingletonHandover(int) (result, error) {
	nodes, proxy, err := moveSetup()
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		shutdown(nodes[0].sys) // hands the singleton over, then leaves
	}()
	// Nothing sent through the proxy during a hand-over is lost: one ask at a time,
	// each bounded generously, until the new instance answers.
	at, err := awaitAnswerFrom(proxy, nodes[1].c.SelfUniqueAddress().Addr, 30*time.Second, 5*time.Second)
	<-done
	if err != nil {
		return nil, err
	}
	return oneEvent(at.Sub(start)), nil
}

// runSingletonFailover times a take-over after a crash, and when the youngest node
// saw the crashed member removed and its down-removal margin pass: the singleton's
// own share is the time after the margin.
func runSingletonFailover(int) (result, error) {
	nodes, proxy, err := moveSetup()
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	victim := nodes[0].c.SelfUniqueAddress()
	removed, passed := make(chan time.Time, 1), make(chan time.Time, 1)
	watcher, err := nodes[2].sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch e := ctx.Message().(type) {
		case cluster.MemberRemoved:
			if e.Member.Unique == victim {
				removed <- time.Now()
			}
		case cluster.RemovalMarginPassed:
			if e.Member.Unique == victim {
				passed <- time.Now()
			}
		}
	}), "failover-watcher")
	if err != nil {
		return nil, err
	}
	if err := nodes[2].c.Subscribe(watcher); err != nil {
		return nil, err
	}
	start := time.Now()
	hooks.ClusterOf(nodes[0].sys).Crash()
	hooks.RemoteOf(nodes[0].sys).Abort()
	// Asks sent to the crashed member are lost: each is bounded by 50ms.
	at, err := awaitAnswerFrom(proxy, nodes[1].c.SelfUniqueAddress().Addr, 60*time.Second, 50*time.Millisecond)
	if err != nil {
		return nil, err
	}
	r := oneEvent(at.Sub(start))
	select {
	case t := <-removed:
		r["removed_seconds"] = round(t.Sub(start).Seconds(), 3)
	default:
	}
	select {
	case t := <-passed:
		r["margin_passed_seconds"] = round(t.Sub(start).Seconds(), 3)
		r["after_margin_seconds"] = round(at.Sub(t).Seconds(), 3)
	default:
	}
	return r, nil
}

// runSingletonProxy measures tells through a proxy against remote tells between the
// same two nodes.
func runSingletonProxy(n int) (result, error) {
	reg, err := singletonRegistry()
	if err != nil {
		return nil, err
	}
	nodes, err := startSingletonCluster(2, reg)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	receiver, sender := nodes[0], nodes[1] // the first node is the oldest
	var count int64
	sinkProps := actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireMsg); ok {
			if m.Seq == 0 { // warm-up
				_ = ctx.Respond(&wireAck{})
				return
			}
			count++
			if count%10_000 == 0 || count == int64(n) {
				_ = ctx.Respond(&wireAck{N: count})
			}
		}
	})
	for _, node := range nodes {
		if _, err := singleton.Start(node.sys, singleton.Config{Name: "sink", Props: sinkProps}); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := singleton.Get(receiver.sys, "sink").AwaitStatus(ctx, func(s singleton.Status) bool { return s.Running }); err != nil {
		return nil, err
	}
	proxy, err := singleton.Proxy(sender.sys, singleton.ProxyConfig{Name: "sink"})
	if err != nil {
		return nil, err
	}
	// The remote tells go to an actor of the same behaviour (it shares the count,
	// which each run resets) on the singleton's node.
	sink, err := receiver.sys.Spawn(sinkProps, "plain-sink")
	if err != nil {
		return nil, err
	}
	direct, err := sender.sys.Resolve(sink.URI())
	if err != nil {
		return nil, err
	}
	acked := make(chan int64, 1024)
	acker, err := sender.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireAck); ok {
			acked <- m.N
		}
	}), "acker")
	if err != nil {
		return nil, err
	}
	var best, bestDirect result
	for range 2 {
		for _, target := range []actor.Ref{direct, proxy} {
			count = 0 // both sinks are idle between runs
			r, err := tellRun(n, target, acker, acked)
			if err != nil {
				return nil, err
			}
			if target == proxy {
				best = better(best, r)
			} else {
				bestDirect = better(bestDirect, r)
			}
		}
	}
	best["remote_tell_ops_per_sec"] = bestDirect["ops_per_sec"]
	best["ratio_to_remote_tell"] = round(best["ops_per_sec"].(float64)/bestDirect["ops_per_sec"].(float64), 3)
	return best, nil
}

func better(a, b result) result {
	if a == nil || b["ops_per_sec"].(float64) > a["ops_per_sec"].(float64) {
		return b
	}
	return a
}

// tellRun sends n 100-byte messages to target, at most a window unacknowledged, and
// times until all are acknowledged; a warm-up message comes first.
func tellRun(n int, target, acker actor.Ref, acked chan int64) (result, error) {
	const window = 60_000
	body := make([]byte, 100)
	if err := target.Send(&wireMsg{Body: body}, acker); err != nil {
		return nil, err
	}
	if err := waitAck(acked, 0); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	return measure(n, func() error {
		var have int64
		for i := int64(1); i <= int64(n); i++ {
			for i-have > window {
				var err error
				if have, err = next(acked); err != nil {
					return err
				}
			}
			if err := target.Send(&wireMsg{Seq: i, Body: body}, acker); err != nil {
				return err
			}
		}
		for have < int64(n) {
			var err error
			if have, err = next(acked); err != nil {
				return err
			}
		}
		return nil
	})
}
