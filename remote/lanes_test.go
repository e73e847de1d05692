package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// fakePeer accepts connections as a Troupe system would, but never reads its user
// lane after the handshake: a peer too slow to take messages. Its system lane reports
// every system message it receives.
type fakePeer struct {
	ln     net.Listener
	addr   string
	system chan sysMessage
	users  chan struct{} // one per user-lane connection accepted
	stop   chan struct{} // closed at the end of the test
	wg     sync.WaitGroup
}

func startFakePeer(t *testing.T) *fakePeer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{ln: ln, system: make(chan sysMessage, 16), stop: make(chan struct{}), users: make(chan struct{}, 64),
		addr: "troupe://fake@127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go f.serve(c)
		}
	}()
	t.Cleanup(func() {
		close(f.stop)
		_ = ln.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakePeer) serve(c net.Conn) {
	defer f.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
	fr := frameReader{br: br, max: 1 << 20}
	body, err := fr.next()
	if err != nil {
		return
	}
	h, err := parseHello(body)
	if err != nil {
		return
	}
	if _, err := c.Write(appendWelcome(nil, welcome{version: protocolVersion, addr: f.addr, uid: 777})); err != nil {
		return
	}
	if _, err := fr.next(); err != nil { // the proof
		return
	}
	if h.lane == laneUser {
		select {
		case f.users <- struct{}{}:
		default:
		}
		<-f.stop // never read: the dialler's writes fill the socket buffers and block
		return
	}
	for {
		body, err := fr.next()
		if err != nil {
			return
		}
		if body[0] == kindSystem {
			if _, m, err := parseSystem(body); err == nil {
				f.system <- m
			}
		}
	}
}

// bulk is a 1 KiB message.
type bulk struct{ Data []byte }

func TestAFloodOfMessagesDoesNotDelayAWatch(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*bulk](reg, "test.Bulk"); err != nil {
		t.Fatal(err)
	}
	fake := startFakePeer(t) // first: its cleanup runs after the system's shutdown
	sys := plainSystem(t)
	r, err := Start(sys, Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	target, err := sys.Resolve(fake.addr + "/user/target#5")
	if err != nil {
		t.Fatal(err)
	}
	// 50 MB of messages: far more than the socket buffers hold, so the user lane's
	// writer is stuck in a write that the peer never drains.
	msg := &bulk{Data: make([]byte, 1024)}
	full := false
	for range 50_000 {
		err := target.Tell(msg)
		switch {
		case errors.Is(err, ErrOverloaded):
			full = true
		case err != nil:
			t.Fatal(err)
		}
	}
	if !full {
		t.Fatal("the outbound queue never filled")
	}
	watcher := testkit.NewProbe(t, sys)
	watcher.Watch(target)
	select {
	case m := <-fake.system:
		if m.op != opWatch || m.target != "/user/target#5" {
			t.Fatalf("system message %+v", m)
		}
	case <-time.After(testkit.Dilated(3 * time.Second)):
		t.Fatal("the watch did not arrive while the user lane was stuck")
	}
	if r.Stats().MessagesOut >= 50_000 {
		t.Fatalf("the user lane was not stuck: %d messages out", r.Stats().MessagesOut)
	}
}

func TestAPeerThatStopsReadingLosesItsConnection(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*bulk](reg, "test.Bulk"); err != nil {
		t.Fatal(err)
	}
	fake := startFakePeer(t)
	sys := plainSystem(t)
	r, err := Start(sys, Config{Registry: reg, WriteTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	target, err := sys.Resolve(fake.addr + "/user/target")
	if err != nil {
		t.Fatal(err)
	}
	msg := &bulk{Data: make([]byte, 1024)}
	for range 50_000 {
		_ = target.Tell(msg)
	}
	// The stuck write times out; the lane counts what it lost and dials again.
	for i := range 2 {
		select {
		case <-fake.users:
		case <-time.After(testkit.Dilated(5 * time.Second)):
			t.Fatalf("user-lane connection %d never came; stats %+v", i+1, r.Stats())
		}
	}
	if r.Stats().DeadLetters == 0 {
		t.Errorf("lost messages not counted: %+v", r.Stats())
	}
}

func TestShutdownIsNotHeldUpByAPeerThatDoesNotRead(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*bulk](reg, "test.Bulk"); err != nil {
		t.Fatal(err)
	}
	fake := startFakePeer(t)
	sys, err := actor.New("stuck", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(sys, Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	target, _ := sys.Resolve(fake.addr + "/user/target")
	msg := &bulk{Data: make([]byte, 1024)}
	for range 50_000 {
		_ = target.Tell(msg)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("shutdown took %v", took)
	// The transport waits ShutdownFlushTimeout (1s) for the peer to take what it is
	// owed, then gives its last write a second.
	if took > testkit.Dilated(4*time.Second) {
		t.Errorf("shutdown took %v with a stuck peer", took)
	}
}

// plainSystem is a system shut down at the end of the test, before the cleanups
// registered earlier (the fake peer's); the package's TestMain checks for leaks.
func plainSystem(t *testing.T) *actor.System {
	sys, err := actor.New("lanes", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return sys
}

// With backpressure, a sender waits for room for BackpressureTimeout, or until the
// context of Remote.Send ends, and then fails with ErrOverloaded and a dead letter.
func TestBackpressureWaitsThenFails(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*bulk](reg, "test.Bulk"); err != nil {
		t.Fatal(err)
	}
	fake := startFakePeer(t)
	sys := plainSystem(t)
	r, err := Start(sys, Config{Registry: reg, OutboundQueueBytes: 256 << 10, BackpressureTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	target, err := sys.Resolve(fake.addr + "/user/target")
	if err != nil {
		t.Fatal(err)
	}
	// The peer never reads: the socket buffers fill, then the queue.
	msg := &bulk{Data: make([]byte, 1024)}
	var tellErr error
	for i := 0; tellErr == nil; i++ {
		if i > 1_000_000 {
			t.Fatal("the queue never filled")
		}
		tellErr = target.Tell(msg)
	}
	if !errors.Is(tellErr, ErrOverloaded) || !strings.Contains(tellErr.Error(), "no room within 50ms") {
		t.Fatalf("Tell: %v", tellErr)
	}
	if dl := testkit.ExpectMsgType[actor.DeadLetter](dead); !errors.Is(dl.Reason, ErrOverloaded) || dl.Recipient != target {
		t.Errorf("dead letter %+v", dl)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := r.Send(ctx, target, msg, actor.Ref{}); !errors.Is(err, ErrOverloaded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send with a deadline: %v", err)
	}
	testkit.ExpectMsgType[actor.DeadLetter](dead)
	gone, cancelNow := context.WithCancel(t.Context())
	cancelNow()
	if err := r.Send(gone, target, msg, actor.Ref{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context: %v", err)
	}
	// A local recipient never waits.
	if err := r.Send(gone, dead.Ref(), "local", actor.Ref{}); err != nil {
		t.Fatalf("Send to a local actor: %v", err)
	}
	if st := r.Stats(); st.Overloaded != 3 || st.Peers[0].QueuedBytes == 0 {
		t.Errorf("%d overloaded, peers %+v", st.Overloaded, st.Peers)
	}
}

// When the peer's incarnation is quarantined, what was queued for it goes to dead
// letters with ErrQuarantined; what was in the failed write is counted lost.
func TestQuarantineSendsTheQueueToDeadLetters(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*bulk](reg, "test.Bulk"); err != nil {
		t.Fatal(err)
	}
	fake := startFakePeer(t)
	sys := plainSystem(t)
	// A send that waits 200ms in vain shows the writer is stuck with a full queue. The
	// queue is four write chunks long: whatever chunk the writer is stuck in, frames
	// that no write reached remain.
	r, err := Start(sys, Config{Registry: reg, OutboundQueueBytes: 4 * writeChunk, BackpressureTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	target, err := sys.Resolve(fake.addr + "/user/target")
	if err != nil {
		t.Fatal(err)
	}
	// Each message carries its index, so that the dead letters can be told apart.
	numbered := func(i int) *bulk {
		m := &bulk{Data: make([]byte, 1024)}
		binary.BigEndian.PutUint32(m.Data, uint32(i))
		return m
	}
	index := func(dl actor.DeadLetter) int {
		m, ok := dl.Message.(*bulk)
		if !ok {
			t.Fatalf("dead letter of a %T", dl.Message)
		}
		return int(binary.BigEndian.Uint32(m.Data))
	}
	accepted := 0
	for target.Tell(numbered(accepted)) == nil {
		accepted++
	}
	if refused := index(testkit.ExpectMsgType[actor.DeadLetter](dead)); refused != accepted {
		t.Fatalf("the refused message is number %d, want %d", refused, accepted)
	}
	addr, _ := actor.ParseAddress(fake.addr)
	r.Quarantine(addr, 777, "test", false)
	// The queue goes to dead letters in order, after the write in flight failed and
	// counted what it had reached as lost: once the last accepted message is a dead
	// letter, the accounting is complete.
	var first, queued int
	for {
		dl := testkit.ExpectMsgType[actor.DeadLetter](dead)
		if !errors.Is(dl.Reason, ErrQuarantined) || dl.Recipient != target {
			t.Fatalf("dead letter for %v: %v", dl.Recipient, dl.Reason)
		}
		i := index(dl)
		if queued == 0 {
			first = i
		} else if i != first+queued {
			t.Fatalf("dead letter %d after %d from the queue starting at %d: not in order", i, queued, first)
		}
		queued++
		if i == accepted-1 {
			break
		}
	}
	st := r.Stats()
	t.Logf("%d accepted: %d dead letters from the queue (from number %d), %d lost in flight", accepted, queued, first, st.Lost)
	// What the write in flight reached precedes the queue; every drop is counted once.
	if int(st.Lost) > first || st.DeadLetters != uint64(1+queued)+st.Lost || st.Quarantines != 1 {
		t.Errorf("%d accepted, %d dead letters from number %d, stats %+v", accepted, queued, first, st)
	}
}
