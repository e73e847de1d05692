package shardcore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// nodeAddr is the address of test node i.
func nodeAddr(i int) string { return fmt.Sprintf("troupe://sys@10.0.0.%d:2552", i) }

// reg is the region on test node i; prox the proxy on test node i.
func reg(i int) placement.RegionID { return placement.RegionID(nodeAddr(i) + "/system/sharding/t#1") }
func prox(i int) placement.RegionID {
	return placement.RegionID(nodeAddr(i) + "/system/sharding/tProxy#1")
}

// testNode is test node i: Up, age i, version "1".
func testNode(i int) placement.NodeInfo {
	return placement.NodeInfo{Address: member.UniqueAddress{Addr: nodeAddr(i), UID: 1}, Status: member.Up, AppVersion: "1", UpNumber: int64(i)}
}

func testNodes(n int) []placement.NodeInfo {
	var out []placement.NodeInfo
	for i := 1; i <= n; i++ {
		out = append(out, testNode(i))
	}
	return out
}

// coordHarness drives a coordinator core: it checks the invariants after every step
// and, unless told otherwise, completes stores at once.
type coordHarness struct {
	t       *testing.T
	c       *Coordinator
	shadow  *CoordState // the state built from the stored events alone
	manual  bool        // leave stores pending
	pending bool
	// remembered holds shards fed as InRememberedShards: the core adds them to its
	// unallocated set without an event (as Akka does), so the shadow may lack them.
	remembered map[placement.ShardID]bool
	// sent, when set, sees every message the core sends, with the core in the state
	// it was in after the input that sent it: one step is fed input by input.
	sent func(CoordSend)
}

// sameState compares the core's state with the shadow built from stored events.
func (h *coordHarness) sameState(shadow, core *CoordState) bool {
	if h.remembered == nil {
		return shadow.equal(core)
	}
	c := core.Clone()
	for id := range c.unallocated {
		if _, ok := shadow.unallocated[id]; !ok && h.remembered[id] {
			delete(c.unallocated, id)
		}
	}
	return shadow.equal(c)
}

// stepEach is the core's step, input by input: after the input and after each queued
// input the step handles, it shows the messages the core sent to h.sent.
func (h *coordHarness) stepEach(in CoordInput) CoordDecisions {
	shown := 0
	show := func() {
		for _, m := range h.c.out.Sends[shown:] {
			h.sent(m)
		}
		shown = len(h.c.out.Sends)
	}
	h.c.accept(in)
	show()
	for h.c.handleNext() {
		show()
	}
	return h.c.decisions()
}

func newCoordHarness(t *testing.T, cfg CoordSettings, strategy placement.AllocationStrategy, nodes int) *coordHarness {
	t.Helper()
	h := &coordHarness{t: t, c: NewCoordinator(cfg, strategy), shadow: NewCoordState(cfg.RememberEntities)}
	h.step(InMembers{Members: testNodes(nodes)})
	h.step(InStateLoaded{})
	if h.c.phase != phaseActive {
		t.Fatalf("phase %v after loading an empty state", h.c.phase)
	}
	return h
}

// step feeds in, then (unless manual) completes every store the core asks for, and
// returns all decisions, merged in order.
func (h *coordHarness) step(in CoordInput) CoordDecisions {
	h.t.Helper()
	var all CoordDecisions
	d := h.one(in)
	merge(&all, d)
	for !h.manual && d.Store != nil {
		d = h.one(InStoreDone{})
		merge(&all, d)
	}
	return all
}

func (h *coordHarness) one(in CoordInput) CoordDecisions {
	h.t.Helper()
	if _, ok := in.(InStoreFailed); ok {
		h.pending = false // the core asks for the same store again
	}
	if _, ok := in.(InStoreDone); ok && h.pending {
		h.pending = false
		if err := h.shadow.Apply(h.c.pending.event); err != nil {
			h.t.Fatalf("stored event does not apply to the shadow state: %v", err)
		}
	}
	if r, ok := in.(InRememberedShards); ok {
		if h.remembered == nil {
			h.remembered = map[placement.ShardID]bool{}
		}
		for _, id := range r.Shards {
			h.remembered[id] = true
		}
	}
	var d CoordDecisions
	if h.sent == nil {
		d = h.c.Step(in)
	} else {
		d = h.stepEach(in)
	}
	if d.Store != nil {
		if h.pending {
			h.t.Fatalf("a second store while one is pending")
		}
		h.pending = true
		if h.c.cfg.StoreState {
			next := h.shadow.Clone()
			if err := next.Apply(d.Store.Event); err != nil || !h.sameState(next, d.Store.State) {
				h.t.Fatalf("store state does not match the event: %v", err)
			}
		}
	}
	for _, p := range d.Problems {
		h.t.Logf("problem: %v", p)
	}
	checkCoordInvariants(h.t, h.c)
	if !h.pending && !h.sameState(h.shadow, h.c.state) && h.c.phase != phaseWaitingForState {
		h.t.Fatalf("core state differs from the state built from stored events")
	}
	return d
}

func merge(all *CoordDecisions, d CoordDecisions) {
	if d.Store != nil {
		all.Store = d.Store
	}
	all.Sends = append(all.Sends, d.Sends...)
	all.Watch = append(all.Watch, d.Watch...)
	all.Timers = append(all.Timers, d.Timers...)
	all.Problems = append(all.Problems, d.Problems...)
}

// checkCoordInvariants: the state is consistent, and every hand-off names a shard that
// is allocated or being re-homed.
func checkCoordInvariants(t *testing.T, c *Coordinator) {
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

func (h *coordHarness) from(r placement.RegionID, msg any) CoordDecisions {
	h.t.Helper()
	return h.step(InRegionMsg{From: r, Msg: msg, Status: member.Up})
}

func (h *coordHarness) register(rs ...placement.RegionID) {
	h.t.Helper()
	for _, r := range rs {
		h.from(r, Register{})
	}
}

// fire fires a running timer of the core.
func (h *coordHarness) fire(key TimerKey) CoordDecisions {
	h.t.Helper()
	if !h.c.timers.active(key) {
		h.t.Fatalf("timer %+v is not running", key)
	}
	return h.step(InTimer{Key: key})
}

// allocate makes r ask for s and returns where s went.
func (h *coordHarness) allocate(r placement.RegionID, s placement.ShardID) placement.RegionID {
	h.t.Helper()
	d := h.from(r, GetShardHome{Shard: s})
	for _, m := range d.Sends {
		if sh, ok := m.Msg.(ShardHome); ok && m.To == r && sh.Shard == s {
			return sh.Region
		}
	}
	h.t.Fatalf("no ShardHome for %q: %+v", s, d.Sends)
	return ""
}

// sent reports whether d sends msg to to.
func sent(d CoordDecisions, to placement.RegionID, msg any) bool {
	for _, m := range d.Sends {
		if m.To == to && reflect.DeepEqual(m.Msg, msg) {
			return true
		}
	}
	return false
}

// sentTo returns the messages d sends to to.
func sentTo(d CoordDecisions, to placement.RegionID) []any {
	var out []any
	for _, m := range d.Sends {
		if m.To == to {
			out = append(out, m.Msg)
		}
	}
	return out
}

func startedTimer(d CoordDecisions, key TimerKey) (time.Duration, bool) {
	for _, op := range d.Timers {
		if op.Key == key && !op.Cancel {
			return op.After, true
		}
	}
	return 0, false
}

func (h *coordHarness) expectNoSends(d CoordDecisions, what string) {
	h.t.Helper()
	if len(d.Sends) > 0 || d.Store != nil {
		h.t.Fatalf("%s: want nothing, got sends %+v store %+v", what, d.Sends, d.Store)
	}
}

func (h *coordHarness) homeOf(s placement.ShardID) placement.RegionID { return h.c.state.shards[s] }

func hasProblem(d CoordDecisions, target error) bool {
	return slices.ContainsFunc(d.Problems, func(err error) bool { return errors.Is(err, target) })
}
