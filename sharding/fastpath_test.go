package sharding

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// seqEntity records the numbered messages it gets, across incarnations, and passivates
// itself after every passivateEvery of them: the next messages race with its stop, on
// the region's fast path and through the shard.
type seqEntity struct {
	log *seqLog
}

type seqLog struct {
	mu   sync.Mutex
	got  map[EntityID][]int
	done chan struct{}
	want int
	n    int
}

type seqMsg struct{ N int }

// await waits until n messages have arrived in all.
func (l *seqLog) await(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := l.n
		l.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages arrived", got, n)
		}
		time.Sleep(time.Millisecond) // a poll's pace
	}
}

const passivateEvery = 97

func (e *seqEntity) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(seqMsg)
	if !ok {
		return
	}
	id := EntityIDOf(ctx)
	l := e.log
	l.mu.Lock()
	l.got[id] = append(l.got[id], m.N)
	l.n++
	if l.n == l.want {
		close(l.done)
	}
	l.mu.Unlock()
	if m.N%passivateEvery == passivateEvery-1 {
		_ = Passivate(ctx, actor.PoisonPill{})
	}
}

// The region delivers to running entities of its own shards directly, and so do
// EntityRefs (fastpath.go). Three entities of one shard get 20,000 numbered messages
// each, interleaved, from one sender, while each passivates itself every 97 messages:
// every message arrives, once, and each entity sees its messages in the order sent,
// across its incarnations. Sent through the region, the messages switch between the
// shard and the region's direct delivery; sent through EntityRefs, they switch between
// the region (counted on their route) and the EntityRef's direct delivery as well.
func TestFastPathKeepsOrderAcrossPassivations(t *testing.T) {
	for _, path := range []string{"region", "EntityRef"} {
		t.Run(path, func(t *testing.T) { testOrderAcrossPassivations(t, path == "EntityRef") })
	}
}

func testOrderAcrossPassivations(t *testing.T, viaRefs bool) {
	const perEntity = 20_000
	ids := []EntityID{"a", "b", "c"}
	l := &seqLog{got: map[EntityID][]int{}, done: make(chan struct{}), want: perEntity * len(ids)}
	sys, region := startLocal(t, EntityConfig{
		Entity:    actor.PropsOf(func() actor.Actor { return &seqEntity{log: l} }),
		Extractor: ExtractorFuncs{Shard: func(EntityID) ShardID { return "one" }},
	})
	send := func(id EntityID, n int) error {
		return region.Tell(Envelope{EntityID: id, Message: seqMsg{N: n}})
	}
	if viaRefs {
		refs := map[EntityID]EntityRef[seqMsg]{}
		for _, id := range ids {
			ref, err := EntityRefFor[seqMsg](sys, "Counter", id)
			if err != nil {
				t.Fatal(err)
			}
			refs[id] = ref
		}
		send = func(id EntityID, n int) error { return refs[id].Tell(seqMsg{N: n}) }
	}
	for n := range perEntity {
		for _, id := range ids {
			if err := send(id, n); err != nil {
				t.Fatal(err)
			}
		}
		if n%(10*passivateEvery) == passivateEvery-1 {
			// Now and then, wait until the entities have asked to be passivated, so
			// that the next messages meet them while they stop.
			l.await(t, (n+1)*len(ids))
		}
	}
	select {
	case <-l.done:
	case <-time.After(60 * time.Second):
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("%d of %d messages arrived", l.n, l.want)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		got := l.got[id]
		if len(got) != perEntity {
			t.Fatalf("entity %s got %d messages, want %d", id, len(got), perEntity)
		}
		for i, n := range got {
			if n != i {
				t.Fatalf("entity %s: message %d is %d (order broken)", id, i, n)
			}
		}
	}
}

// An EntityRef goes direct as long as no EntityRef message for its shard waits in the
// region, whatever else the region is busy with. While the region is stuck placing a
// message for a third shard (its extractor blocks): a message for an entity of shard a
// that does not run goes through the region, and so does the next one for a running
// entity of shard a (both counted on a's route), while a tell to a running entity of
// shard b arrives at once. Once the region is released, a's messages arrive, the count
// goes back to zero, and a's next message goes direct again: it arrives while the
// region is stuck a second time.
func TestEntityRefsPassABusyRegion(t *testing.T) {
	release := make(chan struct{})
	stuck := make(chan struct{})
	got := make(chan string, 16)
	sys, region := startLocal(t, EntityConfig{
		Entity: actor.PropsOf(func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				if m, ok := ctx.Message().(string); ok {
					got <- string(EntityIDOf(ctx)) + ":" + m
				}
			})
		}),
		Extractor: ExtractorFuncs{Shard: func(id EntityID) ShardID {
			if id == "stuck" {
				stuck <- struct{}{}
				<-release
			}
			return ShardID(id[:1])
		}},
	})
	next := func() string {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("a message did not arrive")
			return ""
		}
	}
	counted := func(route *directRoute, n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for route.viaRegion.Load() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d EntityRef messages counted in the region, want %d", route.viaRegion.Load(), n)
			}
			runtime.Gosched()
		}
	}
	a1, _ := EntityRefFor[string](sys, "Counter", "a1")
	a2, _ := EntityRefFor[string](sys, "Counter", "a2")
	b1, _ := EntityRefFor[string](sys, "Counter", "b1")
	for _, ref := range []EntityRef[string]{a1, b1} {
		_ = ref.Tell("start") // through the region: starts the shard and the entity
		if m, want := next(), string(ref.EntityID())+":start"; m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
		counted(ref.direct.shard, 0) // counted off just after it was handed on
	}

	_ = region.Tell(Envelope{EntityID: "stuck", Message: "x"})
	<-stuck
	_ = a2.Tell("first")  // a2 does not run: through the region
	_ = a1.Tell("second") // behind it, through the region too
	counted(a1.direct.shard, 2)
	_ = b1.Tell("direct")
	if m := next(); m != "b1:direct" {
		t.Fatalf("got %q while the region is stuck, want b1:direct", m)
	}
	release <- struct{}{}
	seen := map[string]bool{}
	for range 3 { // in any order between entities
		seen[next()] = true
	}
	for _, m := range []string{"stuck:x", "a2:first", "a1:second"} {
		if !seen[m] {
			t.Fatalf("after the release got %v, missing %q", seen, m)
		}
	}
	counted(a1.direct.shard, 0)

	_ = region.Tell(Envelope{EntityID: "stuck", Message: "y"})
	<-stuck
	_ = a1.Tell("third")
	if m := next(); m != "a1:third" {
		t.Fatalf("got %q while the region is stuck again, want a1:third", m)
	}
	release <- struct{}{}
	if m := next(); m != "stuck:y" {
		t.Fatalf("got %q, want stuck:y", m)
	}
}

// asker answers "ping" with "pong", "fail" with a Failure, and ignores "silence".
type asker struct{}

var errAskerFailed = errors.New("asker: failed on purpose")

func (asker) Receive(ctx actor.Context) {
	switch ctx.Message() {
	case "ping":
		_ = ctx.Respond("pong")
	case "fail":
		_ = ctx.Respond(actor.Failure{Err: errAskerFailed})
	}
}

// Asks through an EntityRef take the fast path once the entity runs here, and behave
// as any ask: the reply, a Failure as its error, a reply of another type as
// ErrUnexpectedReply, and a deadline as ErrTimeout naming the entity.
func TestFastPathAsks(t *testing.T) {
	sys, _ := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return asker{} })})
	ref, err := EntityRefFor[string](sys, "Counter", "e")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 { // the first starts the entity through the region
		if got, err := Ask[string](ctx, ref, "ping"); err != nil || got != "pong" {
			t.Fatalf("ping: %q, %v", got, err)
		}
	}
	if _, err := Ask[string](ctx, ref, "fail"); !errors.Is(err, errAskerFailed) {
		t.Fatalf("fail: %v, want the Failure's error", err)
	}
	if _, err := Ask[int](ctx, ref, "ping"); !errors.Is(err, actor.ErrUnexpectedReply) {
		t.Fatalf("ping as int: %v, want ErrUnexpectedReply", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	_, err = Ask[string](short, ref, "silence")
	if !errors.Is(err, actor.ErrTimeout) || !strings.Contains(err.Error(), "/e") {
		t.Fatalf("silence: %v, want ErrTimeout naming the entity", err)
	}
	if got, err := ref.Ask(ctx, "ping").Result(ctx); err != nil || got != "pong" {
		t.Fatalf("EntityRef.Ask: %v, %v", got, err)
	}
}

// Two EntityRefs of one entity are equal (they share their shard's direct route).
func TestEntityRefsOfOneEntityAreEqual(t *testing.T) {
	sys, _ := startLocal(t, EntityConfig{Entity: actor.PropsOf(func() actor.Actor { return asker{} })})
	a, err := EntityRefFor[string](sys, "Counter", "x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := EntityRefFor[string](sys, "Counter", "x")
	c, _ := EntityRefFor[string](sys, "Counter", "y")
	if a != b || a == c {
		t.Fatalf("refs of x equal: %v; of x and y equal: %v", a == b, a == c)
	}
}

// A StartEntity through the region counts as handled by the shard like any delivery:
// afterwards the fast path is open again (it was shut for good by the first one).
func TestFastPathAfterStartEntity(t *testing.T) {
	sys, region := startLocal(t, EntityConfig{
		Entity:    actor.PropsOf(func() actor.Actor { return asker{} }),
		Extractor: ExtractorFuncs{Shard: func(EntityID) ShardID { return "one" }},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, id := range []EntityID{"a", "b"} {
		if _, err := actor.Ask[StartEntityAck](ctx, region, StartEntity{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := actor.Ask[string](ctx, region, Envelope{EntityID: "a", Message: "ping"}); err != nil {
		t.Fatal(err)
	}
	var fp *fastPath
	s := Get(sys)
	s.mu.Lock()
	e := s.types["Counter"]
	s.mu.Unlock()
	if v, ok := e.fast.Load(ShardID("one")); ok {
		fp = v.(*fastPath)
	}
	if fp == nil {
		t.Fatal("no fast path for the shard")
	}
	// The shard counts a delivery just after handling it (the reply may come first).
	deadline := time.Now().Add(5 * time.Second)
	for fp.handled.Load() != fp.sent.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("shard handled %d of the %d deliveries its region sent", fp.handled.Load(), fp.sent.Load())
		}
		time.Sleep(time.Millisecond) // a poll's pace
	}
}

// After its shard stops and starts again, an EntityRef finds the new shard's fast path
// (the old one is gone) and its messages still arrive.
func TestFastPathAfterTheShardRestarts(t *testing.T) {
	sys, region := startLocal(t, EntityConfig{
		Entity:    actor.PropsOf(func() actor.Actor { return asker{} }),
		Extractor: ExtractorFuncs{Shard: func(EntityID) ShardID { return "one" }},
	})
	ref, err := EntityRefFor[string](sys, "Counter", "e")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for round := range 3 {
		for range 3 {
			if got, err := Ask[string](ctx, ref, "ping"); err != nil || got != "pong" {
				t.Fatalf("round %d: %q, %v", round, got, err)
			}
		}
		if _, err := actor.Ask[ShardStopped](ctx, region, StopShards{Shards: []ShardID{"one"}}); err != nil {
			t.Fatalf("round %d: StopShards: %v", round, err)
		}
	}
}

// An EntityRef skips the look-up while its fast path's epoch stands, and only then:
// after each change that ends the answer it remembers (the entity unlisted, stopped or
// given a new Ref, the fast path closed), it finds what a look-up finds now. With
// idle passivation, taking the marks of use makes the next send mark its entity
// again.
func TestEntityRouteRemembersOnlyWhatStillHolds(t *testing.T) {
	sys := testkit.NewSystem(t)
	spawn := func() actor.Ref {
		ref, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "")
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	first, second := spawn(), spawn()
	listed := func(trackUse bool) *fastPath {
		f := newFastPath(trackUse)
		f.setOpen(true)
		f.add("e", first)
		f.setListed("e", true)
		return f
	}
	reach := func(f *fastPath, e *entityRoute) (actor.Ref, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.reach(e, "e")
	}
	for name, tc := range map[string]struct {
		change  func(*fastPath)
		wantRef actor.Ref // zero: not reachable
	}{
		"unlisted": {func(f *fastPath) { f.setListed("e", false) }, actor.Ref{}},
		"stopped":  {func(f *fastPath) { f.remove("e") }, actor.Ref{}},
		"closed":   {func(f *fastPath) { f.setOpen(false) }, actor.Ref{}},
		// A fast path closed after it was open (a hand-off, a stop) stays closed.
		"reopened": {func(f *fastPath) { f.setOpen(false); f.setOpen(true) }, actor.Ref{}},
		"shut, then listed": {func(f *fastPath) {
			f.setOpen(false)
			f.setListed("e", false)
			f.setListed("e", true)
		}, actor.Ref{}},
		"new Ref":   {func(f *fastPath) { f.add("e", second); f.setListed("e", true) }, second},
		"restarted": {func(f *fastPath) { f.remove("e"); f.add("e", second); f.setListed("e", true) }, second},
		"relisted":  {func(f *fastPath) { f.setListed("e", false); f.setListed("e", true) }, first},
		"unchanged": {func(*fastPath) {}, first},
	} {
		t.Run(name, func(t *testing.T) {
			f, e := listed(false), &entityRoute{}
			if ref, ok := reach(f, e); !ok || ref != first {
				t.Fatalf("before: %v, %v", ref, ok)
			}
			tc.change(f)
			ref, ok := reach(f, e)
			if ok != !tc.wantRef.IsZero() || ref != tc.wantRef {
				t.Fatalf("after: %v, %v; want %v", ref, ok, tc.wantRef)
			}
		})
	}
	t.Run("another fast path", func(t *testing.T) {
		// The shard restarted: its new fast path lists the entity's new incarnation.
		old, e := listed(false), &entityRoute{}
		if ref, ok := reach(old, e); !ok || ref != first {
			t.Fatalf("old fast path: %v, %v", ref, ok)
		}
		f := newFastPath(false)
		f.setOpen(true)
		f.add("e", second)
		f.setListed("e", true)
		if ref, ok := reach(f, e); !ok || ref != second {
			t.Fatalf("new fast path: %v, %v; want the new incarnation", ref, ok)
		}
	})
	t.Run("marks taken", func(t *testing.T) {
		f, e := listed(true), &entityRoute{}
		for round := range 3 {
			for range 2 {
				if _, ok := reach(f, e); !ok {
					t.Fatalf("round %d: not reachable", round)
				}
			}
			if got := f.usedSinceLastLook(); len(got) != 1 || got[0] != "e" {
				t.Fatalf("round %d: used %v, want [e]", round, got)
			}
		}
	})
}

// Two EntityRefs of one entity share its route while either is held; once none is, the
// route's entry goes with it, and a new EntityRef gets a new route.
func TestEntityRoutesGoWithTheirRefs(t *testing.T) {
	sys, _ := startLocal(t, EntityConfig{
		Entity:    actor.PropsOf(func() actor.Actor { return asker{} }),
		Extractor: ExtractorFuncs{Shard: func(EntityID) ShardID { return "one" }},
	})
	kept, err := EntityRefFor[string](sys, "Counter", "kept")
	if err != nil {
		t.Fatal(err)
	}
	route := kept.direct.shard
	for i := range 100 {
		if _, err := EntityRefFor[string](sys, "Counter", EntityID(fmt.Sprint("dropped-", i))); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() int {
		route.mu.Lock()
		defer route.mu.Unlock()
		return len(route.entities)
	}
	deadline := time.Now().Add(10 * time.Second)
	for entries() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d routes held, want 1 (kept)", entries())
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // a poll's pace: cleanups run after a collection
	}
	again, _ := EntityRefFor[string](sys, "Counter", "kept")
	if again != kept {
		t.Fatal("a new EntityRef of a held entity differs from the held one")
	}
	runtime.KeepAlive(kept)
}
