package remote_test

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// perActor is how many messages each sender of TestManyActorsOverOneAssociation
// sends; ping.N is the sender's index times perActor plus the message's number.
const perActor = 3

// Far more names than the per-connection dictionary holds cross one association:
// 5,000 senders on a, 5,000 recipients on b, and the message type. Every recipient
// gets exactly its own sender's messages, in order, and nothing else.
func TestManyActorsOverOneAssociation(t *testing.T) {
	const n = 5000
	reg := registry(t)
	a, b := startNode(t, "a", reg), startNode(t, "b", reg)

	var (
		mu      sync.Mutex
		wrong   []string
		counted atomic.Int64
		done    = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		if len(wrong) < 10 {
			wrong = append(wrong, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}
	receivers := make([]actor.Ref, n)
	for i := range n {
		next := 0
		want := "/user/s-" + strconv.Itoa(i)
		ref, err := b.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
			m, ok := ctx.Message().(*ping)
			if !ok {
				return
			}
			switch {
			case m.N/perActor != i:
				fail("r-%d got message %d meant for r-%d", i, m.N, m.N/perActor)
			case m.N%perActor != next:
				fail("r-%d got message %d out of order", i, m.N)
			case ctx.Sender().Path() != want || ctx.Sender().IsLocal():
				fail("r-%d got a message from %v", i, ctx.Sender())
			}
			next++
			if counted.Add(1) == n*perActor {
				close(done)
			}
		}), "r-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		receivers[i] = a.remoteRef(t, ref)
	}
	senders := make([]actor.Ref, n)
	for i := range n {
		to := receivers[i]
		ref, err := a.sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case *pong:
				for k := range perActor {
					if err := ctx.Send(to, &ping{N: i*perActor + k}); err != nil {
						fail("s-%d: %v", i, err)
					}
				}
			case *ping:
				fail("s-%d got message %d back", i, m.N)
			}
		}), "s-"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		senders[i] = ref
	}
	deadA, deadB := a.sys.DeadLetterCount(), b.sys.DeadLetterCount()
	for _, s := range senders {
		_ = s.Tell(&pong{})
	}
	select {
	case <-done:
	case <-time.After(testkit.Dilated(30 * time.Second)):
		t.Errorf("%d of %d messages arrived", counted.Load(), n*perActor)
	}
	if da, db := a.sys.DeadLetterCount()-deadA, b.sys.DeadLetterCount()-deadB; da+db != 0 {
		t.Errorf("%d dead letters on a, %d on b", da, db)
	}
	// A message misrouted back to a would travel on b's lane to a ahead of the reply
	// of a round trip made now.
	roundTrip(t, a, b, 1)
	mu.Lock()
	defer mu.Unlock()
	for _, w := range wrong {
		t.Error(w)
	}
}
