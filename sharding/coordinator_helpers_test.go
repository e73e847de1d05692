package sharding

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// nodeAddr is the address of test node i.
func nodeAddr(i int) string { return fmt.Sprintf("troupe://sys@10.0.0.%d:2552", i) }

// reg is the region on test node i; prox the proxy on test node i.
func reg(i int) RegionID  { return RegionID(nodeAddr(i) + "/system/sharding/t#1") }
func prox(i int) RegionID { return RegionID(nodeAddr(i) + "/system/sharding/tProxy#1") }

// testNode is test node i: Up, age i, version "1".
func testNode(i int) NodeInfo {
	return NodeInfo{Address: cluster.UniqueAddress{Addr: nodeAddr(i), UID: 1}, Status: cluster.Up, AppVersion: "1", UpNumber: int64(i)}
}

func testNodes(n int) []NodeInfo {
	var out []NodeInfo
	for i := 1; i <= n; i++ {
		out = append(out, testNode(i))
	}
	return out
}

// coordHarness drives a coordinator core: it checks the invariants after every step
// and, unless told otherwise, completes stores at once.
type coordHarness struct {
	t       *testing.T
	c       *coordinator
	shadow  *coordState // the state built from the stored events alone
	manual  bool        // leave stores pending
	pending bool
	// remembered holds shards fed as inRememberedShards: the core adds them to its
	// unallocated set without an event (as Akka does), so the shadow may lack them.
	remembered map[ShardID]bool
	// sent, when set, sees every message the core sends, with the core in the state
	// it was in after the input that sent it: one step is fed input by input.
	sent func(coordSend)
}

// sameState compares the core's state with the shadow built from stored events.
func (h *coordHarness) sameState(shadow, core *coordState) bool {
	if h.remembered == nil {
		return shadow.equal(core)
	}
	c := core.clone()
	for id := range c.unallocated {
		if _, ok := shadow.unallocated[id]; !ok && h.remembered[id] {
			delete(c.unallocated, id)
		}
	}
	return shadow.equal(c)
}

// stepEach is the core's step, input by input: after the input and after each queued
// input the step handles, it shows the messages the core sent to h.sent.
func (h *coordHarness) stepEach(in coordInput) coordDecisions {
	shown := 0
	show := func() {
		for _, m := range h.c.out.sends[shown:] {
			h.sent(m)
		}
		shown = len(h.c.out.sends)
	}
	h.c.accept(in)
	show()
	for h.c.handleNext() {
		show()
	}
	return h.c.decisions()
}

func newCoordHarness(t *testing.T, cfg coordSettings, strategy AllocationStrategy, nodes int) *coordHarness {
	t.Helper()
	h := &coordHarness{t: t, c: newCoordinator(cfg, strategy), shadow: newCoordState(cfg.rememberEntities)}
	h.step(inMembers{Members: testNodes(nodes)})
	h.step(inStateLoaded{})
	if h.c.phase != phaseActive {
		t.Fatalf("phase %v after loading an empty state", h.c.phase)
	}
	return h
}

// step feeds in, then (unless manual) completes every store the core asks for, and
// returns all decisions, merged in order.
func (h *coordHarness) step(in coordInput) coordDecisions {
	h.t.Helper()
	var all coordDecisions
	d := h.one(in)
	merge(&all, d)
	for !h.manual && d.store != nil {
		d = h.one(inStoreDone{})
		merge(&all, d)
	}
	return all
}

func (h *coordHarness) one(in coordInput) coordDecisions {
	h.t.Helper()
	if _, ok := in.(inStoreFailed); ok {
		h.pending = false // the core asks for the same store again
	}
	if _, ok := in.(inStoreDone); ok && h.pending {
		h.pending = false
		if err := h.shadow.apply(h.c.pending.event); err != nil {
			h.t.Fatalf("stored event does not apply to the shadow state: %v", err)
		}
	}
	if r, ok := in.(inRememberedShards); ok {
		if h.remembered == nil {
			h.remembered = map[ShardID]bool{}
		}
		for _, id := range r.Shards {
			h.remembered[id] = true
		}
	}
	var d coordDecisions
	if h.sent == nil {
		d = h.c.step(in)
	} else {
		d = h.stepEach(in)
	}
	if d.store != nil {
		if h.pending {
			h.t.Fatalf("a second store while one is pending")
		}
		h.pending = true
		if h.c.cfg.storeState {
			next := h.shadow.clone()
			if err := next.apply(d.store.event); err != nil || !h.sameState(next, d.store.state) {
				h.t.Fatalf("store state does not match the event: %v", err)
			}
		}
	}
	for _, p := range d.problems {
		h.t.Logf("problem: %v", p)
	}
	checkCoordInvariants(h.t, h.c)
	if !h.pending && !h.sameState(h.shadow, h.c.state) && h.c.phase != phaseWaitingForState {
		h.t.Fatalf("core state differs from the state built from stored events")
	}
	return d
}

func merge(all *coordDecisions, d coordDecisions) {
	if d.store != nil {
		all.store = d.store
	}
	all.sends = append(all.sends, d.sends...)
	all.watch = append(all.watch, d.watch...)
	all.timers = append(all.timers, d.timers...)
	all.problems = append(all.problems, d.problems...)
}

// checkCoordInvariants: the state is consistent, and every hand-off names a shard that
// is allocated or being re-homed.
func checkCoordInvariants(t *testing.T, c *coordinator) {
	t.Helper()
	if err := c.state.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	for s, w := range c.workers {
		if s != w.shard {
			t.Fatalf("worker for %q says %q", s, w.shard)
		}
	}
	for s, r := range c.unacked {
		if home, ok := c.state.shards[s]; !ok || home != r {
			if c.pending == nil {
				t.Fatalf("HostShard pending for %q at %q, but its home is %q", s, r, home)
			}
		}
	}
}

func (h *coordHarness) from(r RegionID, msg any) coordDecisions {
	h.t.Helper()
	return h.step(inRegionMsg{From: r, Msg: msg, Status: cluster.Up})
}

func (h *coordHarness) register(rs ...RegionID) {
	h.t.Helper()
	for _, r := range rs {
		h.from(r, msgRegister{})
	}
}

// fire fires a running timer of the core.
func (h *coordHarness) fire(key timerKey) coordDecisions {
	h.t.Helper()
	if !h.c.timers.active(key) {
		h.t.Fatalf("timer %+v is not running", key)
	}
	return h.step(inTimer{Key: key})
}

// allocate makes r ask for s and returns where s went.
func (h *coordHarness) allocate(r RegionID, s ShardID) RegionID {
	h.t.Helper()
	d := h.from(r, msgGetShardHome{Shard: s})
	for _, m := range d.sends {
		if sh, ok := m.msg.(msgShardHome); ok && m.to == r && sh.Shard == s {
			return sh.Region
		}
	}
	h.t.Fatalf("no ShardHome for %q: %+v", s, d.sends)
	return ""
}

// sent reports whether d sends msg to to.
func sent(d coordDecisions, to RegionID, msg any) bool {
	for _, m := range d.sends {
		if m.to == to && reflect.DeepEqual(m.msg, msg) {
			return true
		}
	}
	return false
}

// sentTo returns the messages d sends to to.
func sentTo(d coordDecisions, to RegionID) []any {
	var out []any
	for _, m := range d.sends {
		if m.to == to {
			out = append(out, m.msg)
		}
	}
	return out
}

func startedTimer(d coordDecisions, key timerKey) (time.Duration, bool) {
	for _, op := range d.timers {
		if op.key == key && !op.cancel {
			return op.after, true
		}
	}
	return 0, false
}

func (h *coordHarness) expectNoSends(d coordDecisions, what string) {
	h.t.Helper()
	if len(d.sends) > 0 || d.store != nil {
		h.t.Fatalf("%s: want nothing, got sends %+v store %+v", what, d.sends, d.store)
	}
}

func (h *coordHarness) homeOf(s ShardID) RegionID { return h.c.state.shards[s] }

func hasProblem(d coordDecisions, target error) bool {
	return slices.ContainsFunc(d.problems, func(err error) bool { return errors.Is(err, target) })
}
