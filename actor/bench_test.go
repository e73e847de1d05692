package actor_test

import (
	"context"
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
