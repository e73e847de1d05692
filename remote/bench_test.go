package remote_test

import (
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
	b.ReportAllocs()
	for b.Loop() {
		if _, err := actor.Ask[*pong](ref, msg, 5*time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
