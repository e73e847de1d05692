package actor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
)

type benchMsg struct{}

func benchSystem(b *testing.B) *actor.System {
	sys, err := actor.New("bench", actor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	return sys
}

// BenchmarkTell measures one sender to one actor, timed until all are processed.
func BenchmarkTell(b *testing.B) {
	sys := benchSystem(b)
	done := make(chan struct{})
	n := b.N
	count := 0
	ref, _ := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*benchMsg); ok {
			count++
			if count == n {
				close(done)
			}
		}
	}), "sink")
	msg := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	for range n {
		_ = ref.Tell(msg)
	}
	<-done
}

// BenchmarkAsk measures sequential request/response round trips.
func BenchmarkAsk(b *testing.B) {
	sys := benchSystem(b)
	ref, _ := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*benchMsg); ok {
			ctx.Respond(m)
		}
	}), "echo")
	msg := &benchMsg{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := actor.Ask[*benchMsg](ctx, ref, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpawn measures spawning an idle actor until it has handled Started.
func BenchmarkSpawn(b *testing.B) {
	sys := benchSystem(b)
	started := make(chan struct{}, 1024)
	props := actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(actor.Started); ok {
			started <- struct{}{}
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if _, err := sys.Spawn(props, ""); err != nil {
				panic(err)
			}
		}
	}()
	for range b.N {
		<-started
	}
}

// BenchmarkPingPong measures a message bouncing between two actors: each hop makes an
// idle actor runnable, so each goes through the dispatcher's run queue.
func BenchmarkPingPong(b *testing.B) {
	sys := benchSystem(b)
	done := make(chan struct{})
	var peer [2]actor.Ref
	for i := range peer {
		peer[i], _ = sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
			if n, ok := ctx.Message().(int); ok {
				if n == 0 {
					close(done)
					return
				}
				_ = peer[1-i].Tell(n - 1)
			}
		}), "")
	}
	b.ReportAllocs()
	b.ResetTimer()
	_ = peer[0].Tell(b.N)
	<-done
}

// BenchmarkFanOut measures one sender telling 1,000 actors one message each, in waves
// that each wait until the last has been handled, so that every message finds its
// actor idle and makes it runnable through the dispatcher's run queue.
func BenchmarkFanOut(b *testing.B) {
	sys := benchSystem(b)
	const actors = 1000
	var count atomic.Int64
	wave := make(chan struct{}, 1)
	props := actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*benchMsg); ok && count.Add(1)%actors == 0 {
			wave <- struct{}{}
		}
	})
	refs := make([]actor.Ref, actors)
	for i := range refs {
		refs[i], _ = sys.Spawn(props, "")
	}
	msg := &benchMsg{}
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += actors {
		for _, ref := range refs {
			_ = ref.Tell(msg)
		}
		<-wave
	}
}
