package pglease

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/troupe-go/troupe/lease"
)

// proxy forwards TCP connections to a server until it is cut. Cut silently, it keeps
// every connection open and forwards nothing, in either direction, and accepts new
// connections without forwarding them: a partition in which packets are dropped.
// Refused, it closes every connection and its listener: a partition in which the
// holder's host reports the network unreachable. Gated, it accepts new connections
// and forwards them only once the gate opens: a server slow to take connections.
type proxy struct {
	ln      net.Listener
	target  string
	wg      sync.WaitGroup
	stopped chan struct{} // closed by refuse

	mu      sync.Mutex
	cut     bool
	refused bool
	conns   []net.Conn
	gate    chan struct{} // when not nil, new connections wait until it is closed
	waiting chan struct{} // gets a value for each connection that waits at the gate
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, stopped: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		cut, gate, waiting := p.cut, p.gate, p.waiting
		p.mu.Unlock()
		if cut {
			continue // held open, silent
		}
		p.wg.Add(1)
		go p.forward(c, gate, waiting)
	}
}

// forward connects c to the target, once gate is closed when it is not nil (and then
// tells waiting that c waits).
func (p *proxy) forward(c net.Conn, gate, waiting chan struct{}) {
	defer p.wg.Done()
	if gate != nil {
		select {
		case waiting <- struct{}{}:
		default: // nobody counts that many
		}
		select {
		case <-gate:
		case <-p.stopped:
			return
		}
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up)
	refused := p.refused
	p.mu.Unlock()
	if refused {
		up.Close()
		return
	}
	p.wg.Add(2)
	go p.pipe(up, c)
	go p.pipe(c, up)
}

// holdNew makes new connections wait until open is called; waiting gets a value for
// each of them as it starts to wait.
func (p *proxy) holdNew() (waiting <-chan struct{}, open func()) {
	gate, w := make(chan struct{}), make(chan struct{}, 16)
	p.mu.Lock()
	p.gate, p.waiting = gate, w
	p.mu.Unlock()
	var once sync.Once
	return w, func() {
		once.Do(func() {
			p.mu.Lock()
			p.gate = nil
			p.mu.Unlock()
			close(gate)
		})
	}
}

// pipe copies src to dst while the proxy is not cut, and drops what src sends after.
// When src ends it closes dst, unless the proxy is cut: the other side of a silent
// partition hears nothing, not even a close.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isCut() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if !p.isCut() || errors.Is(err, io.EOF) {
				src.Close()
			}
			if !p.isCut() {
				dst.Close()
			}
			return
		}
	}
}

func (p *proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// cutSilently stops forwarding.
func (p *proxy) cutSilently() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// refuse closes the listener and every connection.
func (p *proxy) refuse() {
	p.mu.Lock()
	p.cut = true
	if !p.refused {
		p.refused = true
		close(p.stopped)
	}
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.refuse()
	p.wg.Wait()
}

// TestPartitionedHolderLosesFirst: a holder whose connections to the database fail
// (dropped silently, or refused) gives the lease up before another owner, polling all
// along, acquires it. The order is asserted on one clock: the holder's CheckLease,
// which turns false at its deadline exactly, is false when the other owner's Acquire
// has returned true. The loss callback comes too, from a goroutine of its own; when it
// runs is the scheduler's business (on a loaded machine, later than the 100ms safety
// margin), so its time is logged, not asserted.
func TestPartitionedHolderLosesFirst(t *testing.T) {
	for _, mode := range []string{"silent", "refused"} {
		t.Run(mode, func(t *testing.T) {
			ctx := testContext(t)
			pc, err := pgxpool.ParseConfig(target.ConnString)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(pc.ConnConfig.Host, "/") {
				t.Skip("the server is reached over a Unix socket, which the proxy cannot stand in for")
			}
			p := startProxy(t, net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port))))
			// The holder reaches the server through the proxy.
			host, port, _ := net.SplitHostPort(p.addr())
			portNum, _ := strconv.Atoi(port)
			pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Fallbacks = host, uint16(portNum), nil
			pc.MaxConns = 2
			viaProxy, err := pgxpool.NewWithConfig(ctx, pc)
			if err != nil {
				t.Fatal(err)
			}
			defer viaProxy.Close()
			// pgx closes a connection whose query timed out in the background, after a
			// cancel request on a new connection and a drain, each bounded by 15s; the
			// pool's Close waits for them. Refusing first ends them at once.
			defer p.refuse()

			schema := newSchema(t)
			s := fast("partition", "holder")
			s.OperationTimeout = 300 * time.Millisecond
			holder := open(t, s, Config{Pool: viaProxy, Schema: schema})
			other := open(t, fast("partition", "other"), Config{Schema: schema})
			lost := newLossProbe()
			if ok, err := holder.Acquire(ctx, lost.onLost); !ok || err != nil {
				t.Fatalf("holder: Acquire = %v, %v", ok, err)
			}
			fence := holder.Fence()

			cutAt := time.Now()
			if mode == "silent" {
				p.cutSilently()
			} else {
				p.refuse()
			}
			refusals := 0
			var acquiredAt time.Time
			var heldThen bool
			poll := time.NewTicker(10 * time.Millisecond)
			defer poll.Stop()
			for {
				ok, err := other.Acquire(ctx, nil)
				if err != nil {
					t.Fatalf("other: Acquire: %v", err)
				}
				if ok {
					acquiredAt = time.Now()
					heldThen = holder.CheckLease() || holder.Fence() != 0
					break
				}
				refusals++
				<-poll.C
			}
			if heldThen {
				t.Errorf("the holder still held the lease when the other acquired it, %v after the cut", acquiredAt.Sub(cutAt))
			}
			l := lost.wait(t)
			t.Logf("cut at 0, the other acquired it at %v (%d refusals before), the holder's loss callback ran at %v",
				acquiredAt.Sub(cutAt), refusals, l.at.Sub(cutAt))
			if !errors.Is(l.err, lease.ErrUnavailable) {
				t.Errorf("loss reason %v, want lease.ErrUnavailable", l.err)
			}
			if refusals == 0 {
				t.Error("the other owner acquired the lease at its first try: the holder's row was not live")
			}
			if holder.CheckLease() || holder.Fence() != 0 {
				t.Error("the holder still believes it holds the lease")
			}
			if other.Fence() != fence+1 {
				t.Errorf("the other's fence %d, holder's was %d", other.Fence(), fence)
			}
			// The holder cannot release what it no longer reaches; it says so.
			if _, err := holder.Release(ctx); !errors.Is(err, lease.ErrUnavailable) {
				t.Errorf("the partitioned holder's Release: %v, want lease.ErrUnavailable", err)
			}
			lost.none(t)
		})
	}
}
