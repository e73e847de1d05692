package remote_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A connection closed before it sent a byte (a node shutting down gave up dialling, a
// TCP probe of the port) is counted and logged at debug, not warned about.
func TestConnectionClosedBeforeItsHelloIsNotAWarning(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	sys, err := actor.New("a", actor.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, sys) })
	r, err := remote.Start(sys, remote.Config{Registry: registry(t)})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", r.Address().HostPort())
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	for {
		for _, e := range logs.FilterMessage("inbound connection refused").All() {
			if strings.Contains(e.ContextMap()["error"].(string), "reading hello") {
				if e.Level != zapcore.DebugLevel {
					t.Fatalf("logged at %v: %v", e.Level, e.ContextMap())
				}
				if r.Stats().Rejected != 1 {
					t.Fatalf("%d rejected, want 1", r.Stats().Rejected)
				}
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the refusal was not logged")
		}
		time.Sleep(time.Millisecond) // a poll's pace: the observer has no notification
	}
}
