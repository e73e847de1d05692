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
