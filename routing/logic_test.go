package routing_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
	"github.com/troupe-go/troupe/testkit"
)

// refs spawns n idle actors named prefix0, prefix1, ... to stand for routees.
func refs(t *testing.T, sys *actor.System, prefix string, n int) []actor.Ref {
	t.Helper()
	out := make([]actor.Ref, n)
	for i := range out {
		ref, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), fmt.Sprintf("%s%d", prefix, i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = ref
	}
	return out
}

func selectOne(t *testing.T, s routing.Selector, msg any) actor.Ref {
	t.Helper()
	to, err := s.Select(msg)
	if err != nil {
		t.Fatalf("Select(%v): %v", msg, err)
	}
	if len(to) != 1 {
		t.Fatalf("Select(%v) = %v, want one routee", msg, to)
	}
	return to[0]
}

func TestLogicsWithoutRoutees(t *testing.T) {
	for name, l := range map[string]routing.Logic{
		"round-robin":      routing.RoundRobin(),
		"random":           routing.Random(),
		"to-all":           routing.ToAll(),
		"consistent-hash":  routing.ConsistentHashing(routing.ConsistentHashingConfig{}),
		"smallest-mailbox": routing.SmallestMailbox(),
		"scatter-gather":   routing.ScatterGatherFirstCompleted(routing.ScatterGatherConfig{}),
		"tail-chopping":    routing.TailChopping(routing.TailChoppingConfig{}),
	} {
		for _, routees := range [][]actor.Ref{nil, {}} {
			to, err := l.Prepare(routees).Select(keyed("k"))
			if !errors.Is(err, routing.ErrNoRoutees) || len(to) != 0 {
				t.Errorf("%s with %v routees: %v, %v; want ErrNoRoutees", name, routees, to, err)
			}
		}
	}
}

func TestRoundRobinTakesTurns(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 3)
	s := routing.RoundRobin().Prepare(rs)
	for i := range 9 {
		if got := selectOne(t, s, i); got != rs[i%3] {
			t.Fatalf("message %d went to %v, want %v", i, got, rs[i%3])
		}
	}

	// Concurrent senders share the counter: every routee gets exactly its share.
	const senders, each = 8, 3000
	var mu sync.Mutex
	count := map[actor.Ref]int{}
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			local := map[actor.Ref]int{}
			for range each {
				to, _ := s.Select(nil)
				local[to[0]]++
			}
			mu.Lock()
			for r, n := range local {
				count[r] += n
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, r := range rs {
		if count[r] != senders*each/3 {
			t.Errorf("%v got %d, want %d", r, count[r], senders*each/3)
		}
	}

	msg := &struct{}{}
	if n := testing.AllocsPerRun(1000, func() { _, _ = s.Select(msg) }); n != 0 {
		t.Errorf("round-robin Select allocates %v times", n)
	}
}

func TestRandomPicksEveryRoutee(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 4)
	s := routing.Random().Prepare(rs)
	seen := map[actor.Ref]int{}
	for range 2000 {
		seen[selectOne(t, s, 1)]++
	}
	for _, r := range rs {
		if seen[r] < 300 { // expected 500; below 300 has odds under 1e-30
			t.Errorf("%v picked %d times of 2000", r, seen[r])
		}
	}
	if len(seen) != 4 {
		t.Errorf("picked %d distinct routees, want 4", len(seen))
	}
}

func TestToAllSelectsEveryRoutee(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 3)
	to, err := routing.ToAll().Prepare(rs).Select("m")
	if err != nil || len(to) != 3 || to[0] != rs[0] || to[2] != rs[2] {
		t.Fatalf("ToAll: %v, %v", to, err)
	}
	to, err = routing.ScatterGatherFirstCompleted(routing.ScatterGatherConfig{}).Prepare(rs).Select("m")
	if err != nil || len(to) != 3 {
		t.Fatalf("scatter-gather: %v, %v", to, err)
	}
}

func TestTailChoppingAsksInTurn(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 3)
	s := routing.TailChopping(routing.TailChoppingConfig{}).Prepare(rs)
	for i := range 4 {
		to, err := s.Select("m")
		if err != nil || len(to) != 3 {
			t.Fatalf("select %d: %v, %v", i, to, err)
		}
		for k := range to {
			if want := rs[(i+k)%3]; to[k] != want {
				t.Fatalf("select %d: order %v, want to start at %v", i, to, rs[i%3])
			}
		}
	}
}

// keyed is a message that carries its key.
type keyed string

func (k keyed) RoutingKey() string { return string(k) }

func TestConsistentHashingKeys(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 5)
	s := routing.ConsistentHashing(routing.ConsistentHashingConfig{}).Prepare(rs)
	for i := range 100 {
		k := keyed(fmt.Sprint("key-", i))
		if a, b := selectOne(t, s, k), selectOne(t, s, k); a != b {
			t.Fatalf("%q went to %v then %v", k, a, b)
		}
	}
	if _, err := s.Select("no key"); !errors.Is(err, routing.ErrNoKey) {
		t.Fatalf("message without a key: %v, want ErrNoKey", err)
	}

	// The order of the routees does not matter: the ring is built from their paths.
	rev := []actor.Ref{rs[4], rs[3], rs[2], rs[1], rs[0]}
	s2 := routing.ConsistentHashing(routing.ConsistentHashingConfig{}).Prepare(rev)
	for i := range 200 {
		k := keyed(fmt.Sprint("key-", i))
		if selectOne(t, s, k) != selectOne(t, s2, k) {
			t.Fatalf("%q placed differently when the routees come in another order", k)
		}
	}

	// A Key function comes first; messages it declines fall back to Keyed.
	byKey := routing.ConsistentHashing(routing.ConsistentHashingConfig{Key: func(msg any) (string, bool) {
		if n, ok := msg.(int); ok {
			return fmt.Sprint("key-", n), true
		}
		return "", false
	}}).Prepare(rs)
	for i := range 50 {
		if selectOne(t, byKey, i) != selectOne(t, s, keyed(fmt.Sprint("key-", i))) {
			t.Fatalf("Key(%d) and keyed(key-%d) differ", i, i)
		}
	}
	if selectOne(t, byKey, keyed("x")) != selectOne(t, s, keyed("x")) {
		t.Fatal("a Keyed message declined by Key was not routed by its RoutingKey")
	}
}

// TestConsistentHashingMovesOnlyTheNewcomersShare checks the property that makes the
// hashing consistent: with n routees, adding one moves about 1/(n+1) of the keys, all to
// the newcomer, and none between the old routees; removing it moves them back.
func TestConsistentHashingMovesOnlyTheNewcomersShare(t *testing.T) {
	sys := testkit.NewSystem(t)
	const keys = 10_000
	for _, tc := range []struct{ n, vnodes int }{{4, 0}, {10, 0}, {10, 100}, {1, 10}} {
		t.Run(fmt.Sprintf("n=%d,vnodes=%d", tc.n, tc.vnodes), func(t *testing.T) {
			rs := refs(t, sys, fmt.Sprintf("n%dv%d-", tc.n, tc.vnodes), tc.n+1)
			logic := routing.ConsistentHashing(routing.ConsistentHashingConfig{VirtualNodes: tc.vnodes})
			before := logic.Prepare(rs[:tc.n])
			after := logic.Prepare(rs)
			newcomer := rs[tc.n]
			moved := 0
			for i := range keys {
				k := keyed(fmt.Sprint("entity-", i))
				a, b := selectOne(t, before, k), selectOne(t, after, k)
				if a == b {
					continue
				}
				if b != newcomer {
					t.Fatalf("%q moved from %v to %v, an old routee", k, a, b)
				}
				moved++
			}
			share := float64(moved) / keys
			want := 1 / float64(tc.n+1)
			t.Logf("moved %d of %d keys (%.3f; 1/(n+1) = %.3f)", moved, keys, share, want)
			if share < want/3 || share > want*2.5 {
				t.Errorf("moved %.3f of the keys, want about %.3f", share, want)
			}
			// Removing the newcomer again restores every key's routee.
			again := logic.Prepare(rs[:tc.n])
			for i := range keys {
				k := keyed(fmt.Sprint("entity-", i))
				if selectOne(t, before, k) != selectOne(t, again, k) {
					t.Fatalf("%q not back on its routee after the newcomer left", k)
				}
			}
		})
	}
}

func TestConsistentHashingSpreadsKeys(t *testing.T) {
	sys := testkit.NewSystem(t)
	rs := refs(t, sys, "w", 8)
	s := routing.ConsistentHashing(routing.ConsistentHashingConfig{VirtualNodes: 100}).Prepare(rs)
	count := map[actor.Ref]int{}
	for i := range 8000 {
		count[selectOne(t, s, keyed(fmt.Sprint(i)))]++
	}
	for _, r := range rs {
		if count[r] < 500 || count[r] > 1600 { // 1000 each if perfectly even
			t.Errorf("%v holds %d of 8000 keys", r, count[r])
		}
	}
	msg := keyed("k")
	if n := testing.AllocsPerRun(1000, func() { _, _ = s.Select(msg) }); n != 0 {
		t.Errorf("consistent-hashing Select allocates %v times", n)
	}
}

func TestSmallestMailboxPrefersIdle(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	blocker := actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(string); ok {
			_ = probe.Ref().Tell(ctx.Self())
			<-release
		}
	})
	spawn := func(name string) actor.Ref {
		ref, err := sys.Spawn(blocker, name)
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	running, backlogged, idle, gone := spawn("running"), spawn("backlogged"), spawn("idle"), spawn("gone")
	for _, r := range []actor.Ref{running, backlogged} {
		waitIdle(t, r) // past its start, so that "block" finds it idle
		_ = r.Tell("block")
		probe.ExpectMsg(r)
	}
	_ = backlogged.Tell(1)
	probe.Watch(gone)
	_ = sys.Stop(gone)
	probe.ExpectTerminated(gone)
	waitIdle(t, idle)

	logic := routing.SmallestMailbox()
	for i := range 6 {
		if got := selectOne(t, logic.Prepare([]actor.Ref{gone, backlogged, running, idle}), i); got != idle {
			t.Fatalf("select %d: %v, want the idle routee", i, got)
		}
	}
	for i := range 6 {
		if got := selectOne(t, logic.Prepare([]actor.Ref{gone, backlogged, running}), i); got != running {
			t.Fatalf("select %d: %v, want the running routee", i, got)
		}
	}
	for i := range 6 {
		if got := selectOne(t, logic.Prepare([]actor.Ref{gone, backlogged}), i); got != backlogged {
			t.Fatalf("select %d: %v, want the backlogged routee before the stopped one", i, got)
		}
	}
	if got := selectOne(t, logic.Prepare([]actor.Ref{gone}), 0); got != gone {
		t.Fatalf("only routee: %v", got)
	}
}

// waitIdle waits for ref to give its goroutine up: there is no message to tell when,
// so this polls, yielding, up to the default timeout.
func waitIdle(t *testing.T, ref actor.Ref) {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(testkit.DefaultTimeout))
	for ref.Activity() != actor.ActivityIdle {
		if time.Now().After(deadline) {
			t.Fatalf("%v stays %v", ref, ref.Activity())
		}
		runtime.Gosched()
	}
}

func TestRoundRobinDivisor(t *testing.T) {
	sys := testkit.NewSystem(t)
	for _, n := range []int{1, 2, 3, 7, 8, 10, 100, 1000} {
		rs := refs(t, sys, fmt.Sprintf("d%d-", n), n)
		s := routing.RoundRobin().Prepare(rs)
		for i := range 3 * n {
			if got := selectOne(t, s, i); got != rs[i%n] {
				t.Fatalf("n=%d: message %d to %v, want %v", n, i, got, rs[i%n])
			}
		}
	}
}
