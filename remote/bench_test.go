package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// BenchmarkRemoteAsk measures sequential asks between two systems in this process;
// examples/benchmark has the headline remote-tell and remote-ask scenarios.
func BenchmarkRemoteAsk(b *testing.B) {
	reg := registry(b)
	a, c := startNode(b, "a", reg), startNode(b, "b", reg)
	echo, err := c.sys.Spawn(echoProps(), "echo")
	if err != nil {
		b.Fatal(err)
	}
	ref := a.remoteRef(b, echo)
	msg := &ping{N: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := actor.Ask[*pong](ctx, ref, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemoteTell measures one sender streaming small messages to an actor in
// another system. The receiver reports every 1,000 messages and the sender keeps at
// most 20,000 unreported, so the outbound queue never overflows.
func BenchmarkRemoteTell(b *testing.B) {
	const every, window = 1000, 20_000
	reg := registry(b)
	a, c := startNode(b, "a", reg), startNode(b, "b", reg)
	got := make(chan int, 1024)
	count := 0
	sink, err := c.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*pong); ok {
			count++
			if count%every == 0 {
				got <- count
			}
		}
	}), "sink")
	if err != nil {
		b.Fatal(err)
	}
	ref := a.remoteRef(b, sink)
	msg := &pong{N: 1}
	// Warm up the connection and the dictionaries.
	for range every {
		if err := ref.Tell(msg); err != nil {
			b.Fatal(err)
		}
	}
	have := <-got
	sent := every
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for sent-have >= window {
			select {
			case have = <-got:
			case <-time.After(10 * time.Second):
				b.Fatalf("no progress: sent %d, received %d", sent, have)
			}
		}
		if err := ref.Tell(msg); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	for ; sent%every != 0; sent++ { // complete the last report
		if err := ref.Tell(msg); err != nil {
			b.Fatal(err)
		}
	}
	for have < sent {
		select {
		case have = <-got:
		case <-time.After(10 * time.Second):
			b.Fatalf("no progress: sent %d, received %d", sent, have)
		}
	}
}
