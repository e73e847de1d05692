package sharding

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// The invariant checker: a 5-node cluster goes through a seeded schedule of crashes,
// partitions, graceful leaves and joins while clients increment persistent counters and
// read and write persistent registers. Afterwards it checks: never two live
// incarnations of one entity (the in-process table), every acknowledged increment
// present, no message lost while shards moved gracefully, every entity reachable (the
// cluster converged), every client's stream of tells in order and never doubled
// (complete, when shards moved only gracefully; invariant_streams_test.go), and every
// counter's and register's history linearizable (porcupine). A failing seed reproduces its schedule (the timing of the cluster's own
// goroutines is not reproduced).
//
//	go test ./sharding -run TestInvariants -sharding.seeds=50
//	go test ./sharding -run TestInvariants -sharding.seed=17

var (
	invariantSeeds = flag.Int("sharding.seeds", 2, "seeded runs of TestInvariants")
	invariantSeed  = flag.Int64("sharding.seed", -1, "run TestInvariants with this seed only")
	invariantSteps = flag.Int("sharding.steps", 3, "fault events per run of TestInvariants")
)

// Register commands and events (persistent registers, one entity per key).
type (
	RegWrite   struct{ V string }
	RegRead    struct{}
	RegWritten struct{ V string }
)

type pregister struct {
	id   string
	v    string
	in   *incarnations
	node string
	live bool
}

func (r *pregister) PersistenceID() string { return "Reg-" + r.id }

func (r *pregister) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case RegWritten:
		r.v = m.V
	case persistence.RecoveryCompleted:
		r.live = true
		r.in.startRef(EntityID("reg-"+r.id), r.node, ctx.System(), ctx.Self())
	}
}

func (r *pregister) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case RegWrite:
		_ = persistence.Persist(ctx, RegWritten(m), func(ev RegWritten) {
			r.v = ev.V
			_ = ctx.Respond("ok")
		})
	case RegRead:
		_ = ctx.Respond(r.v)
	case actor.Stopped, actor.Restarting:
		if r.live {
			r.live = false
			r.in.stop(EntityID("reg-"+r.id), r.node)
		}
	}
}

func registerTypes(reg *serialization.Registry) error {
	return errors.Join(
		serialization.Register[RegWrite](reg, "test.RegWrite"),
		serialization.Register[RegRead](reg, "test.RegRead"),
		serialization.Register[RegWritten](reg, "test.RegWritten"),
		serialization.Register[SeqTell](reg, "test.SeqTell"),
		serialization.Register[seqSync](reg, "test.seqSync"),
	)
}

// unknown is the output of an operation whose reply never came: it may or may not
// have taken effect.
const unknown = "?"

// history records operations for porcupine, per entity.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   map[string][]porcupine.Operation
}

func (h *history) add(key string, client int, in any, call time.Time, out any, ret time.Time, ok bool) {
	op := porcupine.Operation{ClientId: client, Input: in, Call: call.Sub(h.start).Nanoseconds(), Output: out}
	if ok {
		op.Return = ret.Sub(h.start).Nanoseconds()
	} else {
		op.Output, op.Return = unknown, math.MaxInt64
	}
	h.mu.Lock()
	h.ops[key] = append(h.ops[key], op)
	h.mu.Unlock()
}

// counterModel: inputs are Increment or GetCount, outputs the count.
var counterModel = porcupine.Model{
	Init: func() any { return 0 },
	Step: func(state, input, output any) (bool, any) {
		n := state.(int)
		switch in := input.(type) {
		case Increment:
			if output == unknown {
				return true, n + in.By
			}
			return output.(int) == n+in.By, n + in.By
		default:
			return output == unknown || output.(int) == n, n
		}
	},
	DescribeOperation: func(in, out any) string { return fmt.Sprintf("%T%v -> %v", in, in, out) },
}

// registerModel: inputs are RegWrite or RegRead; a write answers "ok", a read the value.
var registerModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		switch in := input.(type) {
		case RegWrite:
			return output == unknown || output == "ok", in.V
		default:
			return output == unknown || output.(string) == state.(string), state
		}
	},
	DescribeOperation: func(in, out any) string { return fmt.Sprintf("%T%v -> %v", in, in, out) },
}

// liveRegions is the clients' view of which nodes they may use.
type liveRegions struct {
	mu      sync.Mutex
	regions map[int][2]actor.Ref // node -> counter region, register region
	streams map[int]streamNode   // node -> what stream clients send through
	leaving map[int]bool
}

// pickStream picks a node that is not leaving, for a stream client.
func (l *liveRegions) pickStream(rng *rand.Rand) (int, streamNode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return pickStaying(l, l.streams, rng)
}

// pickStaying picks a node of m that is not leaving; the caller holds l.mu.
func pickStaying[V any](l *liveRegions, m map[int]V, rng *rand.Rand) (int, V, bool) {
	var ids []int
	for i := range m {
		if !l.leaving[i] {
			ids = append(ids, i)
		}
	}
	if len(ids) == 0 {
		var zero V
		return 0, zero, false
	}
	slices.Sort(ids)
	i := ids[rng.IntN(len(ids))]
	return i, m[i], true
}

// isLeaving reports whether node i leaves, or has left.
func (l *liveRegions) isLeaving(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, up := l.streams[i]
	return l.leaving[i] || !up
}

// names returns the names of the node incarnations stream clients may use.
func (l *liveRegions) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i, sn := range l.streams {
		if !l.leaving[i] {
			out = append(out, sn.name)
		}
	}
	return out
}

func (l *liveRegions) pick(rng *rand.Rand) (int, [2]actor.Ref, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return pickStaying(l, l.regions, rng)
}

func (l *liveRegions) set(i int, r [2]actor.Ref, sn streamNode) {
	l.mu.Lock()
	l.regions[i] = r
	l.streams[i] = sn
	delete(l.leaving, i)
	l.mu.Unlock()
}

func (l *liveRegions) remove(i int) {
	l.mu.Lock()
	delete(l.regions, i)
	delete(l.streams, i)
	l.mu.Unlock()
}

func (l *liveRegions) markLeaving(i int, on bool) {
	l.mu.Lock()
	l.leaving[i] = on
	l.mu.Unlock()
}

// gracefulWindow is a time span in which a node left gracefully.
type gracefulWindow struct {
	node       int
	start, end time.Time
}

func TestInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("the randomized invariant test takes a minute; run without -short")
	}
	seeds := []uint64{}
	if *invariantSeed >= 0 {
		seeds = append(seeds, uint64(*invariantSeed))
	} else {
		for s := range *invariantSeeds {
			seeds = append(seeds, uint64(s+1))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runInvariants(t, seed, *invariantSteps) })
	}
}

func runInvariants(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	table := newIncarnations()
	cfg := func(i int) EntityConfig {
		c := persistentCounterConfig()
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d", i))
		c.Timings.RebalanceInterval = time.Second
		return c
	}
	// The removal margin: twice the test cluster's stable-after, configured on every
	// node. (With the cluster's default, stable-after, seeds 2 and 5 found two
	// incarnations: on this loaded machine a minority member downed itself up to 3.7 s
	// after the majority had removed it.)
	margin := func(_ int, c *cluster.Config) { c.Downing.DownRemovalMargin = testkit.Dilated(6 * time.Second) }
	sc := newShardCluster(t, multinode.Options{Nodes: 5, Configure: margin}, cfg, true, nil)
	if err := registerTypes(sc.reg); err != nil {
		t.Fatal(err)
	}
	live := &liveRegions{regions: map[int][2]actor.Ref{}, streams: map[int]streamNode{}, leaving: map[int]bool{}}
	streams, streamsSent := newStreamLog(), &streamCounts{n: map[string]int{}}
	incarnation := map[int]int{}
	// Nodes the cluster downs on its own (a loaded machine makes its failure detector
	// see failures that are not there) lose messages legitimately: such a run checks
	// "nothing lost during graceful moves" only when this stays 0.
	var emu sync.Mutex
	expected := map[*actor.System]bool{}
	var unplanned atomic.Int64
	var ending atomic.Bool
	expect := func(i int) {
		emu.Lock()
		expected[sc.mc.Node(i).System] = true
		emu.Unlock()
	}
	sc.extra = func(i int, s *Sharding) {
		node0 := sc.mc.Node(i)
		go func(sys *actor.System, stopped <-chan struct{}) {
			select {
			case <-stopped:
				emu.Lock()
				planned := expected[sys]
				emu.Unlock()
				if !planned && !ending.Load() {
					unplanned.Add(1)
				}
			case <-sys.Terminated():
			}
		}(node0.System, node0.Cluster.Stopped())
		incarnation[i]++
		node := fmt.Sprintf("node%d.%d", i, incarnation[i])
		c := persistentCounterConfig()
		c.EntityFactory = func(id EntityID) *actor.Props {
			return persistence.Props(func() persistence.Entity { return &pregister{id: string(id), in: table, node: node} })
		}
		c.Timings.RebalanceInterval = time.Second
		reg, err := s.Start("Reg", c)
		if err != nil {
			t.Fatal(err)
		}
		live.set(i, [2]actor.Ref{sc.nodes[i].region, reg}, newStreamNode(t, s, node0.System, node, streams))
	}
	// The tracked counters name their node by index; give each incarnation of a node its
	// own name, so that a restarted node's entities are told apart from the old ones.
	sc.cfg = func(i int) EntityConfig {
		c := cfg(i)
		c.EntityFactory = trackedCounters(table, fmt.Sprintf("node%d.%d", i, incarnation[i]+1))
		return c
	}
	for i := range 5 {
		sc.startSharding(i)
	}

	h := &history{start: time.Now(), ops: map[string][]porcupine.Operation{}}
	var graceful []gracefulWindow
	var gmu sync.Mutex
	type failedOp struct {
		node int
		call time.Time
		key  string
		err  error
	}
	var failed []failedOp
	acked := map[EntityID]int{}
	sent := map[EntityID]int{}
	var amu sync.Mutex
	counters := entityIDs(8)
	keys := []string{"k0", "k1", "k2", "k3"}

	stop := make(chan struct{})
	var clients sync.WaitGroup
	var writes atomic.Int64
	for c := range 4 {
		clients.Add(1)
		crng := rand.New(rand.NewPCG(seed, uint64(c)))
		go func() {
			defer clients.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				node, regions, ok := live.pick(crng)
				if !ok {
					continue
				}
				var key string
				var in any
				var region actor.Ref
				var entity EntityID
				if crng.IntN(2) == 0 {
					entity = counters[crng.IntN(len(counters))]
					key, region = "counter-"+string(entity), regions[0]
					if crng.IntN(3) == 0 {
						in = GetCount{}
					} else {
						in = Increment{By: 1}
						amu.Lock()
						sent[entity]++
						amu.Unlock()
					}
				} else {
					k := keys[crng.IntN(len(keys))]
					key, region, entity = "reg-"+k, regions[1], EntityID(k)
					if crng.IntN(2) == 0 {
						in = RegRead{}
					} else {
						in = RegWrite{V: fmt.Sprintf("c%d-%d", c, writes.Add(1))}
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(4*time.Second))
				call := time.Now()
				out, err := region.Ask(ctx, Envelope{EntityID: entity, Message: in}).Result(ctx)
				ret := time.Now()
				cancel()
				h.add(key, c, in, call, out, ret, err == nil)
				if err != nil {
					gmu.Lock()
					failed = append(failed, failedOp{node: node, call: call, key: key, err: err})
					gmu.Unlock()
					continue
				}
				if inc, ok := in.(Increment); ok {
					amu.Lock()
					acked[entity] += inc.By
					amu.Unlock()
				}
			}
		}()
	}
	for c := range 2 {
		clients.Add(1)
		crng := rand.New(rand.NewPCG(seed, uint64(100+c)))
		go func() {
			defer clients.Done()
			runStreamClient(c, crng, live, stop, streamsSent)
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		clients.Wait()
	}()

	// Let the clients warm up, then run the schedule.
	sc.askEventually(0, counters[0], GetCount{}, 20*time.Second)
	schedule := []string{}
	for step := range steps {
		alive := []int{}
		for i := range len(sc.mc.Nodes()) {
			if n, ok := sc.nodes[i]; ok && n.System != nil {
				select {
				case <-n.System.Terminated():
				default:
					alive = append(alive, i)
				}
			}
		}
		kind := []string{"crash", "leave", "partition", "join"}[rng.IntN(4)]
		if kind == "join" && len(sc.mc.Nodes()) >= 7 {
			kind = "leave"
		}
		victim := alive[rng.IntN(len(alive))]
		schedule = append(schedule, fmt.Sprintf("%d:%s(%d)", step, kind, victim))
		t.Logf("seed %d step %d: %s of node %d (alive %v)", seed, step, kind, victim, alive)
		switch kind {
		case "crash":
			expect(victim)
			live.remove(victim)
			sc.mc.Crash(victim)
			sc.mc.Restart(victim)
			sc.startSharding(victim)
		case "leave":
			expect(victim)
			live.markLeaving(victim, true)
			w := gracefulWindow{node: victim, start: time.Now()}
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(20*time.Second))
			err := sc.nodes[victim].System.Shutdown(ctx)
			cancel()
			w.end = time.Now()
			gmu.Lock()
			graceful = append(graceful, w)
			gmu.Unlock()
			live.remove(victim)
			if err != nil {
				t.Logf("seed %d: graceful leave of node %d: %v", seed, victim, err)
			}
			sc.mc.Restart(victim)
			sc.startSharding(victim)
		case "partition":
			minority := []int{victim}
			var majority []int
			for _, i := range alive {
				if i != victim {
					majority = append(majority, i)
				}
			}
			if len(alive) >= 5 {
				other := majority[1+rng.IntN(len(majority)-1)]
				minority = append(minority, other)
				majority = slices.DeleteFunc(majority, func(i int) bool { return i == other })
			}
			for _, i := range minority {
				expect(i)
				live.remove(i)
			}
			sc.mc.Partition(minority, majority)
			for _, i := range minority {
				select {
				case <-sc.nodes[i].System.Terminated():
				case <-time.After(testkit.Dilated(30 * time.Second)):
					sc.mc.Heal()
					t.Skipf("seed %d INCONCLUSIVE: node %d did not down itself within 30s of the partition: the "+
						"split-brain resolver did not settle it (a cluster result, not a sharding one)", seed, i)
				}
			}
			sc.mc.Heal()
			for _, i := range minority {
				sc.mc.Restart(i)
				sc.startSharding(i)
			}
		case "join":
			n := sc.mc.Add()
			sc.startSharding(n.Index)
		}
		sc.mc.AwaitAllUp(testkit.Dilated(30 * time.Second))
		// Converged: every counter answers.
		for _, id := range counters {
			sc.askEventually(victimOr0(victim), id, GetCount{}, 30*time.Second)
		}
	}
	close(stop)
	clients.Wait()
	ending.Store(true)
	if n := unplanned.Load(); n > 0 {
		t.Logf("seed %d: the cluster downed %d node(s) on its own (false failure detections): "+
			"the checks of graceful moves are left out", seed, n)
	}

	// 1. Never two live incarnations.
	table.mu.Lock()
	violations := slices.Clone(table.violations)
	table.mu.Unlock()
	if len(violations) > 0 {
		t.Errorf("seed %d (schedule %v): two live incarnations: %v", seed, schedule, violations)
	}
	// 2. Every acknowledged increment is present and none was counted twice; with only
	// graceful moves (no crash, no partition) every increment sent is present.
	onlyGraceful := true
	for _, e := range schedule {
		if !strings.Contains(e, "leave") && !strings.Contains(e, "join") {
			onlyGraceful = false
		}
	}
	for _, id := range counters {
		n := sc.askEventually(0, id, GetCount{}, 30*time.Second)
		amu.Lock()
		a, s := acked[id], sent[id]
		amu.Unlock()
		if n < a || n > s || onlyGraceful && unplanned.Load() == 0 && n != s {
			t.Errorf("seed %d (schedule %v): counter %s is %d; acknowledged %d, sent %d", seed, schedule, id, n, a, s)
		}
	}
	// 3. Nothing dropped while shards moved gracefully: no operation sent through
	// another node during a graceful leave became a dead letter. (A slow answer is not a
	// loss: the counts above show whether the message arrived.)
	for _, f := range failed {
		if unplanned.Load() > 0 {
			break
		}
		for _, w := range graceful {
			if f.node != w.node && !f.call.Before(w.start) && f.call.Before(w.end) && errors.Is(f.err, actor.ErrDeadLetter) {
				t.Errorf("seed %d (schedule %v): %s through node %d dropped during the graceful leave of node %d: %v",
					seed, schedule, f.key, f.node, w.node, f.err)
			}
		}
	}
	// 4. Streams of tells: in order, never twice; with only graceful moves, complete.
	checkStreams(t, seed, schedule, streams, streamsSent, live.names(), onlyGraceful && unplanned.Load() == 0)
	// 5. Linearizable histories.
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, ops := range h.ops {
		model := registerModel
		if len(key) > 8 && key[:8] == "counter-" {
			model = counterModel
		}
		res := porcupine.CheckOperationsTimeout(model, ops, 20*time.Second)
		if res == porcupine.Illegal {
			t.Errorf("seed %d (schedule %v): history of %s is not linearizable (%d operations)", seed, schedule, key, len(ops))
		}
		if res == porcupine.Unknown {
			t.Logf("seed %d: linearizability of %s not decided in time (%d operations)", seed, key, len(ops))
		}
	}
	t.Logf("seed %d: schedule %v, %d operations on %d entities, %d failed (crashes and partitions)", seed, schedule,
		countOps(h.ops), len(h.ops), len(failed))
}

// victimOr0 returns a node other than the victim to ask through: node 0, or node 1
// when node 0 was the victim.
func victimOr0(victim int) int {
	if victim == 0 {
		return 1
	}
	return 0
}

func countOps(m map[string][]porcupine.Operation) int {
	n := 0
	for _, ops := range m {
		n += len(ops)
	}
	return n
}
