package rollingtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/sharding"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
)

const (
	counters = 16
	workers  = 4
	pace     = 20 * time.Millisecond // between one worker's asks: about 200 asks/s in all
	askLimit = 10 * time.Second      // an ask that takes longer fails
)

// Three node processes of a sharded, persistent counter on PostgreSQL, under a steady
// load of asks from a fourth member (this test's process, a proxy that hosts nothing).
// One node gets SIGTERM: it exits 0 within its shutdown bound and no ask fails. Then
// every node, the first seed node included, is stopped by SIGTERM and restarted with
// the environment it started with, one after the other: again no ask fails, and at the
// end every counter holds exactly the increments that were acknowledged.
func TestSIGTERMAndARollingRestartFailNoAsk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	schema := fmt.Sprintf("rolling_%d", time.Now().UnixNano()) // the counters start at 0 in every run
	procs := make([]*proc, 3)
	seeds := make([]string, 3)
	for i := range procs {
		gossip := freePort(t)
		seeds[i] = fmt.Sprintf("127.0.0.1:%d", gossip)
		procs[i] = &proc{name: fmt.Sprintf("node-%d", i), gossip: seeds[i]}
		procs[i].env = []string{
			envNode + "=" + procs[i].name,
			fmt.Sprintf("%s=%d", envRemote, freePort(t)),
			fmt.Sprintf("%s=%d", envGossip, gossip),
			envPostgres + "=" + target.ConnString,
			envSchema + "=" + schema,
		}
	}
	for _, p := range procs {
		p.env = append(p.env, envSeeds+"="+strings.Join(seeds, ","))
	}
	for _, p := range procs { // all at once: only the first seed node forms the cluster
		p.start(t)
	}

	logger, stopLog := testkit.NewLogger(t, zap.WarnLevel)
	defer stopLog()
	sys := testkit.NewSystem(t, actor.Config{Logger: logger})
	for _, p := range procs {
		t.Cleanup(p.kill) // before the system's own cleanup, which looks for leaked goroutines
	}
	reg, err := registry()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Start(sys, remote.Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(sys, clusterConfig(seeds, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	view := &members{events: testkit.NewProbe(t, sys), up: make(map[string]bool)}
	if err := c.Subscribe(view.events.Ref()); err != nil {
		t.Fatal(err)
	}
	s, err := sharding.Start(sys, sharding.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartProxy(typeName, sharding.ProxyConfig{NumberOfShards: 24, Role: role, RetryInterval: shardTimings().RetryInterval}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the client's view: %+v", c.State().Members)
			for _, p := range procs {
				t.Logf("%s's log:\n%s", p.name, p.stderr)
			}
		}
	})
	for _, p := range procs {
		view.waitUp(t, p)
	}

	l := newLoad(t, sys)
	l.start()
	l.progress(t, 200) // the load runs before the first signal
	took := procs[1].terminate(t)
	t.Logf("%s exited 0 %v after SIGTERM (bound %v)", procs[1].name, took.Round(time.Millisecond), procs[1].bound)
	l.progress(t, 200) // the load runs on two nodes
	procs[1].start(t)
	view.waitUp(t, procs[1])
	l.progress(t, 200)
	exits := []time.Duration{took}
	for _, p := range procs { // the rolling restart, the first seed node first
		took := p.terminate(t)
		exits = append(exits, took)
		t.Logf("%s exited 0 %v after SIGTERM; restarting it", p.name, took.Round(time.Millisecond))
		p.start(t)
		view.waitUp(t, p)
		l.progress(t, 200)
	}
	st := l.stop()
	t.Logf("asks answered %d, failed %d, longest %v, median %v; exits after SIGTERM %v (bound %v)",
		st.answered, st.failed, st.longest.Round(time.Millisecond), st.median.Round(time.Millisecond),
		roundAll(exits), procs[0].bound)
	if st.failed > 0 {
		t.Errorf("%d asks failed; the first: %s", st.failed, st.firstErr)
	}
	l.check(t)
	for _, p := range procs[1:] {
		p.terminate(t)
	}
	procs[0].terminate(t) // the last member: it leaves alone
}

// members follows the client's view of the members that are Up, from its
// subscription to the cluster's events.
type members struct {
	events *testkit.Probe
	up     map[string]bool // unique addresses
}

// waitUp waits until the client sees p's running incarnation Up.
func (m *members) waitUp(t *testing.T, p *proc) {
	t.Helper()
	for !m.up[p.unique] {
		switch ev := m.events.FishForMessage(func(any) bool { return true }, time.Minute).(type) {
		case cluster.MemberUp:
			m.up[ev.Member.Unique.String()] = true
		case cluster.CurrentClusterState:
			for _, mb := range ev.Members {
				if mb.Status == cluster.Up {
					m.up[mb.Unique.String()] = true
				}
			}
		}
	}
}

// load asks the counters from several workers, each at a steady pace.
type load struct {
	sys  *actor.System
	refs []sharding.EntityRef[any]
	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	answered int
	failed   int
	firstErr string
	times    []time.Duration
	values   map[int][]int // per counter, the values its answers carried
	tick     chan struct{} // a token per answered ask, for progress
}

// loadStats is what a run measured.
type loadStats struct {
	answered, failed int
	longest, median  time.Duration
	firstErr         string
}

func newLoad(t *testing.T, sys *actor.System) *load {
	l := &load{sys: sys, done: make(chan struct{}), values: make(map[int][]int), tick: make(chan struct{}, 1<<20)}
	for i := range counters {
		ref, err := sharding.EntityRefFor[any](sys, typeName, sharding.EntityID(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		l.refs = append(l.refs, ref)
	}
	return l
}

func (l *load) start() {
	for w := range workers {
		l.wg.Add(1)
		go l.work(rand.New(rand.NewPCG(uint64(w), 1)))
	}
}

func (l *load) work(r *rand.Rand) {
	defer l.wg.Done()
	next := time.NewTicker(pace)
	defer next.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-next.C:
		}
		i := r.IntN(counters)
		ctx, cancel := context.WithTimeout(context.Background(), askLimit)
		began := time.Now()
		c, err := sharding.Ask[count, any](ctx, l.refs[i], increment{})
		took := time.Since(began)
		cancel()
		l.mu.Lock()
		if err != nil {
			l.failed++
			if l.firstErr == "" {
				l.firstErr = fmt.Sprintf("counter %d after %v: %v", i, took, err)
			}
		} else {
			l.answered++
			l.times = append(l.times, took)
			l.values[i] = append(l.values[i], c.Value)
		}
		l.mu.Unlock()
		if err == nil {
			l.tick <- struct{}{}
		}
	}
}

// progress waits until n more asks have been answered.
func (l *load) progress(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(time.Minute)
	for range n {
		select {
		case <-l.tick:
		case <-timeout:
			st := l.stats()
			t.Fatalf("the load stalled: %d answered, %d failed (%s)", st.answered, st.failed, st.firstErr)
		}
	}
}

func (l *load) stop() loadStats {
	close(l.done)
	l.wg.Wait()
	return l.stats()
}

func (l *load) stats() loadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := loadStats{answered: l.answered, failed: l.failed, firstErr: l.firstErr}
	times := slices.Clone(l.times)
	slices.Sort(times)
	if n := len(times); n > 0 {
		st.longest, st.median = times[n-1], times[n/2]
	}
	return st
}

// check asks every counter for its count: it must be the number of increments
// acknowledged, and their answers must have carried each value from 1 to it once.
func (l *load) check(t *testing.T) {
	t.Helper()
	for i, ref := range l.refs {
		ctx, cancel := context.WithTimeout(context.Background(), askLimit)
		c, err := sharding.Ask[count, any](ctx, ref, get{})
		cancel()
		if err != nil {
			t.Errorf("counter %d: get: %v", i, err)
			continue
		}
		vals := slices.Clone(l.values[i])
		sort.Ints(vals)
		want := make([]int, len(vals))
		for j := range want {
			want[j] = j + 1
		}
		if c.Value != len(vals) || !slices.Equal(vals, want) {
			t.Errorf("counter %d: count %d after %d acknowledged increments (answers %v)", i, c.Value, len(vals), vals)
		}
	}
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
