package singleton_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// BenchMsg is the benchmarks' message: 100 bytes of body and a sequence number.
type BenchMsg struct {
	Seq  int64
	Body []byte
}

// BenchAck tells the sender how many messages the receiver has.
type BenchAck struct{ N int64 }

// benchTell sends b.N messages to target from a goroutine, at most window
// unacknowledged, and waits until the receiver has them all.
func benchTell(b *testing.B, target, acker actor.Ref, acked <-chan int64) {
	const window = 60_000
	body := make([]byte, 100)
	msg := &BenchMsg{Body: body}
	for warm := false; !warm; {
		if err := target.Send(msg, acker); err != nil {
			b.Fatal(err)
		}
		select {
		case <-acked:
			warm = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
	var have int64
	for i := int64(1); i <= int64(b.N); i++ {
		for i-have > window {
			have = <-acked
		}
		if err := target.Send(&BenchMsg{Seq: i, Body: body}, acker); err != nil {
			b.Fatal(err)
		}
	}
	for have < int64(b.N) {
		select {
		case have = <-acked:
		case <-time.After(30 * time.Second):
			b.Fatalf("%d of %d acknowledged", have, b.N)
		}
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sinkProps counts BenchMsg and acknowledges every 10,000th and the nth.
func sinkProps(n int) *actor.Props {
	count := 0
	return actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*BenchMsg); ok {
			if m.Seq == 0 { // warm-up
				_ = ctx.Respond(&BenchAck{})
				return
			}
			count++
			if count%10_000 == 0 || count == n {
				_ = ctx.Respond(&BenchAck{N: int64(count)})
			}
		}
	})
}

func benchCluster(b *testing.B) *multinode.Cluster {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*BenchMsg](reg, "bench.Msg"); err != nil {
		b.Fatal(err)
	}
	if err := serialization.Register[*BenchAck](reg, "bench.Ack"); err != nil {
		b.Fatal(err)
	}
	return multinode.Start(b, multinode.Options{Nodes: 2, Registry: reg, ConfigureRemote: func(_ int, c *remote.Config) {
		c.BackpressureTimeout = 10 * time.Second
	}})
}

func benchAcker(b *testing.B, sys *actor.System) (actor.Ref, chan int64) {
	acked := make(chan int64, 1024)
	acker, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*BenchAck); ok {
			acked <- m.N
		}
	}), "")
	if err != nil {
		b.Fatal(err)
	}
	return acker, acked
}

// BenchmarkProxyTell sends through a proxy on one node to the singleton on another.
func BenchmarkProxyTell(b *testing.B) {
	c := benchCluster(b)
	for _, n := range c.Nodes() {
		if _, err := singleton.Start(n.System, singleton.Config{Props: sinkProps(b.N)}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := singleton.Get(c.Node(0).System, "").AwaitStatus(ctx, func(s singleton.Status) bool { return s.Oldest != (cluster.UniqueAddress{}) })
	if err != nil {
		b.Fatal(err)
	}
	sender := c.Node(1)
	if st.Oldest == sender.Cluster.SelfUniqueAddress() {
		sender = c.Node(0)
	}
	proxy, err := singleton.Proxy(sender.System, singleton.ProxyConfig{})
	if err != nil {
		b.Fatal(err)
	}
	acker, acked := benchAcker(b, sender.System)
	benchTell(b, proxy, acker, acked)
}

// BenchmarkRemoteTell sends to an actor on another node, the floor of
// BenchmarkProxyTell.
func BenchmarkRemoteTell(b *testing.B) {
	c := benchCluster(b)
	sink, err := c.Node(0).System.Spawn(sinkProps(b.N), "sink")
	if err != nil {
		b.Fatal(err)
	}
	target, err := c.Node(1).System.Resolve(sink.URI())
	if err != nil {
		b.Fatal(err)
	}
	acker, acked := benchAcker(b, c.Node(1).System)
	benchTell(b, target, acker, acked)
}
