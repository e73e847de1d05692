package singleton_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/singleton"
	"github.com/troupe-go/troupe/supervision"
	"github.com/troupe-go/troupe/testkit"
)

// Invalid settings get a clear error from Start and Proxy.
func TestInvalidSettings(t *testing.T) {
	props := actor.PropsFunc(func(actor.Context) {})
	alone, err := actor.New("alone", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := singleton.Start(alone, singleton.Config{Props: props}); !errors.Is(err, singleton.ErrInvalidConfig) {
		t.Errorf("no cluster: %v", err)
	}
	if _, err := singleton.Proxy(alone, singleton.ProxyConfig{}); !errors.Is(err, singleton.ErrInvalidConfig) {
		t.Errorf("proxy without a cluster: %v", err)
	}
	if err := alone.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{nodes: 1, noStart: true})
	sys := h.c.Node(0).System
	for _, c := range []struct {
		what string
		cfg  singleton.Config
	}{
		{"no Props", singleton.Config{}},
		{"invalid Props", singleton.Config{Props: &actor.Props{}}},
		{"a name with a slash", singleton.Config{Props: props, Name: "a/b"}},
		{"a negative retry interval", singleton.Config{Props: props, HandOverRetryInterval: -time.Second}},
		{"negative retries", singleton.Config{Props: props, MinHandOverRetries: -1}},
		{"a negative buffer", singleton.Config{Props: props, BufferSize: -1}},
		{"an invalid backoff", singleton.Config{Props: props, Backoff: supervision.Backoff{Min: time.Second, Max: time.Millisecond}}},
		{"a role this member lacks", singleton.Config{Props: props, Role: "elsewhere"}},
	} {
		if _, err := singleton.Start(sys, c.cfg); !errors.Is(err, singleton.ErrInvalidConfig) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	if _, err := singleton.Start(sys, singleton.Config{Props: props}); err != nil {
		t.Fatal(err)
	}
	if _, err := singleton.Start(sys, singleton.Config{Props: props, Name: singleton.DefaultName}); !errors.Is(err, singleton.ErrAlreadyStarted) {
		t.Errorf("a second Start: %v", err)
	}
	if _, err := singleton.Start(sys, singleton.Config{Props: props, Name: "other"}); err != nil {
		t.Errorf("a second singleton: %v", err)
	}
	for _, c := range []singleton.ProxyConfig{{BufferSize: singleton.MaxProxyBufferSize + 1}, {IdentificationInterval: -1}, {Name: "a b"}} {
		if _, err := singleton.Proxy(sys, c); !errors.Is(err, singleton.ErrInvalidConfig) {
			t.Errorf("proxy %+v: %v", c, err)
		}
	}
}

// A singleton that fails in Started is restarted after growing delays, and its
// manager keeps working: it still hands the singleton over when its member leaves.
func TestFailingSingletonRestartsWithBackoff(t *testing.T) {
	attempt := make(chan time.Time, 100)
	backoff := supervision.Backoff{Min: 50 * time.Millisecond, Max: 400 * time.Millisecond}
	h := newHarness(t, harnessOptions{mod: func(i int, cfg *singleton.Config) {
		cfg.Backoff = backoff
		if i == 0 {
			cfg.Props = actor.PropsFunc(func(ctx actor.Context) {
				if _, ok := ctx.Message().(actor.Started); ok {
					attempt <- time.Now()
					panic("the singleton cannot start")
				}
			})
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if _, err := h.manager(0).AwaitStatus(ctx, func(s singleton.Status) bool { return s.State == singleton.StateOldest }); err != nil {
		t.Fatal(err)
	}
	var attempts []time.Time
	for range 5 {
		select {
		case at := <-attempt:
			attempts = append(attempts, at)
		case <-time.After(testkit.Dilated(5 * time.Second)):
			t.Fatalf("%d attempts to start the singleton, want 5", len(attempts))
		}
	}
	for k := 1; k < 5; k++ {
		gap, want := attempts[k].Sub(attempts[k-1]), min(backoff.Min<<(k-1), backoff.Max)
		if gap < want-10*time.Millisecond {
			t.Errorf("restart %d came %v after the failure before, want at least %v", k, gap, want)
		}
	}
	if st := h.manager(0).Status(); st.State != singleton.StateOldest || !st.Running {
		t.Fatalf("node 0: %+v", st)
	}
	next := h.byAge(0)[1]
	h.leave(0)
	h.awaitRunning(next, 5*time.Second)
	if got := h.ping(next, 3*time.Second); got != next {
		t.Fatalf("reached node %d, want %d", got, next)
	}
}

// A proxy for a singleton nobody runs buffers, and drops the oldest messages when its
// buffer is full: each becomes an Undelivered dead letter and is counted.
func TestProxyForAnUnknownSingleton(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 1})
	sys := h.c.Node(0).System
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	p, err := singleton.Proxy(sys, singleton.ProxyConfig{Name: "nobody", BufferSize: 5, IdentificationInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	before := singleton.Dropped(sys)
	for i := 1; i <= 8; i++ {
		if err := p.Tell(Numbered{Stream: "x", Seq: i}); err != nil {
			t.Fatal(err)
		}
	}
	for want := 1; want <= 3; want++ {
		dl := dead.FishForMessage(func(msg any) bool {
			u, ok := msg.(actor.DeadLetter).Message.(singleton.Undelivered)
			return ok && u.Singleton == "nobody"
		}).(actor.DeadLetter)
		u := dl.Message.(singleton.Undelivered)
		if n, ok := u.Message.(Numbered); !ok || n.Seq != want || !strings.Contains(u.Reason, "buffer") {
			t.Fatalf("dead letter %d: %+v", want, u)
		}
	}
	if got := singleton.Dropped(sys) - before; got != 3 {
		t.Fatalf("%d drops counted, want 3", got)
	}
	dead.ExpectNoMsgMatching(testkit.Dilated(300*time.Millisecond), func(msg any) bool {
		u, ok := msg.(actor.DeadLetter).Message.(singleton.Undelivered)
		return ok && u.Singleton == "nobody"
	})
}

// A message whose type is not registered cannot go through a proxy: it becomes an
// Undelivered dead letter naming the reason, and an Ask fails at once.
func TestProxyRefusesUnregisteredMessages(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 1})
	h.ping(0, 3*time.Second)
	sys := h.c.Node(0).System
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(5*time.Second))
	defer cancel()
	start := time.Now()
	if _, err := actor.Ask[Pong](ctx, h.proxy(0), Unregistered{}); !errors.Is(err, actor.ErrDeadLetter) {
		t.Fatalf("ask: %v", err)
	}
	if d := time.Since(start); d > testkit.Dilated(time.Second) {
		t.Errorf("the ask failed after %v", d)
	}
	dl := dead.FishForMessage(func(msg any) bool {
		_, ok := msg.(actor.DeadLetter).Message.(singleton.Undelivered)
		return ok
	}).(actor.DeadLetter)
	if u := dl.Message.(singleton.Undelivered); !strings.Contains(u.Reason, "not registered") {
		t.Fatalf("reason: %q", u.Reason)
	}
}

// Messages sent through a proxy in a burst travel in batches; one too large for a
// frame travels alone and is dropped alone (an Undelivered dead letter naming the
// reason), and the others reach the singleton in order.
func TestProxyDropsATooLargeMessageAlone(t *testing.T) {
	h := newHarness(t, harnessOptions{nodes: 2})
	host := h.ping(0, 5*time.Second)
	from := 1 - host
	h.ping(from, 5*time.Second)
	sys := h.c.Node(from).System
	dead := testkit.NewProbe(t, sys)
	actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
	huge := strings.Repeat("x", 300<<10) // above the transport's frame of 256 KiB
	p := h.proxy(from)
	for i := 1; i <= 200; i++ {
		if i == 100 {
			if err := p.Tell(Numbered{Stream: huge, Seq: i}); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Tell(Numbered{Stream: "burst", Seq: i}); err != nil {
			t.Fatal(err)
		}
	}
	h.tab.await(t, 10*time.Second, "the burst", func(tb *table) bool { return len(tb.streams["burst"]) == 200 })
	if got := h.tab.stream("burst"); !slices.Equal(got, seqs(1, 200)) {
		t.Fatalf("received %v", got)
	}
	dl := dead.FishForMessage(func(msg any) bool {
		_, ok := msg.(actor.DeadLetter).Message.(singleton.Undelivered)
		return ok
	}).(actor.DeadLetter)
	u := dl.Message.(singleton.Undelivered)
	if n, ok := u.Message.(Numbered); !ok || n.Seq != 100 || !strings.Contains(u.Reason, "failed") {
		t.Fatalf("dead letter: %.200v", u)
	}
}

func seqs(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// failsOnce is the test singleton, which fails (panics) at the first message of
// stream "held" it gets, once on any node.
type failsOnce struct {
	instance
	failed *atomic.Bool
}

func (f *failsOnce) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(Numbered); ok && m.Stream == "held" && f.failed.CompareAndSwap(false, true) {
		panic("the singleton fails")
	}
	f.instance.Receive(ctx)
}

// The messages a manager holds while its singleton waits for a restart arrive in
// batches from a proxy on another member; the manager reuses a batch's memory for
// later batches only when nothing holds its messages, so that the held messages
// reach the new instance as they were sent: in order, none twice.
func TestHeldMessagesSurviveLaterBatches(t *testing.T) {
	failed := new(atomic.Bool)
	var h *harness
	h = newHarness(t, harnessOptions{nodes: 2, noStart: true, mod: func(i int, cfg *singleton.Config) {
		cfg.Backoff = supervision.Backoff{Min: time.Second, Max: time.Second}
		cfg.Props = actor.PropsOf(func() actor.Actor { return &failsOnce{instance: instance{tab: h.tab, node: i}, failed: failed} })
	}})
	for _, node := range h.c.Nodes() {
		h.start(node.Index)
	}
	host := h.ping(0, 10*time.Second)
	from := 1 - host
	if got := h.ping(from, 10*time.Second); got != host {
		t.Fatalf("node %d reaches the singleton on node %d, node 0 on node %d", from, got, host)
	}
	const n = 5000
	p := h.proxy(from)
	if err := p.Tell(Numbered{Stream: "held", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	h.tab.await(t, 10*time.Second, "the failure", func(tb *table) bool { return len(tb.alive) == 0 })
	// Sent while the singleton waits for its restart (the backoff is much longer than
	// sending them takes): the manager holds them all, batch after batch.
	for seq := 2; seq <= n; seq++ {
		if err := p.Tell(Numbered{Stream: "held", Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	h.tab.await(t, 10*time.Second, "the last message", func(tb *table) bool {
		s := tb.streams["held"]
		return len(s) > 0 && s[len(s)-1] == n
	})
	if !failed.Load() {
		t.Fatal("the singleton did not fail")
	}
	if got := h.tab.stream("held"); len(got) != n-1 || !slices.IsSorted(got) || got[0] != 2 {
		t.Fatalf("received %d messages, want 2 to %d in order: %v", len(got), n, got)
	}
}
