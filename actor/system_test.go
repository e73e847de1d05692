package actor_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func TestNewValidates(t *testing.T) {
	for _, name := range []string{"", "has space", "slash/y"} {
		if _, err := actor.New(name, actor.Config{}); !errors.Is(err, actor.ErrInvalidName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	for name, cfg := range map[string]actor.Config{
		"throughput":    {Throughput: -1},
		"stash":         {StashCapacity: -1},
		"phase timeout": {PhaseTimeout: -time.Second},
		"unknown phase": {PhaseTimeouts: map[actor.Phase]time.Duration{"nope": time.Second}},
		"zero override": {PhaseTimeouts: map[actor.Phase]time.Duration{actor.PhaseServiceStop: 0}},
	} {
		if _, err := actor.New("sys", cfg); !errors.Is(err, actor.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if d := actor.DefaultConfig(); d.Throughput != 300 || d.Logger == nil {
		t.Fatalf("defaults: %+v", d)
	}
}

func TestCoordinatedShutdownRunsPhasesInOrder(t *testing.T) {
	sys, err := actor.New("cs", actor.Config{PhaseTimeouts: map[actor.Phase]time.Duration{
		actor.PhaseServiceStop: 50 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	record := func(s string) actor.ShutdownTask {
		return func(context.Context) error {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
			return nil
		}
	}
	cs := sys.CoordinatedShutdown()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.AddTask(actor.PhaseClusterLeave, "leave", record("leave")))
	must(cs.AddTask(actor.PhaseBeforeServiceUnbind, "first", record("first")))
	must(cs.AddTask(actor.PhaseClusterShardingShutdownRegion, "shards", record("shards")))
	must(cs.AddTask(actor.PhaseServiceStop, "slow", func(ctx context.Context) error {
		<-ctx.Done() // overruns its phase
		return ctx.Err()
	}))
	must(cs.AddTask(actor.PhaseServiceRequestsDone, "fails", func(context.Context) error {
		return errors.New("task failed")
	}))
	if err := cs.AddTask("no-such-phase", "x", record("x")); !errors.Is(err, actor.ErrUnknownPhase) {
		t.Fatalf("unknown phase: %v", err)
	}

	// A user actor is stopped in the last phase, after every task.
	probe := make(chan string, 1)
	_, err = sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(actor.Stopped); ok {
			mu.Lock()
			order = append(order, "actor-stopped")
			mu.Unlock()
			probe <- "stopped"
		}
	}), "worker")
	must(err)

	err = sys.Shutdown(context.Background())
	if !errors.Is(err, actor.ErrPhaseTimeout) || err == nil {
		t.Fatalf("Shutdown error %v, want a phase timeout and a task failure", err)
	}
	want := []string{"first", "shards", "leave", "actor-stopped"}
	mu.Lock()
	got := append([]string(nil), order...)
	mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	<-probe
	select {
	case <-sys.Terminated():
	default:
		t.Fatal("Terminated not closed after Shutdown")
	}
	// A second Shutdown is a no-op returning the same result.
	if err2 := sys.Shutdown(context.Background()); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second Shutdown: %v", err2)
	}
	if err := cs.AddTask(actor.PhaseServiceStop, "late", record("late")); !errors.Is(err, actor.ErrShutdownStarted) {
		t.Fatalf("late AddTask: %v", err)
	}
	if _, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "after"); !errors.Is(err, actor.ErrStopping) {
		t.Fatalf("spawn after shutdown: %v", err)
	}
}

func TestConcurrentShutdown(t *testing.T) {
	sys, err := actor.New("twice", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := sys.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

type counterExt struct{ created *atomic.Int32 }

func TestExtensionsAreCreatedOncePerSystem(t *testing.T) {
	var created atomic.Int32
	id := actor.NewExtensionID("counter", func(*actor.System) *counterExt {
		created.Add(1)
		return &counterExt{created: &created}
	})
	a := testkit.NewSystem(t)
	var wg sync.WaitGroup
	got := make([]*counterExt, 8)
	for i := range got {
		wg.Go(func() { got[i] = id.Get(a) })
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatal("different instances for one system")
		}
	}
	if created.Load() != 1 {
		t.Fatalf("created %d times", created.Load())
	}
	b, err := actor.New("other", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Shutdown(context.Background()) }()
	if id.Get(b) == got[0] || created.Load() != 2 {
		t.Fatal("a second system must get its own instance")
	}
}

type animal interface{ Sound() string }
type dog struct{}

func (dog) Sound() string { return "woof" }

func TestEventStreamTypedSubscriptions(t *testing.T) {
	sys := testkit.NewSystem(t)
	ints := testkit.NewProbe(t, sys)
	animals := testkit.NewProbe(t, sys)
	es := sys.EventStream()
	actor.Subscribe[int](es, ints.Ref())
	actor.Subscribe[int](es, ints.Ref()) // twice is once
	actor.Subscribe[animal](es, animals.Ref())
	es.Publish(1)
	es.Publish("ignored")
	es.Publish(dog{})
	ints.ExpectMsg(1)
	ints.ExpectNoMsg(30 * time.Millisecond)
	animals.ExpectMsg(dog{})
	es.Unsubscribe(ints.Ref())
	es.Publish(2)
	ints.ExpectNoMsg(30 * time.Millisecond)
}
