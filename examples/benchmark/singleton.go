package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/singleton"
)

// The singleton scenarios run three in-process nodes with the cluster scenarios'
// timing (cluster.TestTiming, stable-after 1.4 s) and the singleton's defaults.
func init() {
	scenarios["singleton-handover"] = scenario{1, runSingletonHandover}
	scenarios["singleton-failover"] = scenario{1, runSingletonFailover}
	scenarios["singleton-proxy"] = scenario{1_000_000, runSingletonProxy}
}

// whoAreYou is the probe the benchmark singleton answers with its node's index.
var whoAreYou = &wireAck{N: -1}

// benchSingleton answers a probe with the index of its node, and counts wireMsgs,
// acknowledging every ackEvery of them (and the last, at n) to their sender.
type benchSingleton struct {
	node     int
	n, count int64
}

func (s *benchSingleton) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wireAck:
		if m.N == -1 {
			_ = ctx.Respond(&wireAck{N: int64(s.node)})
		}
	case *wireMsg:
		s.count++
		if s.count%10_000 == 0 || s.count == s.n {
			_ = ctx.Respond(&wireAck{N: s.count})
		}
	}
}

// singletonCluster forms three nodes, starts the benchmark singleton's manager on each
// (counting to n) and a proxy on the youngest, and waits until the proxy reaches the
// singleton on the oldest.
func singletonCluster(n int64) ([]*clusterNode, actor.Ref, error) {
	nodes, err := formCluster(3)
	if err != nil {
		return nil, actor.Ref{}, err
	}
	for i, node := range nodes {
		props := actor.PropsOf(func() actor.Actor { return &benchSingleton{node: i, n: n} })
		if _, err := singleton.Start(node.sys, singleton.Config{Name: "bench", Props: props}); err != nil {
			stopCluster(nodes)
			return nil, actor.Ref{}, err
		}
	}
	proxy, err := singleton.Proxy(nodes[2].sys, singleton.ProxyConfig{Name: "bench"})
	if err != nil {
		stopCluster(nodes)
		return nil, actor.Ref{}, err
	}
	if _, err := awaitSingleton(proxy, -1, 30*time.Second); err != nil {
		stopCluster(nodes)
		return nil, actor.Ref{}, err
	}
	return nodes, proxy, nil
}

// awaitSingleton asks through proxy, every 10 ms, until the singleton answers from a
// node other than not, and returns that node.
func awaitSingleton(proxy actor.Ref, not int64, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		a, err := actor.Ask[*wireAck](ctx, proxy, whoAreYou)
		cancel()
		if err == nil && a.N != not {
			return a.N, nil
		}
		if err != nil && !errors.Is(err, actor.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return 0, err
		}
	}
	return 0, fmt.Errorf("the singleton did not answer from another node than %d within %v", not, timeout)
}

// runSingletonHandover: the oldest of three shuts down gracefully; the time until the
// new instance answers through a proxy on the youngest.
func runSingletonHandover(int) (result, error) {
	nodes, proxy, err := singletonCluster(0)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- nodes[0].sys.Shutdown(context.Background()) }()
	at, err := awaitSingleton(proxy, 0, 30*time.Second)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	if err := <-done; err != nil {
		return nil, fmt.Errorf("shutdown of the oldest: %w", err)
	}
	return result{"n": 1, "seconds": round(took.Seconds(), 3), "ns_per_op": float64(took.Nanoseconds()), "new_node": at}, nil
}

// runSingletonFailover: the oldest of three crashes (all its links cut at once, no
// leave: see crash); the time until the new instance answers through a proxy on the youngest.
func runSingletonFailover(int) (result, error) {
	nodes, proxy, err := singletonCluster(0)
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	start := time.Now()
	nodes[0].crash()
	at, err := awaitSingleton(proxy, 0, 60*time.Second)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	return result{"n": 1, "seconds": round(took.Seconds(), 3), "ns_per_op": float64(took.Nanoseconds()),
		"new_node": at, "stable_after_seconds": stableAfter.Seconds()}, nil
}

// runSingletonProxy: n 100-byte tells through a proxy on the youngest node to the
// singleton on the oldest, against n remote tells between the same two nodes to a
// plain actor, in the same run (the proxy first, then the floor); the singleton and the
// plain actor acknowledge every 10,000 messages, and at most 60,000 are unacknowledged.
func runSingletonProxy(n int) (result, error) {
	nodes, proxy, err := singletonCluster(int64(n))
	if err != nil {
		return nil, err
	}
	defer stopCluster(nodes)
	from, to := nodes[2].sys, nodes[0].sys
	var plainCount int64
	plain, err := to.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wireMsg); ok {
			plainCount++
			if plainCount%10_000 == 0 || plainCount == int64(n) {
				_ = ctx.Respond(&wireAck{N: plainCount})
			}
		}
	}), "plain")
	if err != nil {
		return nil, err
	}
	target, err := from.Resolve(plain.URI())
	if err != nil {
		return nil, err
	}
	viaProxy, err := streamTo(from, proxy, n)
	if err != nil {
		return nil, fmt.Errorf("through the proxy: %w", err)
	}
	direct, err := streamTo(from, target, n)
	if err != nil {
		return nil, fmt.Errorf("remote tell: %w", err)
	}
	viaProxy["floor_ops_per_sec"] = direct["ops_per_sec"]
	viaProxy["pct_of_floor"] = round(100*viaProxy["ops_per_sec"].(float64)/direct["ops_per_sec"].(float64), 1)
	return viaProxy, nil
}

// streamTo sends n wireMsgs from an actor of sys to target, keeping at most 60,000
// unacknowledged, and times until the last is acknowledged.
func streamTo(sys *actor.System, target actor.Ref, n int) (result, error) {
	const window = 60_000
	acked := make(chan int64, 1024)
	acker, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireAck); ok && m.N >= 0 {
			acked <- m.N
		}
	}), "")
	if err != nil {
		return nil, err
	}
	defer func() { _ = sys.Stop(acker) }()
	msg := &wireMsg{Body: make([]byte, 100)}
	return measure(n, func() error {
		var have int64
		for i := int64(1); i <= int64(n); i++ {
			for i-have > window {
				if have, err = next(acked); err != nil {
					return err
				}
			}
			if err := target.Send(msg, acker); err != nil {
				return err
			}
		}
		return waitAck(acked, int64(n))
	})
}
