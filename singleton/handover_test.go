package singleton_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// Exactly one instance runs, on the oldest node; the proxy on every node reaches it
// within 3 s of all nodes being Up.
func TestOneInstanceOnTheOldestReachedFromEveryNode(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	start := time.Now()
	if age := h.byAge(1); age[0] != 0 {
		t.Fatalf("ages %v: node 0, the first, is not the oldest", age)
	}
	for i := range 3 {
		if got := h.ping(i, 3*time.Second); got != 0 {
			t.Fatalf("node %d's proxy reached the instance on node %d, want node 0", i, got)
		}
	}
	t.Logf("every proxy answered %v after all nodes were Up", time.Since(start))
	if on := h.tab.aliveOn(); len(on) != 1 || on[0] != 0 {
		t.Fatalf("instances alive on %v, want [0]", on)
	}
	// Each manager follows its own node's view of the cluster, which may trail what
	// the proxies found: wait for it to name the oldest.
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(3*time.Second))
	defer cancel()
	for i := range 3 {
		st, err := h.manager(i).AwaitStatus(ctx, func(s singleton.Status) bool { return s.Oldest == h.addr(0) })
		if err != nil || st.Running != (i == 0) {
			t.Errorf("node %d: status %+v, %v", i, st, err)
		}
	}
	if got := singleton.Get(h.c.Node(1).System, "counter"); got != h.manager(1) {
		t.Errorf("Get returned %p, want the started manager %p", got, h.manager(1))
	}
}

// noteRemovals records in the table when node i sees a member removed, as
// "removed <index>".
func noteRemovals(t *testing.T, h *harness, i int) {
	t.Helper()
	n := h.c.Node(i)
	index := make(map[cluster.UniqueAddress]int)
	for _, m := range h.c.Nodes() {
		index[m.Cluster.SelfUniqueAddress()] = m.Index
	}
	sub, err := n.System.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if r, ok := ctx.Message().(cluster.MemberRemoved); ok {
			h.tab.note("removed %d", index[r.Member.Unique])
		}
	}), "")
	if err != nil {
		t.Fatal(err)
	}
	n.Cluster.Subscribe(sub)
}

// The oldest leaves: on the old node the instance gets its termination message and
// stops, and only then does the next oldest start one; the old member is removed
// after its instance stopped.
func TestGracefulHandOver(t *testing.T) {
	h := newHarness(t, harnessOptions{mod: func(_ int, cfg *singleton.Config) { cfg.TerminationMessage = Terminate{} }})
	h.awaitRunning(0, 5*time.Second)
	next, other := h.byAge(0)[1], h.byAge(0)[2]
	noteRemovals(t, h, other)
	start := time.Now()
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	t.Logf("hand-over took %v", time.Since(start))
	if got := h.ping(other, 3*time.Second); got != next {
		t.Fatalf("the proxy on node %d reached node %d, want %d", other, got, next)
	}
	h.tab.await(t, 10*time.Second, "removal of node 0", func(tb *table) bool { return slices.Contains(tb.events, "removed 0") })
	ev := h.tab.eventsSnapshot()
	term, stop, started, removed := indexOf(ev, "terminate 0", 0), indexOf(ev, "stop 0", 0),
		indexOf(ev, fmt.Sprintf("start %d", next), 0), indexOf(ev, "removed 0", 0)
	if term < 0 || !(term < stop && stop < started && stop < removed) {
		t.Fatalf("want terminate 0, stop 0, then start %d and removed 0; events %v", next, ev)
	}
}

// stream sends numbered messages through a proxy from its own goroutine, a few per
// millisecond, until stop is closed or limit messages are sent (0: no limit).
type stream struct {
	name string
	sent int
	done chan struct{}
}

func startStream(t *testing.T, name string, proxy actor.Ref, stop <-chan struct{}, limit int) *stream {
	s := &stream{name: name, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			for range 3 {
				if limit > 0 && s.sent == limit {
					return
				}
				if err := proxy.Tell(Numbered{Stream: name, Seq: s.sent + 1}); err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				s.sent++
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// checkStreams waits until every stream's messages have all arrived, and fails on a
// gap, a duplicate or a message out of order.
func checkStreams(t *testing.T, h *harness, streams []*stream) {
	t.Helper()
	for _, s := range streams {
		<-s.done
		h.tab.await(t, 10*time.Second, s.name+" complete", func(tb *table) bool { return len(tb.streams[s.name]) >= s.sent })
		got := h.tab.stream(s.name)
		for i, seq := range got {
			if seq != i+1 {
				t.Fatalf("%s: message %d is %d (of %d sent); around it: %v", s.name, i+1, seq, s.sent,
					got[max(0, i-5):min(len(got), i+5)])
			}
		}
		if len(got) != s.sent {
			t.Fatalf("%s: %d received, %d sent", s.name, len(got), s.sent)
		}
		t.Logf("%s: %d messages, none lost, none reordered", s.name, s.sent)
	}
}

// Nothing sent through the proxies is lost or reordered during a graceful hand-over,
// whether the proxy is on the new host's node or another.
func TestNothingLostDuringHandOver(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.awaitRunning(0, 5*time.Second)
	h.ping(1, 3*time.Second)
	h.ping(2, 3*time.Second)
	next := h.byAge(0)[1]
	stop := make(chan struct{})
	streams := []*stream{startStream(t, "from1", h.proxy(1), stop, 0), startStream(t, "from2", h.proxy(2), stop, 0)}
	h.tab.await(t, 5*time.Second, "the streams flowing", func(tb *table) bool {
		return len(tb.streams["from1"]) > 100 && len(tb.streams["from2"]) > 100
	})
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	n1, n2 := len(h.tab.stream("from1")), len(h.tab.stream("from2"))
	h.tab.await(t, 5*time.Second, "the streams flowing to the new instance", func(tb *table) bool {
		return len(tb.streams["from1"]) > n1+100 && len(tb.streams["from2"]) > n2+100
	})
	close(stop)
	checkStreams(t, h, streams)
}

// freePorts returns n free TCP ports on 127.0.0.1, lowest first.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	slices.Sort(ports)
	return ports
}

// The node that leaves is both the oldest and the one with the lowest address (the
// leader in Akka's terms): the singleton still moves, and the new node starts it once,
// without a failure (GoAkt's issue 1036).
func TestLeaderAndOldestLeaves(t *testing.T) {
	ports := freePorts(t, 3)
	h := newHarness(t, harnessOptions{opts: multinode.Options{
		ConfigureRemote: func(i int, c *remote.Config) { c.ListenPort = ports[i] },
	}})
	for _, n := range h.c.Nodes()[1:] {
		if member.CompareAddress(h.addr(0), n.Cluster.SelfUniqueAddress()) >= 0 {
			t.Fatalf("node 0 (%v) does not have the lowest address", h.addr(0))
		}
	}
	h.awaitRunning(0, 5*time.Second)
	next, other := h.byAge(0)[1], h.byAge(0)[2]
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	if got := h.ping(other, 3*time.Second); got != next {
		t.Fatalf("reached node %d, want %d", got, next)
	}
	ev := h.tab.eventsSnapshot()
	if n := countOf(ev, fmt.Sprintf("start %d", next)); n != 1 {
		t.Fatalf("node %d started %d instances; events %v", next, n, ev)
	}
	if st := h.manager(next).Status(); st.State != singleton.StateOldest || st.Dropped != 0 {
		t.Fatalf("node %d: %+v", next, st)
	}
}

func countOf(events []string, e string) int {
	n := 0
	for _, x := range events {
		if x == e {
			n++
		}
	}
	return n
}

// With Config.CallerHandsOver the manager adds no shutdown task: the singleton still
// runs on the leaving oldest after the before-cluster-shutdown phase, until the caller
// runs Manager.HandOver in a later phase of its own (as sharding does after handing
// its shards off); then it hands over as at any graceful leave.
func TestCallerHandsOver(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 2, mod: func(_ int, cfg *singleton.Config) {
		cfg.TerminationMessage = Terminate{}
		cfg.CallerHandsOver = true
	}})
	h.awaitRunning(0, 5*time.Second)
	next := h.byAge(0)[1]
	m := h.manager(0)
	ran := make(chan error, 1)
	err := h.c.Node(0).System.CoordinatedShutdown().AddTask(actor.PhaseClusterShardingShutdownRegion, "test-hand-over",
		func(ctx context.Context) error {
			if s := m.Status(); !s.Running || s.Finished || slices.Contains(h.tab.eventsSnapshot(), "terminate 0") {
				ran <- fmt.Errorf("before the caller's hand-over: status %+v, events %v; want the singleton still running", s, h.tab.eventsSnapshot())
				return nil
			}
			err := m.HandOver(ctx)
			if s := m.Status(); err == nil && (!s.Finished || s.Running) {
				err = fmt.Errorf("after HandOver: status %+v, want finished", s)
			}
			ran <- err
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	h.leave(0)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	h.awaitRunning(next, 5*time.Second)
	ev := h.tab.eventsSnapshot()
	if term, started := indexOf(ev, "terminate 0", 0), indexOf(ev, fmt.Sprintf("start %d", next), 0); term < 0 || started < term {
		t.Fatalf("want terminate 0, then start %d; events %v", next, ev)
	}
}
