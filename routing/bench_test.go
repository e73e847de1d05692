package routing_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
)

// The router benchmarks share one shape: one sender tells b.N messages, each with a
// key, and the clock stops when the actors have handled them all (a shared counter
// of handled messages, checked against b.N). BenchmarkTellOneActor is the floor: the
// same messages told to one actor.

type benchMsg struct{ key string }

func (m *benchMsg) RoutingKey() string { return m.key }

func benchMessages() []*benchMsg {
	msgs := make([]*benchMsg, 1024)
	for i := range msgs {
		msgs[i] = &benchMsg{key: "entity-" + strconv.Itoa(i)}
	}
	return msgs
}

func benchSystem(b *testing.B) *actor.System {
	sys, err := actor.New("bench", actor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	return sys
}

// benchFlush follows the last benchMsg to every actor: it adds the actor's count to
// the shared one.
type benchFlush struct{}

// counting returns Props of an actor that counts benchMsgs by itself and adds its
// count to handled on benchFlush, closing done when handled reaches n. Counting apart,
// rather than in the shared counter, keeps the actors of a pool from contending for it
// on every message, which the single actor of the floor never does.
func counting(handled *atomic.Int64, n int64, done chan struct{}) *actor.Props {
	return actor.PropsOf(func() actor.Actor { return &counter{handled: handled, n: n, done: done} })
}

type counter struct {
	handled *atomic.Int64
	n       int64
	done    chan struct{}
	mine    int64
}

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *benchMsg:
		c.mine++
	case benchFlush:
		// Only the flush that brings the count to n closes done: one with nothing to
		// add may come after it.
		if c.mine > 0 && c.handled.Add(c.mine) == c.n {
			close(c.done)
		}
		c.mine = 0
	}
}

// benchTell tells b.N messages with tell, then flush, and waits until they are all
// handled.
func benchTell(b *testing.B, tell func(msg *benchMsg) error, flush func() error, done chan struct{}, handled *atomic.Int64) {
	msgs := benchMessages()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := tell(msgs[i&1023]); err != nil {
			b.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	if got := handled.Load(); got != int64(b.N) {
		b.Fatalf("handled %d of %d", got, b.N)
	}
}

func BenchmarkTellOneActor(b *testing.B) {
	sys := benchSystem(b)
	var handled atomic.Int64
	done := make(chan struct{})
	ref, err := sys.Spawn(counting(&handled, int64(b.N), done), "sink")
	if err != nil {
		b.Fatal(err)
	}
	benchTell(b, func(m *benchMsg) error { return ref.Tell(m) }, func() error { return ref.Tell(benchFlush{}) }, done, &handled)
}

func benchPool(b *testing.B, logic routing.Logic, viaRef bool) { benchPoolOf(b, 8, logic, viaRef) }

func benchPoolOf(b *testing.B, size int, logic routing.Logic, viaRef bool) {
	sys := benchSystem(b)
	var handled atomic.Int64
	done := make(chan struct{})
	r, err := routing.NewPool(context.Background(), sys, routing.PoolConfig{
		Routee: counting(&handled, int64(b.N), done),
		Size:   size,
		Logic:  logic,
	})
	if err != nil {
		b.Fatal(err)
	}
	if viaRef {
		ref := r.Ref()
		benchTell(b, func(m *benchMsg) error { return ref.Tell(m) }, func() error { return ref.Tell(routing.Broadcast{Msg: benchFlush{}}) }, done, &handled)
		return
	}
	benchTell(b, func(m *benchMsg) error { return r.Tell(m) }, func() error { return r.Tell(routing.Broadcast{Msg: benchFlush{}}) }, done, &handled)
}

func BenchmarkRoundRobinPool8(b *testing.B) { benchPool(b, routing.RoundRobin(), false) }

func BenchmarkConsistentHashPool8(b *testing.B) {
	benchPool(b, routing.ConsistentHashing(routing.ConsistentHashingConfig{}), false)
}

// BenchmarkRoundRobinPool8ViaRef sends to the router actor's Ref: one more hop.
func BenchmarkRoundRobinPool8ViaRef(b *testing.B) { benchPool(b, routing.RoundRobin(), true) }

func BenchmarkRandomPool8(b *testing.B) { benchPool(b, routing.Random(), false) }

func BenchmarkSmallestMailboxPool8(b *testing.B) { benchPool(b, routing.SmallestMailbox(), false) }

// BenchmarkRoundRobinPool1 is the cost of routing alone: a pool of one.
func BenchmarkRoundRobinPool1(b *testing.B) { benchPoolOf(b, 1, routing.RoundRobin(), false) }

// BenchmarkSelect is the logics' own cost: choosing among 8 routees, with no send.
func BenchmarkSelect(b *testing.B) {
	sys := benchSystem(b)
	routees := make([]actor.Ref, 8)
	for i := range routees {
		ref, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "")
		if err != nil {
			b.Fatal(err)
		}
		routees[i] = ref
	}
	msgs := benchMessages()
	for _, l := range []struct {
		name  string
		logic routing.Logic
	}{
		{"RoundRobin", routing.RoundRobin()},
		{"Random", routing.Random()},
		{"ConsistentHash", routing.ConsistentHashing(routing.ConsistentHashingConfig{})},
		{"SmallestMailbox", routing.SmallestMailbox()},
	} {
		b.Run(l.name, func(b *testing.B) {
			s := l.logic.Prepare(routees)
			b.ReportAllocs()
			for i := range b.N {
				if _, err := s.Select(msgs[i&1023]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
