package remote_test

import (
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"go.opentelemetry.io/otel/attribute"
)

// startMeteredNode is startNode with a MeterProvider.
func startMeteredNode(t *testing.T, name string, reg *serialization.Registry, m *metrictest.Reader, tweak ...func(*remote.Config)) node {
	t.Helper()
	return startNodeWith(t, name, reg, actor.Config{MeterProvider: m.Provider}, tweak...)
}

func TestMetricsCountMessagesAndBytesPerPeer(t *testing.T) {
	reg := registry(t)
	ma, mb := metrictest.NewReader(t), metrictest.NewReader(t)
	a := startMeteredNode(t, "ma", reg, ma)
	b := startMeteredNode(t, "mb", reg, mb)
	echo, err := b.sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	remoteEcho := a.remoteRef(t, echo)
	const n = 100
	for i := range n {
		if err := remoteEcho.Tell(&ping{N: i, ReplyTo: probe.Ref()}); err != nil {
			t.Fatal(err)
		}
	}
	probe.ReceiveN(n)
	// The writer counts a batch when its write has returned, which may be after the
	// answers came back; it starts the next batch only after that, so one more round
	// trip makes sure the first n are counted.
	if err := remoteEcho.Tell(&ping{N: n, ReplyTo: probe.Ref()}); err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg(&pong{N: n})

	peerB := attribute.String("peer", b.r.Address().String())
	peerA := attribute.String("peer", a.r.Address().String())
	msA, msB := ma.Collect(), mb.Collect()
	st := a.r.Stats()
	out, ok := metrictest.IntValue(ma.Metric(msA, "troupe.remote.messages.sent", "{message}"), peerB)
	if !ok || out < n || uint64(out) > st.MessagesOut {
		t.Errorf("A's messages sent to B: %d (%v), want at least %d and at most A's total %d", out, ok, n, st.MessagesOut)
	}
	in, ok := metrictest.IntValue(mb.Metric(msB, "troupe.remote.messages.received", "{message}"), peerA)
	if !ok || in < n {
		t.Errorf("B's messages received from A: %d (%v), want at least %d", in, ok, n)
	}
	bytesOut, _ := metrictest.IntValue(ma.Metric(msA, "troupe.remote.bytes.sent", "By"), peerB)
	if bytesOut <= out || uint64(bytesOut) > st.BytesOut {
		t.Errorf("A's bytes sent to B: %d, want more than %d frames and at most A's total %d", bytesOut, out, st.BytesOut)
	}
	if got, _ := metrictest.IntValue(mb.Metric(msB, "troupe.remote.bytes.received", "By"), peerA); got <= in {
		t.Errorf("B's bytes received from A: %d, want more than %d frames", got, in)
	}
	if _, ok := metrictest.IntValue(ma.Metric(msA, "troupe.remote.outbound.queued", "By"), peerB); !ok {
		t.Error("no outbound queue figure for B")
	}

	// A message of an unregistered type is refused: a drop with reason other.
	if err := remoteEcho.Tell(&notRegistered{X: 1}); err == nil {
		t.Fatal("unregistered message accepted")
	}
	msA = ma.Collect()
	drops := ma.Metric(msA, "troupe.remote.drops", "{message}")
	for reason, want := range map[string]int64{"other": 1, "overloaded": 0, "lost": 0, "refused_sender": 0} {
		if got, ok := metrictest.IntValue(drops, attribute.String("reason", reason)); !ok || got != want {
			t.Errorf("drops %s: %d (%v), want %d", reason, got, ok, want)
		}
	}
	for _, c := range []struct{ name, unit string }{
		{"troupe.remote.reconnects", "{connection}"},
		{"troupe.remote.quarantines", "{incarnation}"},
		{"troupe.remote.handshakes.refused", "{connection}"},
	} {
		if got, ok := metrictest.IntValue(ma.Metric(msA, c.name, c.unit)); !ok || got != 0 {
			t.Errorf("%s: %d (%v), want 0", c.name, got, ok)
		}
	}
}

func TestMetricsCountOverloadedSends(t *testing.T) {
	reg := registry(t)
	ma := metrictest.NewReader(t)
	a := startMeteredNode(t, "oa", reg, ma, func(c *remote.Config) {
		c.OutboundQueueBytes, c.MaxFrameSize = 1024, 1024
	})
	// A peer that never answers: nothing is written, the queue fills.
	ghost := actor.Address{System: "ghost", Host: "127.0.0.1", Port: 1}
	ref, err := a.sys.Resolve(ghost.String() + "/user/x")
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := 0; refused == 0 && i < 1000; i++ {
		if err := ref.Tell(&ping{N: i}); errors.Is(err, remote.ErrOverloaded) {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the queue never filled")
	}
	ms := ma.Collect()
	if got, _ := metrictest.IntValue(ma.Metric(ms, "troupe.remote.drops", "{message}"), attribute.String("reason", "overloaded")); got != 1 {
		t.Errorf("overloaded drops %d, want 1", got)
	}
	if got, _ := metrictest.IntValue(ma.Metric(ms, "troupe.remote.outbound.queued", "By"), attribute.String("peer", ghost.String())); got <= 0 {
		t.Errorf("queued bytes for the silent peer %d, want some", got)
	}
}

func TestMetricsRecordHeartbeatRoundTrip(t *testing.T) {
	reg := registry(t)
	ma := metrictest.NewReader(t)
	a := startMeteredNode(t, "ha", reg, ma, func(c *remote.Config) {
		c.FailureDetector.HeartbeatInterval = 10 * time.Millisecond
	})
	b := startNode(t, "hb", reg)
	target, err := b.sys.Spawn(echoProps(), "target")
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, a.sys)
	probe.Watch(a.remoteRef(t, target)) // a watch starts the heartbeats
	peerB := attribute.String("peer", b.r.Address().String())
	deadline := time.Now().Add(testkit.Dilated(10 * time.Second))
	for {
		ms := ma.Collect()
		if _, ok := ms["troupe.remote.heartbeat.rtt"]; ok { // a histogram without points is left out
			p, ok := metrictest.HistPoint[float64](ma.Metric(ms, "troupe.remote.heartbeat.rtt", "s"), peerB)
			if !ok || p.Count == 0 {
				t.Fatalf("heartbeat round trips recorded, none for %v", peerB)
			}
			if mx, _ := p.Max.Value(); mx <= 0 || mx > 10 {
				t.Errorf("round trip %vs", mx)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat round trip recorded")
		}
		probe.ExpectNoMsg(10 * time.Millisecond) // wait a heartbeat interval
	}
}
