package remote_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// counter counts the pongs it gets and closes reached when it has want of them.
func counter(t *testing.T, sys *actor.System, name string, want int64) (actor.Ref, *atomic.Int64, chan struct{}) {
	t.Helper()
	var n atomic.Int64
	reached := make(chan struct{})
	ref, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*pong); ok && n.Add(1) == want {
			close(reached)
		}
	}), name)
	if err != nil {
		t.Fatal(err)
	}
	return ref, &n, reached
}

func waitFor(t *testing.T, what string, ch <-chan struct{}, n *atomic.Int64) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testkit.Dilated(10 * time.Second)):
		t.Fatalf("%s: only %d arrived", what, n.Load())
	}
}

// A stranger that claims a live peer's address with a new incarnation must not
// quarantine the real peer: the claim is checked by dialling the address back.
func TestASpoofedIncarnationDoesNotQuarantineTheRealPeer(t *testing.T) {
	const half = 6000
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)
	sink, n, reached := counter(t, b.sys, "sink", 2*half)
	ref := a.remoteRef(t, sink)
	for i := range half {
		if err := ref.Tell(&pong{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for n.Load() < half {
		roundTrip(t, a, b, 0)
	}

	c := rawConn(t, b)
	if _, br, err := remote.HandshakeForTest(c, a.r.Address().String(), a.r.UID()+1, b.r.Address().String()); err == nil {
		// Whatever b decided, it has decided once it answers (or closes).
		_, _ = c.Write(remote.AppendHeartbeatForTest(nil))
		var hdr [4]byte
		_, _ = io.ReadFull(br, hdr[:])
	}

	for i := range half {
		if err := ref.Tell(&pong{N: half + i}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "messages from the real peer", reached, n)
	if q := b.r.Stats().Quarantines; q != 0 {
		t.Errorf("b quarantined %d incarnations", q)
	}
}

// A hello for a system that is not this one is refused without saying which system
// this is.
func TestARejectDoesNotTellTheAddress(t *testing.T) {
	reg := registry(t)
	b := startNode(t, "b", reg)
	c := rawConn(t, b)
	_, _ = c.Write(remote.AppendHelloForTest(42, "troupe://x@127.0.0.1:1", "troupe://nobody@127.0.0.1:2"))
	br := bufio.NewReader(c)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	self := b.r.Address()
	for _, secret := range []string{self.String(), self.HostPort(), "b@"} {
		if strings.Contains(string(body), secret) {
			t.Errorf("the reject %q tells %q", body[1:], secret)
		}
	}
}

// Ten thousand connections that never say hello cost little memory, and a real
// peer, even one that connects meanwhile, is served as usual.
func TestIdleConnectionsCostLittle(t *testing.T) {
	idle := fileBudget(t, 10_000)
	reg := registry(t)
	long := func(c *remote.Config) { c.HandshakeTimeout = time.Minute }
	a, b := startNode(t, "a", reg, long), startNode(t, "b", reg, long)
	roundTrip(t, a, b, 1)

	before := heapInUse()
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range idle {
		c, err := net.Dial("tcp", b.r.Address().HostPort())
		if err != nil {
			t.Fatalf("after %d connections: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(testkit.Dilated(30 * time.Second))
	for remote.AcceptedConnections(b.r) < idle {
		if time.Now().After(deadline) {
			t.Fatalf("b accepted %d of %d connections", remote.AcceptedConnections(b.r), idle)
		}
		runtime.Gosched()
	}
	grown := heapInUse() - before
	t.Logf("%d idle connections: heap grew by %.1f MiB (%d bytes each, both ends)", idle, float64(grown)/(1<<20), grown/idle)
	if grown > 50<<20*idle/10_000 {
		t.Errorf("heap grew by %d MiB", grown>>20)
	}
	if p := remote.PendingConnections(b.r); p > 256 {
		t.Errorf("%d connections pending, above the default bound of 256", p)
	}
	if rej := b.r.Stats().Rejected; rej < uint64(idle-256) || rej > uint64(idle) {
		t.Errorf("%d connections counted as closed to admit newer ones, want %d", rej, idle-256)
	}
	roundTrip(t, a, b, 2)
	c := startNode(t, "c", reg)
	roundTrip(t, c, b, 3)
	roundTrip(t, b, c, 4)
}

// fileBudget raises the soft limit on open files so that want idle connections fit
// (both their ends are in this process), and returns how many do when the hard limit
// is lower.
func fileBudget(t *testing.T, want int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Logf("getrlimit: %v", err)
		return want
	}
	need := uint64(want + 1000) // the client ends, the pending server ends, and the rest
	if lim.Cur < need {
		lim.Cur = min(need, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Logf("setrlimit: %v", err)
		}
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	if lim.Cur < need {
		t.Logf("open files limited to %d: %d idle connections instead of %d", lim.Cur, lim.Cur-1000, want)
		return int(lim.Cur) - 1000
	}
	return want
}

func heapInUse() int {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int(ms.HeapInuse)
}

// A connection that does not complete its handshake in time is closed.
func TestASilentConnectionIsClosedAtTheHandshakeDeadline(t *testing.T) {
	reg := registry(t)
	b := startNode(t, "b", reg, func(c *remote.Config) { c.HandshakeTimeout = 100 * time.Millisecond })
	c := rawConn(t, b)
	expectClosed(t, c)
	deadline := time.Now().Add(testkit.Dilated(5 * time.Second))
	for remote.PendingConnections(b.r) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still pending", remote.PendingConnections(b.r))
		}
		runtime.Gosched()
	}
}
