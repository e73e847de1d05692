package remote

import (
	"bufio"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
)

// laneRig is a user lane connected to a plain TCP socket whose other end the test
// reads, with no writer goroutine until the test starts one.
type laneRig struct {
	t      *testing.T
	l      *outLane
	conn   net.Conn // the lane's end
	far    net.Conn // the test's end
	sent   int
	served chan struct{} // closed when serve returns
}

func newLaneRig(t *testing.T, directAfter time.Duration) *laneRig {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	far, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	r := &Remote{cfg: Config{}.withDefaults(), log: zap.NewNop(), done: make(chan struct{}), directAfter: directAfter}
	p := &peer{r: r, self: "troupe://rig@127.0.0.1:1"}
	l := newOutLane(p, laneUser)
	l.conn, l.raw = conn, newRawWriter(conn)
	rig := &laneRig{t: t, l: l, conn: conn, far: far}
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			close(r.done)
		}
		if rig.served != nil {
			<-rig.served
		}
		_ = conn.Close()
		_ = far.Close()
	})
	return rig
}

// queue queues one frame whose payload starts with its sequence number, as sendUser
// does once the frame is encoded.
func (g *laneRig) queue(size int) {
	g.sent++
	payload := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(payload, uint64(g.sent))
	g.l.mu.Lock()
	g.l.q.add("/user/sink#1", actor.Ref{}, "test.Seq", payload, nil)
	g.l.queued()
}

// serve starts the lane's writer goroutine on the connection.
func (g *laneRig) serve() {
	g.served = make(chan struct{})
	go func() {
		defer close(g.served)
		g.l.serve(g.conn, bufio.NewReader(g.conn))
	}()
}

// expect reads frames from the far end until it has n, checking that they are the
// next ones in order.
func (g *laneRig) expect(from, n int) {
	g.t.Helper()
	_ = g.far.SetReadDeadline(time.Now().Add(testkit.Dilated(10 * time.Second)))
	fr := frameReader{br: bufio.NewReaderSize(g.far, 1<<20), max: 1 << 20}
	var dict decDict
	for i := from; i < from+n; i++ {
		body, err := fr.next()
		if err != nil {
			g.t.Fatalf("frame %d: %v", i, err)
		}
		h, err := parseUser(body, &dict)
		if err != nil {
			g.t.Fatalf("frame %d: %v", i, err)
		}
		if got := int(binary.BigEndian.Uint64(h.payload)); got != i {
			g.t.Fatalf("frame %d carries %d", i, got)
		}
	}
}

func (g *laneRig) state() (parked, writing bool, unwritten, queued int, woken bool) {
	g.l.mu.Lock()
	defer g.l.mu.Unlock()
	return g.l.parked, g.l.writing, len(g.l.out) - g.l.outOff, g.l.q.frames, len(g.l.wake) > 0
}

func TestAnIdleLaneIsWrittenByItsSender(t *testing.T) {
	g := newLaneRig(t, 0)
	g.l.parked = true // as the writer goroutine leaves it when it has nothing to do
	g.queue(100)
	parked, writing, unwritten, queued, woken := g.state()
	if woken || !parked || writing || unwritten != 0 || queued != 0 {
		t.Fatalf("after a send to an idle lane: parked %v, writing %v, %d bytes unwritten, %d queued, writer woken %v",
			parked, writing, unwritten, queued, woken)
	}
	if got := g.l.p.r.stats.msgsOut.Load(); got != 1 {
		t.Fatalf("%d messages counted out", got)
	}
	g.expect(1, 1)
}

func TestABusyLaneHandsItsFramesToTheWriter(t *testing.T) {
	g := newLaneRig(t, time.Hour)
	g.l.parked = true
	g.l.lastWrite = monotonic() // it has just written
	g.queue(100)
	g.queue(100)
	parked, _, unwritten, queued, woken := g.state()
	if !woken || parked || unwritten != 0 || queued != 2 {
		t.Fatalf("after sends to a busy lane: parked %v, %d bytes unwritten, %d queued, writer woken %v",
			parked, unwritten, queued, woken)
	}
	g.serve()
	g.expect(1, 2)
}

func TestAPartialDirectWriteIsFinishedByTheWriter(t *testing.T) {
	g := newLaneRig(t, 0)
	g.l.parked = true
	// The far end reads nothing yet: direct writes fill the socket buffers until one
	// is partial, and the writer is woken for the rest.
	for {
		g.queue(16 << 10)
		if _, _, unwritten, _, woken := g.state(); woken {
			if unwritten == 0 {
				t.Fatal("the writer was woken with nothing left to write")
			}
			break
		}
		if g.sent > 10_000 {
			t.Fatal("160 MB written without the socket filling up")
		}
	}
	// Sends meanwhile queue behind the batch in flight.
	for range 10 {
		g.queue(16 << 10)
	}
	if _, _, _, queued, _ := g.state(); queued != 10 {
		t.Fatalf("%d frames queued behind the partial write, want 10", queued)
	}
	g.serve()
	g.expect(1, g.sent)
	// The far end can read the last batch before its write has returned and been
	// counted: stop the writer, which ends after it.
	close(g.l.p.r.done)
	<-g.served
	if got, want := g.l.p.r.stats.msgsOut.Load(), uint64(g.sent); got != want {
		t.Fatalf("%d messages counted out, want %d", got, want)
	}
}
