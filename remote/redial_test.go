package remote_test

import (
	"context"
	"net"
	"strconv"
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

// A lane that backs off after failed connection attempts tries again as soon as the
// peer connects to this system, instead of waiting out its backoff: A sends to B
// before B exists (the attempt fails; the backoff is ten minutes), then B starts and
// sends to A, and A's message reaches B at once.
func TestPeerConnectingEndsTheBackoff(t *testing.T) {
	reg := registry(t)
	port, portText := freePort(t)
	core, logs := observer.New(zapcore.InfoLevel)
	sysA, err := actor.New("a", actor.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, sysA) })
	long := 10 * time.Minute
	if _, err := remote.Start(sysA, remote.Config{Registry: reg, ReconnectBackoffMin: long, ReconnectBackoffMax: long}); err != nil {
		t.Fatal(err)
	}
	replies := testkit.NewProbe(t, sysA)
	echoOnB, err := sysA.Resolve("troupe://b@127.0.0.1:" + portText + "/user/echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := echoOnB.Tell(&ping{N: 1, ReplyTo: replies.Ref()}); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, logs, "connect failed")

	b := startNode(t, "b", reg, func(c *remote.Config) { c.ListenPort = port })
	if _, err := b.sys.Spawn(echoProps(), "echo"); err != nil {
		t.Fatal(err)
	}
	// B reaches A: A's lanes to B stop backing off.
	if err := b.remoteRef(t, replies.Ref()).Tell(&pong{N: 0}); err != nil {
		t.Fatal(err)
	}
	replies.ExpectMsg(&pong{N: 0})
	replies.ExpectMsg(&pong{N: 1}, testkit.Dilated(10*time.Second))
}

// freePort returns a port nothing listens on now, as a number and as text.
func freePort(t *testing.T) (int, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	return port, strconv.Itoa(port)
}

// waitForLog waits until a message containing msg was logged.
func waitForLog(t *testing.T, logs *observer.ObservedLogs, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	for ctx.Err() == nil {
		for _, e := range logs.All() {
			if strings.Contains(e.Message, msg) {
				return
			}
		}
		time.Sleep(time.Millisecond) // a poll's pace: the observer has no notification
	}
	t.Fatalf("%q was not logged", msg)
}
