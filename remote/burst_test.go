package remote_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/testkit"
)

// burstSize is the number of messages the burst tests send at once: a million, or a
// tenth of it with -short.
func burstSize() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

// orderedSink counts the pongs it gets, checks that their numbers rise, and closes
// done when it gets the pong numbered last (or, with last < 0, has want of them).
type orderedSink struct {
	got      atomic.Int64
	disorder atomic.Int64
	done     chan struct{}
}

func spawnOrderedSink(t *testing.T, sys *actor.System, want int64, last int) (actor.Ref, *orderedSink) {
	t.Helper()
	s := &orderedSink{done: make(chan struct{})}
	prev := -1
	ref, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		m, ok := ctx.Message().(*pong)
		if !ok {
			return
		}
		if m.N <= prev {
			s.disorder.Add(1)
		}
		prev = m.N
		if n := s.got.Add(1); m.N == last || last < 0 && n == want {
			close(s.done)
		}
	}), "sink")
	if err != nil {
		t.Fatal(err)
	}
	return ref, s
}

func (s *orderedSink) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(testkit.Dilated(2 * time.Minute)):
		t.Fatalf("%s: %d arrived", what, s.got.Load())
	}
	if d := s.disorder.Load(); d != 0 {
		t.Errorf("%s: %d messages out of order", what, d)
	}
}

// A burst far larger than the outbound queue: every message is either delivered or
// reported to its sender (an error, and a dead letter), none vanishes. The peer is cut
// off for the first third, so that the queue (256 KiB, a tenth of that third) certainly
// fills.
func TestABurstIsDeliveredOrReported(t *testing.T) {
	n := burstSize()
	reg := registry(t)
	cut := newCutter()
	a := startNode(t, "a", reg, cut.seams, func(c *remote.Config) { c.OutboundQueueBytes = 256 << 10 })
	b := startNode(t, "b", reg)
	sink, s := spawnOrderedSink(t, b.sys, 0, n) // the last message (n) is a marker
	ref := a.remoteRef(t, sink)
	deadBefore := a.sys.DeadLetterCount()
	cut.set(true)
	refused := 0
	for i := range n {
		if i == n/3 {
			cut.set(false)
		}
		switch err := ref.Tell(&pong{N: i}); {
		case err == nil:
		case errors.Is(err, remote.ErrOverloaded):
			refused++
		default:
			t.Fatalf("Tell %d: %v", i, err)
		}
	}
	// The marker waits for room; once it arrives, everything accepted before it has.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Dilated(time.Minute))
	defer cancel()
	if err := a.r.Send(ctx, ref, &pong{N: n}, actor.Ref{}); err != nil {
		t.Fatal(err)
	}
	s.wait(t, "burst")
	delivered := int(s.got.Load()) - 1
	dead := int(a.sys.DeadLetterCount() - deadBefore)
	st := a.r.Stats()
	t.Logf("%d sent: %d delivered, %d refused (ErrOverloaded), %d dead letters", n, delivered, refused, dead)
	if delivered+refused != n {
		t.Errorf("%d delivered + %d refused != %d sent", delivered, refused, n)
	}
	if dead != refused || st.Overloaded != uint64(refused) || st.DeadLetters != uint64(refused) {
		t.Errorf("%d refused, %d dead letters, stats: %d overloaded, %d dead letters, %d lost",
			refused, dead, st.Overloaded, st.DeadLetters, st.Lost)
	}
	if refused == 0 {
		t.Error("the burst never filled the queue: the test tests nothing")
	}
	if len(st.Peers) != 1 || st.Peers[0].Overloaded != uint64(refused) {
		t.Errorf("peer stats %+v", st.Peers)
	}
}

// With backpressure, senders wait for room: every message of the burst arrives, in
// order.
func TestBackpressureDeliversTheWholeBurstInOrder(t *testing.T) {
	n := burstSize()
	reg := registry(t)
	a := startNode(t, "a", reg, func(c *remote.Config) { c.BackpressureTimeout = testkit.Dilated(time.Minute) })
	b := startNode(t, "b", reg)
	sink, s := spawnOrderedSink(t, b.sys, 0, n-1)
	ref := a.remoteRef(t, sink)
	for i := range n {
		if err := ref.Tell(&pong{N: i}); err != nil {
			t.Fatalf("Tell %d: %v", i, err)
		}
	}
	s.wait(t, "burst with backpressure")
	if got := s.got.Load(); got != int64(n) {
		t.Errorf("%d of %d arrived", got, n)
	}
	if st := a.r.Stats(); st.DeadLetters != 0 || st.Overloaded != 0 {
		t.Errorf("stats %+v", st)
	}
}
