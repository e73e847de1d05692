package shardcore

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
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

	regions []placement.RegionID        // every region or proxy ever created
	proxy   map[placement.RegionID]bool // proxies
	dead    map[placement.RegionID]bool // stopped; never sends again
	shards  []placement.ShardID

	// What regions owe the coordinator, as the real ones would answer.
	acks    []owed // BeginHandOff -> BeginHandOffAck
	stops   []owed // HandOff -> ShardStopped
	started []owed // HostShard -> ShardStarted

	// inHandOff marks shards from their first BeginHandOff until they are allocated
	// again, or until their hand-off times out.
	inHandOff map[placement.ShardID]bool
	// handOffFrom is the shard's home when its hand-off began: a hand-off that times out
	// leaves the shard there, and its home may then be given out again.
	handOffFrom map[placement.ShardID]placement.RegionID
	log         []func() string
}

type owed struct {
	region placement.RegionID
	shard  placement.ShardID
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
	var strategy placement.AllocationStrategy
	if seed%2 == 0 {
		strategy = NewLeastShard(LeastShardSettings{RebalanceAbsoluteLimit: 1 + int(seed%4), RebalanceRelativeLimit: 0.5})
	} else {
		strategy = NewLeastShard(LeastShardSettings{RebalanceThreshold: 1 + int(seed%3)})
	}
	cfg := CoordSettings{
		MinMembers:       1 + int(seed%3),
		RememberEntities: seed%5 == 0,
		StoreState:       seed%3 == 0,
	}
	if seed%4 == 0 {
		cfg.RemovalMargin = 5
	}
	w := &coordWorld{
		t:         t,
		seed:      seed,
		rng:       rng,
		proxy:     map[placement.RegionID]bool{},
		dead:      map[placement.RegionID]bool{},
		inHandOff: map[placement.ShardID]bool{},

		handOffFrom: map[placement.ShardID]placement.RegionID{},
	}
	for i := range 10 {
		w.shards = append(w.shards, placement.ShardID(fmt.Sprintf("s%02d", i)))
	}
	for i := 1; i <= 4; i++ {
		w.regions = append(w.regions, reg(i))
	}
	w.regions = append(w.regions, prox(5))
	w.proxy[prox(5)] = true
	w.h = &coordHarness{t: t, c: NewCoordinator(cfg, strategy), shadow: NewCoordState(cfg.RememberEntities), manual: true}
	w.h.sent = w.sent
	w.do(InMembers{Members: testNodes(6)}, "members")
	w.do(InStateLoaded{}, "load")
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

func (w *coordWorld) live() []placement.RegionID {
	var out []placement.RegionID
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
			w.do(InStoreDone{}, "drain store")
		case len(w.acks) > 0:
			w.answer(&w.acks, 0)
		case len(w.stops) > 0:
			w.answer(&w.stops, 0)
		default:
			if k, ok := w.firstTimer(TimerHandOff); ok {
				w.do(InTimer{Key: k}, "drain hand-off timer")
				continue
			}
			if k, ok := w.firstTimer(TimerRemovalMargin); ok {
				w.do(InTimer{Key: k}, "drain margin timer")
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

func (w *coordWorld) firstTimer(kind TimerKind) (TimerKey, bool) {
	for _, k := range w.sortedTimers() {
		if k.Kind == kind {
			return k, true
		}
	}
	return TimerKey{}, false
}

func (w *coordWorld) sortedTimers() []TimerKey {
	keys := slices.Collect(maps.Keys(w.h.c.timers))
	slices.SortFunc(keys, func(a, b TimerKey) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Shard, b.Shard), cmp.Compare(a.Region, b.Region), cmp.Compare(a.N, b.N))
	})
	return keys
}

func (w *coordWorld) act() {
	rng := w.rng
	switch n := rng.IntN(100); {
	case n < 15 && w.h.pending:
		if rng.IntN(6) == 0 {
			w.do(InStoreFailed{Err: errStore}, "store failed")
		} else {
			w.do(InStoreDone{}, "store done")
		}
	case n < 25:
		if r, ok := pick(rng, w.live()); ok {
			msg := any(Register{})
			if w.proxy[r] {
				msg = RegisterProxy{}
			}
			w.do(InRegionMsg{From: r, Msg: msg, Status: member.Up}, "register "+string(r))
		}
	case n < 45:
		r, ok1 := pick(rng, w.live())
		s, ok2 := pick(rng, w.shards)
		if ok1 && ok2 {
			m := GetShardHome{Shard: s, HandOver: rng.IntN(5) == 0}
			if m.HandOver {
				// Now and then a region that owes a hand-over asks, as it would.
				for _, id := range slices.Sorted(maps.Keys(w.h.c.successor)) {
					if p := slices.Sorted(maps.Keys(w.h.c.successor[id])); len(p) > 0 && !w.dead[p[0]] {
						m.Shard, r = id, p[0]
						break
					}
				}
			}
			w.do(InRegionMsg{From: r, Msg: m}, fmt.Sprintf("get %+v from %s", m, r))
		}
	case n < 55 && len(w.acks) > 0:
		w.answer(&w.acks, rng.IntN(len(w.acks)))
	case n < 62 && len(w.stops) > 0:
		w.answer(&w.stops, rng.IntN(len(w.stops)))
	case n < 67 && len(w.started) > 0:
		w.answer(&w.started, rng.IntN(len(w.started)))
	case n < 80:
		if k, ok := pick(rng, w.sortedTimers()); ok {
			w.do(InTimer{Key: k}, fmt.Sprintf("timer %+v", k))
		}
	case n < 84:
		if r, ok := pick(rng, w.live()); ok && !w.proxy[r] {
			w.do(InRegionMsg{From: r, Msg: GracefulShutdownReq{}}, "graceful "+string(r))
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
			ms = append(ms, placement.NodeInfo{Address: member.UniqueAddress{Addr: nodeAddr(9)}, Status: member.Joining})
		}
		w.do(InMembers{Members: ms}, "members")
	case n < 96 && !w.h.c.cfg.RememberEntities:
		s1, _ := pick(rng, w.shards)
		s2, _ := pick(rng, w.shards)
		w.do(InRegionMsg{From: "troupe://sys@10.0.0.1:2552/user/admin#1", Msg: StopShards{Shards: []placement.ShardID{s1, s2}}}, "stop shards")
	case n < 97 && w.h.c.cfg.RememberEntities:
		s, _ := pick(rng, w.shards)
		w.do(InRememberedShards{Shards: []placement.ShardID{s}}, "remembered "+string(s))
	default:
		w.do(InTimer{Key: TimerKey{Kind: TimerRebalance}}, "rebalance tick")
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
		w.do(InRegionMsg{From: from, Msg: BeginHandOffAck{Shard: o.shard, Region: o.region}}, fmt.Sprintf("ack %s by %s", o.shard, o.region))
	case &w.stops:
		w.do(InRegionMsg{From: o.region, Msg: ShardStopped{Shard: o.shard, Pending: w.rng.IntN(2) == 0}}, fmt.Sprintf("stopped %s at %s", o.shard, o.region))
	case &w.started:
		w.do(InRegionMsg{From: o.region, Msg: ShardStarted{Shard: o.shard}}, fmt.Sprintf("started %s at %s", o.shard, o.region))
	}
}

func (w *coordWorld) kill(r placement.RegionID) {
	w.dead[r] = true
	switch w.rng.IntN(3) {
	case 0:
		w.do(InRegionMsg{From: r, Msg: RegionStopped{}}, "region stopped "+string(r))
	case 1:
		w.do(InRegionTerminated{Region: r}, "terminated "+string(r))
	default:
		w.do(InRegionTerminated{Region: r, NodeRemoved: true}, "node removed "+string(r))
	}
}

// spawn starts a new incarnation of a dead region.
func (w *coordWorld) spawn() {
	for _, r := range w.regions {
		if w.dead[r] {
			next := placement.RegionID(fmt.Sprintf("%s%d", r, len(w.regions)))
			w.regions = append(w.regions, next)
			w.proxy[next] = w.proxy[r]
			return
		}
	}
}

// sent checks one message once the core has handled the input that sent it.
func (w *coordWorld) sent(m CoordSend) {
	c := w.h.c
	{
		switch m.Msg.(type) {
		case HandOff, BeginHandOff, ShardHome, ShardHomes, ShardStopped:
			w.note(func() string { return fmt.Sprintf("   -> %s %T%+v", m.To, m.Msg, m.Msg) })
		}
	}
	// homeGiven checks a home given out for s: not while s is in hand-off, unless the
	// hand-off has ended leaving s where it was (a timeout), which ends the mark.
	homeGiven := func(s placement.ShardID, r placement.RegionID) {
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
	switch msg := m.Msg.(type) {
	case BeginHandOff:
		if !w.inHandOff[msg.Shard] {
			w.handOffFrom[msg.Shard] = c.state.shards[msg.Shard]
		}
		w.inHandOff[msg.Shard] = true
		w.acks = append(w.acks, owed{m.To, msg.Shard})
	case HandOff:
		if !w.inHandOff[msg.Shard] {
			w.fail("HandOff for %q without BeginHandOff", msg.Shard)
		}
		w.stops = append(w.stops, owed{m.To, msg.Shard})
	case HostShard:
		if w.proxy[m.To] {
			w.fail("HostShard to proxy %q", m.To)
		}
		if home := c.state.shards[msg.Shard]; home != m.To {
			w.fail("HostShard(%q) to %q, but its home is %q", msg.Shard, m.To, home)
		}
		if c.workers[msg.Shard] != nil {
			w.fail("HostShard(%q) during its hand-off", msg.Shard)
		}
		delete(w.inHandOff, msg.Shard) // allocated (again)
		w.started = append(w.started, owed{m.To, msg.Shard})
	case ShardHome:
		homeGiven(msg.Shard, msg.Region)
	case HandOverTo:
		if _, ok := c.state.regions[msg.Region]; !ok {
			w.fail("HandOverTo names %q, which is not registered", msg.Region)
		}
		if msg.Region == m.To {
			w.fail("HandOverTo tells %q to hand over to itself", m.To)
		}
	case ShardHomes:
		for _, e := range msg.Homes {
			for _, s := range e.Shards {
				homeGiven(s, e.Region)
			}
		}
	}
}

// do feeds one input and checks the outputs and the invariants.
func (w *coordWorld) do(in CoordInput, what string) {
	w.t.Helper()
	pending, queued := w.h.pending, len(w.h.c.queue)
	w.note(func() string { return fmt.Sprintf("%s (pending=%v queue=%d)", what, pending, queued) })
	d := w.h.one(in)
	if d.Store != nil {
		ev := d.Store.Event
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
