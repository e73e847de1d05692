package sharding

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/cluster"
)

// coordWorld is a randomized environment for one coordinator core: regions that answer
// (or fail to answer) its messages, die, leave and register again, with stores that
// complete or fail, timers that fire, and membership that flickers.
type coordWorld struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	h    *coordHarness
	step int

	regions []RegionID        // every region or proxy ever created
	proxy   map[RegionID]bool // proxies
	dead    map[RegionID]bool // stopped; never sends again
	shards  []ShardID

	// What regions owe the coordinator, as the real ones would answer.
	acks    []owed // BeginHandOff -> BeginHandOffAck
	stops   []owed // HandOff -> ShardStopped
	started []owed // HostShard -> ShardStarted

	// inHandOff marks shards from their first BeginHandOff until they are allocated
	// again, or until their hand-off times out.
	inHandOff map[ShardID]bool
	// handOffFrom is the shard's home when its hand-off began: a hand-off that times out
	// leaves the shard there, and its home may then be given out again.
	handOffFrom map[ShardID]RegionID
	log         []func() string
}

type owed struct {
	region RegionID
	shard  ShardID
}

func TestCoordinatorRandomized(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		w := newCoordWorld(t, uint64(seed))
		w.run(300)
	}
}

func newCoordWorld(t *testing.T, seed uint64) *coordWorld {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var strategy AllocationStrategy
	if seed%2 == 0 {
		strategy, _ = NewLeastShardStrategy(LeastShardConfig{RebalanceAbsoluteLimit: 1 + int(seed%4), RebalanceRelativeLimit: 0.5})
	} else {
		strategy, _ = NewLeastShardStrategy(LeastShardConfig{RebalanceThreshold: 1 + int(seed%3)})
	}
	cfg := coordSettings{
		minMembers:       1 + int(seed%3),
		rememberEntities: seed%5 == 0,
		storeState:       seed%3 == 0,
	}
	if seed%4 == 0 {
		cfg.removalMargin = 5
	}
	w := &coordWorld{
		t:         t,
		seed:      seed,
		rng:       rng,
		proxy:     map[RegionID]bool{},
		dead:      map[RegionID]bool{},
		inHandOff: map[ShardID]bool{},

		handOffFrom: map[ShardID]RegionID{},
	}
	for i := range 10 {
		w.shards = append(w.shards, ShardID(fmt.Sprintf("s%02d", i)))
	}
	for i := 1; i <= 4; i++ {
		w.regions = append(w.regions, reg(i))
	}
	w.regions = append(w.regions, prox(5))
	w.proxy[prox(5)] = true
	w.h = &coordHarness{t: t, c: newCoordinator(cfg, strategy), shadow: newCoordState(cfg.rememberEntities), manual: true}
	w.h.sent = w.sent
	w.do(inMembers{Members: testNodes(6)}, "members")
	w.do(inStateLoaded{}, "load")
	return w
}

func (w *coordWorld) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("seed %d, step %d: %s\nlast steps:\n%s", w.seed, w.step, fmt.Sprintf(format, args...), w.tail())
}

func (w *coordWorld) tail() string {
	from := max(0, len(w.log)-60)
	out := ""
	for _, l := range w.log[from:] {
		out += "  " + l() + "\n"
	}
	return out
}

// note records a line for the failure report, formatted only if it is shown.
func (w *coordWorld) note(f func() string) { w.log = append(w.log, f) }

func (w *coordWorld) live() []RegionID {
	var out []RegionID
	for _, r := range w.regions {
		if !w.dead[r] {
			out = append(out, r)
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, xs []T) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[rng.IntN(len(xs))], true
}

func (w *coordWorld) run(steps int) {
	for w.step = 0; w.step < steps; w.step++ {
		w.act()
	}
	// Drain: complete stores and answer everything, fire hand-off timers; afterwards no
	// shard may be left marked in hand-off. (A region that registers during a hand-off
	// gets its BeginHandOff again, so there can be hundreds of answers to drain.)
	for range 1000 {
		switch {
		case w.h.pending:
			w.do(inStoreDone{}, "drain store")
		case len(w.acks) > 0:
			w.answer(&w.acks, 0)
		case len(w.stops) > 0:
			w.answer(&w.stops, 0)
		default:
			if k, ok := w.firstTimer(timerHandOff); ok {
				w.do(inTimer{Key: k}, "drain hand-off timer")
				continue
			}
			if k, ok := w.firstTimer(timerRemovalMargin); ok {
				w.do(inTimer{Key: k}, "drain margin timer")
				continue
			}
			if len(w.h.c.workers) != 0 {
				w.fail("hand-offs left after draining: %v", slices.Sorted(maps.Keys(w.h.c.workers)))
			}
			return
		}
	}
	w.fail("did not drain")
}

func (w *coordWorld) firstTimer(kind timerKind) (timerKey, bool) {
	for _, k := range w.sortedTimers() {
		if k.kind == kind {
			return k, true
		}
	}
	return timerKey{}, false
}

func (w *coordWorld) sortedTimers() []timerKey {
	keys := slices.Collect(maps.Keys(w.h.c.timers))
	slices.SortFunc(keys, func(a, b timerKey) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.shard, b.shard), cmp.Compare(a.region, b.region), cmp.Compare(a.n, b.n))
	})
	return keys
}

func (w *coordWorld) act() {
	rng := w.rng
	switch n := rng.IntN(100); {
	case n < 15 && w.h.pending:
		if rng.IntN(6) == 0 {
			w.do(inStoreFailed{Err: errStore}, "store failed")
		} else {
			w.do(inStoreDone{}, "store done")
		}
	case n < 25:
		if r, ok := pick(rng, w.live()); ok {
			msg := any(msgRegister{})
			if w.proxy[r] {
				msg = msgRegisterProxy{}
			}
			w.do(inRegionMsg{From: r, Msg: msg, Status: cluster.Up}, "register "+string(r))
		}
	case n < 45:
		r, ok1 := pick(rng, w.live())
		s, ok2 := pick(rng, w.shards)
		if ok1 && ok2 {
			m := msgGetShardHome{Shard: s, HandOver: rng.IntN(5) == 0}
			if m.HandOver {
				// Now and then a region that owes a hand-over asks, as it would.
				for _, id := range slices.Sorted(maps.Keys(w.h.c.successor)) {
					if p := slices.Sorted(maps.Keys(w.h.c.successor[id])); len(p) > 0 && !w.dead[p[0]] {
						m.Shard, r = id, p[0]
						break
					}
				}
			}
			w.do(inRegionMsg{From: r, Msg: m}, fmt.Sprintf("get %+v from %s", m, r))
		}
	case n < 55 && len(w.acks) > 0:
		w.answer(&w.acks, rng.IntN(len(w.acks)))
	case n < 62 && len(w.stops) > 0:
		w.answer(&w.stops, rng.IntN(len(w.stops)))
	case n < 67 && len(w.started) > 0:
		w.answer(&w.started, rng.IntN(len(w.started)))
	case n < 80:
		if k, ok := pick(rng, w.sortedTimers()); ok {
			w.do(inTimer{Key: k}, fmt.Sprintf("timer %+v", k))
		}
	case n < 84:
		if r, ok := pick(rng, w.live()); ok && !w.proxy[r] {
			w.do(inRegionMsg{From: r, Msg: msgGracefulShutdownReq{}}, "graceful "+string(r))
		}
	case n < 88:
		if r, ok := pick(rng, w.live()); ok {
			w.kill(r)
		}
	case n < 91:
		w.spawn()
	case n < 94:
		ms := testNodes(6)
		switch rng.IntN(4) {
		case 0:
			ms[rng.IntN(6)].Unreachable = true
		case 1:
			ms[rng.IntN(6)].AppVersion = "2"
		case 2:
			ms = append(ms, NodeInfo{Address: cluster.UniqueAddress{Addr: nodeAddr(9)}, Status: cluster.Joining})
		}
		w.do(inMembers{Members: ms}, "members")
	case n < 96 && !w.h.c.cfg.rememberEntities:
		s1, _ := pick(rng, w.shards)
		s2, _ := pick(rng, w.shards)
		w.do(inRegionMsg{From: "troupe://sys@10.0.0.1:2552/user/admin#1", Msg: msgStopShards{Shards: []ShardID{s1, s2}}}, "stop shards")
	case n < 97 && w.h.c.cfg.rememberEntities:
		s, _ := pick(rng, w.shards)
		w.do(inRememberedShards{Shards: []ShardID{s}}, "remembered "+string(s))
	default:
		w.do(inTimer{Key: timerKey{kind: timerRebalance}}, "rebalance tick")
	}
}

// answer sends the owed answer at index i (or, now and then, loses it).
func (w *coordWorld) answer(list *[]owed, i int) {
	o := (*list)[i]
	*list = slices.Delete(*list, i, i+1)
	if w.dead[o.region] || w.rng.IntN(12) == 0 {
		return // lost with its region, or never sent
	}
	switch list {
	case &w.acks:
		// Sometimes relayed through another region.
		from := o.region
		if r, ok := pick(w.rng, w.live()); ok && w.rng.IntN(3) == 0 {
			from = r
		}
		w.do(inRegionMsg{From: from, Msg: msgBeginHandOffAck{Shard: o.shard, Region: o.region}}, fmt.Sprintf("ack %s by %s", o.shard, o.region))
	case &w.stops:
		w.do(inRegionMsg{From: o.region, Msg: msgShardStopped{Shard: o.shard, Pending: w.rng.IntN(2) == 0}}, fmt.Sprintf("stopped %s at %s", o.shard, o.region))
	case &w.started:
		w.do(inRegionMsg{From: o.region, Msg: msgShardStarted{Shard: o.shard}}, fmt.Sprintf("started %s at %s", o.shard, o.region))
	}
}

func (w *coordWorld) kill(r RegionID) {
	w.dead[r] = true
	switch w.rng.IntN(3) {
	case 0:
		w.do(inRegionMsg{From: r, Msg: msgRegionStopped{}}, "region stopped "+string(r))
	case 1:
		w.do(inRegionTerminated{Region: r}, "terminated "+string(r))
	default:
		w.do(inRegionTerminated{Region: r, NodeRemoved: true}, "node removed "+string(r))
	}
}

// spawn starts a new incarnation of a dead region.
func (w *coordWorld) spawn() {
	for _, r := range w.regions {
		if w.dead[r] {
			next := RegionID(fmt.Sprintf("%s%d", r, len(w.regions)))
			w.regions = append(w.regions, next)
			w.proxy[next] = w.proxy[r]
			return
		}
	}
}

// sent checks one message once the core has handled the input that sent it.
func (w *coordWorld) sent(m coordSend) {
	c := w.h.c
	{
		switch m.msg.(type) {
		case msgHandOff, msgBeginHandOff, msgShardHome, msgShardHomes, msgShardStopped:
			w.note(func() string { return fmt.Sprintf("   -> %s %T%+v", m.to, m.msg, m.msg) })
		}
	}
	// homeGiven checks a home given out for s: not while s is in hand-off, unless the
	// hand-off has ended leaving s where it was (a timeout), which ends the mark.
	homeGiven := func(s ShardID, r RegionID) {
		if home, ok := c.state.shards[s]; !ok || home != r {
			w.fail("home of %q given as %q, but it is %q", s, r, home)
		}
		if w.inHandOff[s] {
			if c.workers[s] != nil || w.handOffFrom[s] != r {
				w.fail("home of %q given as %q while the shard is in hand-off", s, r)
			}
			delete(w.inHandOff, s) // the hand-off timed out
		}
	}
	switch msg := m.msg.(type) {
	case msgBeginHandOff:
		if !w.inHandOff[msg.Shard] {
			w.handOffFrom[msg.Shard] = c.state.shards[msg.Shard]
		}
		w.inHandOff[msg.Shard] = true
		w.acks = append(w.acks, owed{m.to, msg.Shard})
	case msgHandOff:
		if !w.inHandOff[msg.Shard] {
			w.fail("HandOff for %q without BeginHandOff", msg.Shard)
		}
		w.stops = append(w.stops, owed{m.to, msg.Shard})
	case msgHostShard:
		if w.proxy[m.to] {
			w.fail("HostShard to proxy %q", m.to)
		}
		if home := c.state.shards[msg.Shard]; home != m.to {
			w.fail("HostShard(%q) to %q, but its home is %q", msg.Shard, m.to, home)
		}
		if c.workers[msg.Shard] != nil {
			w.fail("HostShard(%q) during its hand-off", msg.Shard)
		}
		delete(w.inHandOff, msg.Shard) // allocated (again)
		w.started = append(w.started, owed{m.to, msg.Shard})
	case msgShardHome:
		homeGiven(msg.Shard, msg.Region)
	case msgHandOverTo:
		if _, ok := c.state.regions[msg.Region]; !ok {
			w.fail("HandOverTo names %q, which is not registered", msg.Region)
		}
		if msg.Region == m.to {
			w.fail("HandOverTo tells %q to hand over to itself", m.to)
		}
	case msgShardHomes:
		for _, e := range msg.Homes {
			for _, s := range e.Shards {
				homeGiven(s, e.Region)
			}
		}
	}
}

// do feeds one input and checks the outputs and the invariants.
func (w *coordWorld) do(in coordInput, what string) {
	w.t.Helper()
	pending, queued := w.h.pending, len(w.h.c.queue)
	w.note(func() string { return fmt.Sprintf("%s (pending=%v queue=%d)", what, pending, queued) })
	d := w.h.one(in)
	if d.store != nil {
		ev := d.store.event
		w.note(func() string { return fmt.Sprintf("   store %+v", ev) })
	}
	c := w.h.c
	for s, wk := range c.workers {
		if !wk.done {
			if _, ok := c.state.regions[wk.from]; !ok {
				w.fail("hand-off of %q from %q, which is not registered", s, wk.from)
			}
		}
		if c.pending == nil && c.phase == phaseActive && wk.done {
			w.fail("hand-off of %q ended but is still marked with nothing pending", s)
		}
	}
	for _, id := range c.state.sortedShards() {
		if w.proxy[c.state.shards[id]] {
			w.fail("shard %q lives in a proxy", id)
		}
	}
}
