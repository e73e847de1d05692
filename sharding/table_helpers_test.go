package sharding

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/testkit"
)

// incarnations is the in-process table of entity incarnations every test node shares:
// each incarnation records when it starts (recovery complete) and when it stops. Two
// live incarnations of one ID are a violation of "never two".
type incarnations struct {
	mu         sync.Mutex
	live       map[EntityID]string // the node of the live incarnation
	refs       map[EntityID]liveRef
	starts     map[EntityID]int
	stops      map[EntityID]int
	violations []string
	changed    chan struct{}
}

// liveRef is the actor of a live incarnation and its system.
type liveRef struct {
	sys *actor.System
	ref actor.Ref
}

// alive reports whether the actor still exists (an incarnation whose entity could not
// report its stop, such as one persistence stopped after a failed write, is gone).
func (l liveRef) alive() bool {
	if l.sys == nil {
		return true
	}
	_, err := l.sys.Resolve(l.ref.URI())
	return err == nil
}

func newIncarnations() *incarnations {
	return &incarnations{live: map[EntityID]string{}, refs: map[EntityID]liveRef{}, starts: map[EntityID]int{},
		stops: map[EntityID]int{}, changed: make(chan struct{}, 1)}
}

// startRef records a start; sys and ref, when given, let a later start check whether
// this incarnation's actor still exists.
func (in *incarnations) startRef(id EntityID, node string, sys *actor.System, ref actor.Ref) {
	in.mu.Lock()
	if where, ok := in.live[id]; ok && in.refs[id].alive() {
		in.violations = append(in.violations, fmt.Sprintf("%s: started on %s while live on %s", id, node, where))
	}
	in.live[id] = node
	in.refs[id] = liveRef{sys: sys, ref: ref}
	in.starts[id]++
	in.mu.Unlock()
	in.notify()
}

func (in *incarnations) stop(id EntityID, node string) {
	in.mu.Lock()
	if in.live[id] == node {
		delete(in.live, id)
		delete(in.refs, id)
	}
	in.stops[id]++
	in.mu.Unlock()
	in.notify()
}

func (in *incarnations) notify() {
	select {
	case in.changed <- struct{}{}:
	default:
	}
}

// await waits until cond holds on the table (checked under its lock at each change).
func (in *incarnations) await(t testing.TB, timeout time.Duration, what string, cond func(in *incarnations) bool) {
	t.Helper()
	deadline := time.NewTimer(testkit.Dilated(timeout))
	defer deadline.Stop()
	for {
		in.mu.Lock()
		ok := cond(in)
		in.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-in.changed:
		case <-deadline.C:
			in.mu.Lock()
			defer in.mu.Unlock()
			t.Fatalf("no %s within %v; live %v, starts %v", what, timeout, in.live, in.starts)
		}
	}
}

func (in *incarnations) checkNeverTwo(t testing.TB) {
	t.Helper()
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.violations) > 0 {
		t.Fatalf("two live incarnations: %v", in.violations)
	}
}

func (in *incarnations) startsOf(id EntityID) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.starts[id]
}

func (in *incarnations) isLive(id EntityID) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	_, ok := in.live[id]
	return ok
}

// Commands of the tracked counter besides Increment and GetCount.
type (
	// PassivateCounter makes the counter passivate itself.
	PassivateCounter struct{}
	// StopCounter makes the counter stop itself without Passivate.
	StopCounter struct{}
)

// tcounter is the persistent counter that reports its incarnations to a table.
type tcounter struct {
	pcounter
	table *incarnations
	node  string
	live  bool
}

func (c *tcounter) Recover(ctx persistence.Context) {
	if _, ok := ctx.Message().(persistence.RecoveryCompleted); ok {
		c.live = true
		c.table.startRef(EntityID(c.id), c.node, ctx.System(), ctx.Self())
		return
	}
	c.pcounter.Recover(ctx)
}

func (c *tcounter) Receive(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case actor.Stopped, actor.Restarting:
		if c.live {
			c.live = false
			c.table.stop(EntityID(c.id), c.node)
		}
	case PassivateCounter:
		_ = Passivate(ctx, nil)
		_ = ctx.Respond(c.n)
	case StopCounter:
		_ = ctx.Respond(c.n)
		_ = ctx.Stop(ctx.Self())
	default:
		c.pcounter.Receive(ctx)
	}
}

// trackedCounters returns the entity factory of counters reporting to table from node.
func trackedCounters(table *incarnations, node string) func(EntityID) *actor.Props {
	return func(id EntityID) *actor.Props {
		return persistence.Props(func() persistence.Entity {
			return &tcounter{pcounter: pcounter{id: string(id)}, table: table, node: node}
		})
	}
}
