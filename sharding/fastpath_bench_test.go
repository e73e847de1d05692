package sharding

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// benchFastPath starts sharding on one system with the asker entity and returns an
// EntityRef of one of its entities that runs, so that messages through it take the
// fast path (fastpath.go).
func benchFastPath(b *testing.B) EntityRef[string] {
	b.Helper()
	sys := testkit.NewSystem(b)
	s, err := Start(sys, Config{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Start("Counter", EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return asker{} })}); err != nil {
		b.Fatal(err)
	}
	ref, err := EntityRefFor[string](sys, "Counter", "e")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 { // the first starts the entity through the region
		if _, err := Ask[string](ctx, ref, "ping"); err != nil {
			b.Fatal(err)
		}
	}
	return ref
}

// BenchmarkFastPathAsk asks a local entity through an EntityRef and waits for the
// reply (Ask): the fast path's deferred ask, run on the asking goroutine, and Await.
func BenchmarkFastPathAsk(b *testing.B) {
	ref := benchFastPath(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Ask[string](ctx, ref, "ping"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFastPathEntityRefAsk asks through EntityRef.Ask, whose future watches its
// context, and waits with Result.
func BenchmarkFastPathEntityRefAsk(b *testing.B) {
	ref := benchFastPath(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := ref.Ask(ctx, "ping").Result(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFastPathTell tells a local entity through an EntityRef.
func BenchmarkFastPathTell(b *testing.B) {
	ref := benchFastPath(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := ref.Tell("silence"); err != nil {
			b.Fatal(err)
		}
	}
}
