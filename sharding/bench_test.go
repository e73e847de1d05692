package sharding

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// benchHome places every shard in the region of the node at addr while it has one,
// and moves none.
type benchHome struct{ addr string }

func (h benchHome) AllocateShard(req AllocationRequest) (RegionID, error) {
	for _, r := range req.Regions {
		if r.Node.Address.Addr == h.addr {
			return r.Region, nil
		}
	}
	if len(req.Regions) > 0 { // the node is leaving: anywhere else
		return req.Regions[0].Region, nil
	}
	return "", fmt.Errorf("%w: no region on %s yet", ErrNoRegion, h.addr)
}

func (benchHome) Rebalance(RebalanceRequest) ([]ShardID, error) { return nil, nil }

// benchMsg is the benchmarks' message, as examples/benchmark's: a sequence number and
// 100 bytes.
type benchMsg struct {
	Seq  int64
	Body []byte
}

// benchRegistry is the tests' registry, and benchMsg.
func benchRegistry(b *testing.B) *serialization.Registry {
	reg := testRegistry(b)
	if err := serialization.Register[*benchMsg](reg, "test.benchMsg"); err != nil {
		b.Fatal(err)
	}
	return reg
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEntityRefTellRemote tells through EntityRefs on one node to 1,000 entities
// on another, round robin, at most 60,000 unacknowledged; cpu-ns/op is the CPU time
// of the whole process (both nodes) per message.
func BenchmarkEntityRefTellRemote(b *testing.B) {
	const entities, window = 1000, 60_000
	var got atomic.Int64
	signal := make(chan struct{}, 1)
	count := actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*benchMsg); ok && got.Add(1)%1000 == 0 {
			select {
			case signal <- struct{}{}:
			default:
			}
		}
	})
	reg := benchRegistry(b)
	mc := multinode.Start(b, multinode.Options{Nodes: 2, Registry: reg})
	journal := memjournal.New()
	b.Cleanup(func() { _ = journal.Close() })
	b.Cleanup(func() { // before the test kit's: youngest first, the coordinator last
		for i := 1; i >= 0; i-- {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			if err := mc.Node(i).System.Shutdown(ctx); err != nil {
				b.Logf("shutdown of node %d: %v", i, err)
			}
			cancel()
		}
	})
	home := benchHome{addr: mc.Node(1).System.Address().String()}
	for i := range 2 {
		sys := mc.Node(i).System
		if _, err := persistence.Start(sys, persistence.Config{Journal: journal, Snapshots: journal, Registry: reg}); err != nil {
			b.Fatal(err)
		}
		s, err := Start(sys, Config{Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		c := persistentCounterConfig()
		c.EntityFactory, c.Entity = nil, count
		c.RememberEntities = false
		c.AllocationStrategy = home
		c.MinMembers = 2
		if _, err := s.Start("Counter", c); err != nil {
			b.Fatal(err)
		}
	}
	refs := make([]EntityRef[any], entities)
	for i := range refs {
		var err error
		if refs[i], err = EntityRefFor[any](mc.Node(0).System, "Counter", EntityID(fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	await := func(want int64) {
		for got.Load() < want {
			select {
			case <-signal:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	msg := &benchMsg{Body: make([]byte, 100)}
	for _, r := range refs { // start every entity, learn every home
		if err := r.Tell(msg); err != nil {
			b.Fatal(err)
		}
	}
	await(entities)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	base := got.Load()
	for i := range b.N {
		for int64(i)-(got.Load()-base) > window {
			select {
			case <-signal:
			case <-time.After(time.Millisecond):
			}
		}
		if err := refs[i%entities].Tell(msg); err != nil {
			b.Fatal(err)
		}
	}
	await(base + int64(b.N))
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkRemoteTellFloor tells from one node to one plain actor on another, as
// BenchmarkEntityRefTellRemote does through EntityRefs: its floor.
func BenchmarkRemoteTellFloor(b *testing.B) {
	const window = 60_000
	var got atomic.Int64
	signal := make(chan struct{}, 1)
	reg := benchRegistry(b)
	mc := multinode.Start(b, multinode.Options{Nodes: 2, Registry: reg})
	sink, err := mc.Node(1).System.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*benchMsg); ok && got.Add(1)%1000 == 0 {
			select {
			case signal <- struct{}{}:
			default:
			}
		}
	}), "sink")
	if err != nil {
		b.Fatal(err)
	}
	target, err := mc.Node(0).System.Resolve(sink.URI())
	if err != nil {
		b.Fatal(err)
	}
	msg := &benchMsg{Body: make([]byte, 100)}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		for int64(i)-got.Load() > window {
			select {
			case <-signal:
			case <-time.After(time.Millisecond):
			}
		}
		if err := target.Tell(msg); err != nil {
			b.Fatal(err)
		}
	}
	for got.Load() < int64(b.N) {
		select {
		case <-signal:
		case <-time.After(50 * time.Millisecond):
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
