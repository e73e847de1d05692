package ddata

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

var (
	counterKey = NewKey[*GCounter]("counter")
	setKey     = NewKey[*ORSet[string]]("set")
)

// inc returns a modify function that increments by n on behalf of self.
func inc(r *Replicator, n uint64) func(*GCounter) (*GCounter, error) {
	self := r.SelfUniqueAddress()
	return func(c *GCounter) (*GCounter, error) {
		c.Increment(self, n)
		return c, nil
	}
}

// add returns a modify function that adds elems to a set on behalf of self.
func add(r *Replicator, elems ...string) func(*ORSet[string]) (*ORSet[string], error) {
	self := r.SelfUniqueAddress()
	return func(s *ORSet[string]) (*ORSet[string], error) {
		for _, e := range elems {
			s.Add(self, e)
		}
		return s, nil
	}
}

// startAlone starts a replicator without a cluster, with short intervals.
func startAlone(t *testing.T, sys *actor.System, cfg Config) *Replicator {
	t.Helper()
	if cfg.NotifySubscribersInterval == 0 {
		cfg.NotifySubscribersInterval = 50 * time.Millisecond
	}
	r, err := Start(t.Context(), sys, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return r
}

// counterValueOf reads a counter locally, failing the test on error.
func counterValueOf(t *testing.T, r *Replicator, key Key[*GCounter]) uint64 {
	t.Helper()
	c, err := Read(context.Background(), r, key, ReadLocal())
	if err != nil {
		t.Fatalf("Read %s: %v", key.ID(), err)
	}
	return c.Value()
}

func counterValue(t *testing.T, r *Replicator, level ReadConsistency) uint64 {
	t.Helper()
	c, err := Read(context.Background(), r, counterKey, level)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return c.Value()
}

func TestSingleNodeReadsWritesAndNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		if Get(sys) != r {
			t.Fatal("Get does not return the started replicator")
		}
		if _, err := Start(t.Context(), sys, Config{}); !errors.Is(err, ErrAlreadyStarted) {
			t.Fatalf("second Start: %v", err)
		}

		if _, err := Read(ctx, r, counterKey, ReadLocal()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Read of an unknown key: %v", err)
		}
		sub := testkit.NewProbe(t, sys)
		if err := Subscribe(r, counterKey, sub.Ref()); err != nil {
			t.Fatal(err)
		}
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 2)); err != nil {
			t.Fatalf("WriteLocal: %v", err)
		}
		if got := testkit.ExpectMsgType[Changed[*GCounter]](sub).Value.Value(); got != 2 {
			t.Fatalf("Changed with %d, want 2", got)
		}

		// A late subscriber gets the current value at once.
		late := testkit.NewProbe(t, sys)
		if err := Subscribe(r, counterKey, late.Ref()); err != nil {
			t.Fatal(err)
		}
		if got := testkit.ExpectMsgType[Changed[*GCounter]](late).Value.Value(); got != 2 {
			t.Fatalf("late subscriber got %d, want 2", got)
		}

		// WriteTo(2) cannot reach a second replica, but the local value changes.
		err := Update(ctx, r, counterKey, WriteTo(2, time.Second), nil, inc(r, 1))
		if !errors.Is(err, ErrNotEnoughReplicas) {
			t.Fatalf("WriteTo(2) alone: %v, want ErrNotEnoughReplicas", err)
		}
		if v := counterValue(t, r, ReadLocal()); v != 3 {
			t.Fatalf("after a failed write: %d, want 3", v)
		}
		if _, err := Read(ctx, r, counterKey, ReadFrom(2, time.Second)); !errors.Is(err, ErrNotEnoughReplicas) {
			t.Fatalf("ReadFrom(2) alone: %v", err)
		}
		// Majority and All act as local when alone.
		if err := Update(ctx, r, counterKey, WriteMajority(time.Second, 0), nil, inc(r, 1)); err != nil {
			t.Fatalf("WriteMajority: %v", err)
		}
		if err := Update(ctx, r, counterKey, WriteAll(time.Second), nil, inc(r, 1)); err != nil {
			t.Fatalf("WriteAll: %v", err)
		}
		if v := counterValue(t, r, ReadAll(time.Second)); v != 5 {
			t.Fatalf("ReadAll: %d, want 5", v)
		}
		if got := testkit.ExpectMsgType[Changed[*GCounter]](sub).Value.Value(); got != 5 {
			t.Fatalf("Changed with %d, want 5 (one notification per interval)", got)
		}

		// An update that changes nothing notifies nobody.
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, func(c *GCounter) (*GCounter, error) { return c, nil }); err != nil {
			t.Fatal(err)
		}
		sub.ExpectNoMsg(time.Second)

		// Unsubscribe stops the notifications.
		if err := Unsubscribe(r, counterKey, sub.Ref()); err != nil {
			t.Fatal(err)
		}
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		testkit.ExpectMsgType[Changed[*GCounter]](late)
		sub.ExpectNoMsg(time.Second)

		// FlushChanges notifies at once.
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		if err := r.FlushChanges(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		testkit.ExpectMsgType[Changed[*GCounter]](late)
		if time.Since(start) != 0 {
			t.Fatalf("FlushChanges notified after %v", time.Since(start))
		}
	})
}

func TestDeleteIsForever(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		if err := Update(ctx, r, setKey, WriteLocal(), nil, add(r, "a")); err != nil {
			t.Fatal(err)
		}
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		sub := testkit.NewProbe(t, sys)
		if err := Subscribe(r, setKey, sub.Ref()); err != nil {
			t.Fatal(err)
		}
		testkit.ExpectMsgType[Changed[*ORSet[string]]](sub)
		if err := Delete(ctx, r, setKey, WriteMajority(time.Second, 0)); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if d := testkit.ExpectMsgType[Deleted[*ORSet[string]]](sub); d.Key.ID() != "set" {
			t.Fatalf("Deleted for %q", d.Key.ID())
		}
		if _, err := Read(ctx, r, setKey, ReadLocal()); !errors.Is(err, ErrDeleted) {
			t.Fatalf("Read after Delete: %v", err)
		}
		if err := Update(ctx, r, setKey, WriteLocal(), nil, add(r, "b")); !errors.Is(err, ErrDeleted) {
			t.Fatalf("Update after Delete: %v", err)
		}
		if err := Delete(ctx, r, setKey, WriteLocal()); !errors.Is(err, ErrDeleted) {
			t.Fatalf("Delete after Delete: %v", err)
		}
		keys, err := Keys(ctx, r)
		if err != nil || !slices.Equal(keys, []string{"counter"}) {
			t.Fatalf("Keys = %v, %v; want [counter]", keys, err)
		}
		// A late subscriber hears that it is deleted.
		late := testkit.NewProbe(t, sys)
		if err := Subscribe(r, setKey, late.Ref()); err != nil {
			t.Fatal(err)
		}
		testkit.ExpectMsgType[Deleted[*ORSet[string]]](late)
	})
}

// gsetKey is a key of a grow-only set.
var gsetKey = NewKey[*GSet[string]]("gset")

func TestModifyResultsAndFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		// A modify that ignores the current value still merges into it.
		for _, e := range []string{"a", "b"} {
			err := Update(ctx, r, gsetKey, WriteLocal(), nil, func(*GSet[string]) (*GSet[string], error) {
				s := NewGSet[string]()
				s.Add(e)
				return s, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		s, err := Read(ctx, r, gsetKey, ReadLocal())
		if err != nil || !slices.Equal(sortedStrings(s.Elements()), []string{"a", "b"}) {
			t.Fatalf("merged set %v, %v", s, err)
		}
		// The value read is a copy.
		s.Add("mine")
		if s2, _ := Read(ctx, r, gsetKey, ReadLocal()); s2.Contains("mine") {
			t.Fatal("a reader's change reached the replica")
		}

		// Failing modify functions: an error, a panic, nil.
		boom := errors.New("boom")
		failures := []func(*GSet[string]) (*GSet[string], error){
			func(*GSet[string]) (*GSet[string], error) { return nil, boom },
			func(*GSet[string]) (*GSet[string], error) { panic("modify panics") },
			func(*GSet[string]) (*GSet[string], error) { return nil, nil },
		}
		for i, f := range failures {
			if err := Update(ctx, r, gsetKey, WriteLocal(), nil, f); !errors.Is(err, ErrModifyFailed) {
				t.Fatalf("failure %d: %v, want ErrModifyFailed", i, err)
			}
		}
		if err := Update(ctx, r, gsetKey, WriteLocal(), nil, nil); !errors.Is(err, ErrModifyFailed) {
			t.Fatalf("nil modify: %v", err)
		}
		// The replicator keeps running.
		if s, err := Read(ctx, r, gsetKey, ReadLocal()); err != nil || s.Len() != 2 {
			t.Fatalf("after failures: %v, %v", s, err)
		}
		if st := r.Stats(); st.Panics != 0 {
			t.Fatalf("the replicator itself panicked: %+v", st)
		}
	})
}

// unregistered is a user CRDT that is not in the registry.
type unregistered struct{ n int }

func (u *unregistered) MergeData(o ReplicatedData) error {
	u.n = max(u.n, o.(*unregistered).n)
	return nil
}
func (u *unregistered) CloneData() ReplicatedData { c := *u; return &c }

func TestKeyTypesAndRegistration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		// One id, another type: every operation refuses it.
		wrong := NewKey[*ORSet[string]]("counter")
		if _, err := Read(ctx, r, wrong, ReadLocal()); !errors.Is(err, ErrTypeMismatch) {
			t.Fatalf("Read as another type: %v", err)
		}
		if err := Update(ctx, r, wrong, WriteLocal(), nil, add(r, "x")); !errors.Is(err, ErrTypeMismatch) {
			t.Fatalf("Update as another type: %v", err)
		}
		if err := Delete(ctx, r, wrong, WriteLocal()); !errors.Is(err, ErrTypeMismatch) {
			t.Fatalf("Delete as another type: %v", err)
		}
		if v := counterValue(t, r, ReadLocal()); v != 1 {
			t.Fatalf("counter %d after refused operations", v)
		}
		// An unregistered user CRDT is refused.
		uk := NewKey[*unregistered]("user")
		err := Update(ctx, r, uk, WriteLocal(), &unregistered{}, func(u *unregistered) (*unregistered, error) { u.n++; return u, nil })
		if !errors.Is(err, serialization.ErrUnregistered) {
			t.Fatalf("unregistered type: %v", err)
		}
		if _, err := Read(ctx, r, uk, ReadLocal()); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unregistered value was kept: %v", err)
		}
		// Bad consistency levels.
		if err := Update(ctx, r, counterKey, WriteTo(1, time.Second), nil, inc(r, 1)); !errors.Is(err, ErrInvalidConsistency) {
			t.Fatalf("WriteTo(1): %v", err)
		}
		if _, err := Read(ctx, r, counterKey, ReadMajority(0, 0)); !errors.Is(err, ErrInvalidConsistency) {
			t.Fatalf("ReadMajority(0): %v", err)
		}
	})
}

// cartActor uses the in-actor API: it adds items with SendUpdate, reads with
// SendRead, and reports the replies (with their request contexts) to a probe.
type cartActor struct {
	r     *Replicator
	probe actor.Ref
}

type addItem struct{ item string }
type readCart struct{}

func (c *cartActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case addItem:
		if err := SendUpdate(ctx, c.r, setKey, WriteLocal(), nil, add(c.r, m.item), m); err != nil {
			panic(err)
		}
	case readCart:
		if err := SendRead(ctx, c.r, setKey, ReadLocal(), "read-1"); err != nil {
			panic(err)
		}
	case UpdateResponse[*ORSet[string]]:
		_ = ctx.Send(c.probe, m)
	case ReadResponse[*ORSet[string]]:
		_ = ctx.Send(c.probe, m)
	}
}

func TestInActorAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		probe := testkit.NewProbe(t, sys)
		ref, err := sys.Spawn(actor.PropsOf(func() actor.Actor { return &cartActor{r: r, probe: probe.Ref()} }), "cart")
		if err != nil {
			t.Fatal(err)
		}
		_ = ref.Tell(readCart{})
		if resp := testkit.ExpectMsgType[ReadResponse[*ORSet[string]]](probe); !errors.Is(resp.Err, ErrNotFound) || resp.Context != "read-1" {
			t.Fatalf("read of an empty cart: %+v", resp)
		}
		_ = ref.Tell(addItem{"apples"})
		if resp := testkit.ExpectMsgType[UpdateResponse[*ORSet[string]]](probe); resp.Err != nil || resp.Context != (addItem{"apples"}) {
			t.Fatalf("update: %+v", resp)
		}
		_ = ref.Tell(readCart{})
		resp := testkit.ExpectMsgType[ReadResponse[*ORSet[string]]](probe)
		if resp.Err != nil || !resp.Value.Contains("apples") || resp.Key.ID() != "set" {
			t.Fatalf("read: %+v", resp)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{GossipInterval: -1},
		{MaxDeltaElements: -1},
		{MaxMessageSize: 10},
		{DurableKeys: []string{"a"}},
		{DurableKeys: []string{"a*b"}, DurableDir: "x"},
		{DurableKeys: []string{""}, DurableDir: "x"},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%d: Validate = %v", i, err)
		}
	}
	if err := (Config{DurableKeys: []string{"cart-*", "*", "exact"}, DurableDir: "x"}).Validate(); err != nil {
		t.Errorf("good durable patterns: %v", err)
	}
	m := newDurableMatcher([]string{"cart-*", "exact"})
	for key, want := range map[string]bool{"cart-1": true, "cart-": true, "exact": true, "exactly": false, "other": false} {
		if m.match(key) != want {
			t.Errorf("match(%q) = %v", key, !want)
		}
	}
}

// A durable update succeeds once it is stored; a failed store is a StoreFailure,
// and the value stays in memory. Stored values come back at the next start.
func TestDurableStoreAndStoreFailure(t *testing.T) {
	dir := t.TempDir()
	durable := NewKey[*GCounter]("durable-a")
	{
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{DurableKeys: []string{"durable-*"}, DurableDir: dir})
		ctx := context.Background()
		if err := Update(ctx, r, durable, WriteLocal(), nil, inc(r, 3)); err != nil {
			t.Fatal(err)
		}
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		if err := Delete(ctx, r, NewKey[*GCounter]("durable-gone"), WriteLocal()); err != nil {
			t.Fatal(err)
		}
		// Updates nobody waits for: some are still to be stored when the system
		// stops, and the replicator stores them as it stops.
		for range 500 {
			_ = r.ref.Tell(&updateRequest[*GCounter]{key: durable, level: WriteLocal(), modify: inc(r, 1), ch: make(chan UpdateResponse[*GCounter], 1)})
		}
		if v := counterValueOf(t, r, durable); v != 503 {
			t.Fatalf("before the stop: %d", v)
		}
		shutdownSystem(t, sys)
	}
	sys := testkit.NewSystem(t)
	r := startAlone(t, sys, Config{DurableKeys: []string{"durable-*"}, DurableDir: dir})
	ctx := context.Background()
	if v := counterValueOf(t, r, durable); v != 503 {
		t.Fatalf("durable key after a restart: %d, want 503", v)
	}
	if _, err := Read(ctx, r, counterKey, ReadLocal()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a key that is not durable after a restart: %v", err)
	}
	if _, err := Read(ctx, r, NewKey[*GCounter]("durable-gone"), ReadLocal()); !errors.Is(err, ErrDeleted) {
		t.Fatalf("a deleted durable key after a restart: %v", err)
	}
	// A key id longer than the store takes (badger's 64 KiB keys) fails its store.
	huge := NewKey[*GCounter]("durable-" + strings.Repeat("x", 70_000))
	if err := Update(ctx, r, huge, WriteLocal(), nil, inc(r, 1)); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("update that cannot be stored: %v, want ErrStoreFailed", err)
	}
	if c, err := Read(ctx, r, huge, ReadLocal()); err != nil || c.Value() != 1 {
		t.Fatalf("the value in memory: %v, %v", c, err)
	}
	// One bad key does not fail the others, in one batch or not.
	hugeErr := make(chan error, 1)
	go func() { hugeErr <- Update(ctx, r, huge, WriteLocal(), nil, inc(r, 1)) }()
	if err := Update(ctx, r, durable, WriteLocal(), nil, inc(r, 1)); err != nil {
		t.Fatalf("update next to a failing one: %v", err)
	}
	if err := <-hugeErr; !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("the bad key again: %v", err)
	}
	if r.Stats().StoreFailures == 0 {
		t.Fatal("the store failure was not counted")
	}
}

// shutdownSystem shuts sys down now (testkit.NewSystem would at the end of the
// test).
func shutdownSystem(t *testing.T, sys *actor.System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// A subscriber that stops is forgotten.
func TestSubscriberStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		sub := testkit.NewProbe(t, sys)
		if err := Subscribe(r, counterKey, sub.Ref()); err != nil {
			t.Fatal(err)
		}
		if err := Update(ctx, r, counterKey, WriteLocal(), nil, inc(r, 1)); err != nil {
			t.Fatal(err)
		}
		testkit.ExpectMsgType[Changed[*GCounter]](sub)
		if err := sys.Stop(sub.Ref()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := inspect(r, func(a *replicator) int { return len(a.notifiers) + len(a.watching) + len(a.subs.subs) }); n != 0 {
			t.Fatalf("%d subscription records left after the subscriber stopped", n)
		}
	})
}

// Start honours its context: the durable store is where it may block, and a
// context that has ended stops it there, closing the store, so that a later
// Start can open the same directory.
func TestStartHonoursContext(t *testing.T) {
	dir := t.TempDir() // before the system, so that it is removed after the system stops
	sys := testkit.NewSystem(t)
	cfg := Config{DurableKeys: []string{"durable-*"}, DurableDir: dir}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Start(ctx, sys, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with an ended context: %v, want context.Canceled", err)
	}
	if Get(sys) != nil {
		t.Fatal("Get returns a replicator after a failed Start")
	}
	r, err := Start(t.Context(), sys, cfg)
	if err != nil {
		t.Fatalf("Start after the failed one: %v", err)
	}
	if err := Update(t.Context(), r, NewKey[*GCounter]("durable-n"), WriteLocal(), nil, inc(r, 1)); err != nil {
		t.Fatalf("Update of a durable key: %v", err)
	}
}

// A From level that needs more replicas than there are nodes fails at once with
// ErrNotEnoughReplicas, naming both counts, instead of reporting a timeout; the
// update is applied locally all the same. ReplicaCount tells how many count.
func TestTooFewReplicasFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		r := startAlone(t, sys, Config{})
		ctx := context.Background()
		if n, err := ReplicaCount(ctx, r); err != nil || n != 1 {
			t.Fatalf("ReplicaCount alone: %d, %v; want 1", n, err)
		}
		start := time.Now()
		err := Update(ctx, r, counterKey, WriteTo(3, 5*time.Second), nil, inc(r, 1))
		if !errors.Is(err, ErrNotEnoughReplicas) || errors.Is(err, ErrTimeout) {
			t.Fatalf("WriteTo(3) alone: %v, want ErrNotEnoughReplicas", err)
		}
		if want := "needs 3 replicas and 1 are known"; !strings.Contains(err.Error(), want) {
			t.Fatalf("WriteTo(3) alone: %q does not say %q", err, want)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("WriteTo(3) alone answered after %v, want at once", d)
		}
		if v := counterValue(t, r, ReadLocal()); v != 1 {
			t.Fatalf("the update is not applied locally: %d", v)
		}
		_, err = Read(ctx, r, counterKey, ReadFrom(2, 5*time.Second))
		if !errors.Is(err, ErrNotEnoughReplicas) || !strings.Contains(err.Error(), "needs 2 replicas and 1 are known") {
			t.Fatalf("ReadFrom(2) alone: %v, want ErrNotEnoughReplicas", err)
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("ReadFrom(2) alone answered after %v, want at once", d)
		}
	})
}
