package shardcore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/troupe-go/troupe/sharding/placement"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func newTestShard(t *testing.T, cfg ShardSettings[string]) *ShardCore[string] {
	t.Helper()
	if cfg.StopMessage == "" {
		cfg.StopMessage = "STOP"
	}
	s := NewShardCore[string]("s1", cfg)
	d := s.Start(t0)
	if !cfg.RememberEntities && !d.Ready {
		t.Fatal("shard without remember-entities not ready at start")
	}
	return s
}

// acts renders the actions of d as "spawn a", "a<-m", "stop a:STOP", "kill a".
func acts(d ShardDecisions[string]) []string {
	var out []string
	for _, a := range d.Actions {
		switch a.Kind {
		case ShardSpawn:
			out = append(out, "spawn "+string(a.Entity))
		case ShardDeliver:
			out = append(out, string(a.Entity)+"<-"+a.Msg)
		case ShardStopEntity:
			out = append(out, "stop "+string(a.Entity)+":"+a.Msg)
		case ShardKill:
			out = append(out, "kill "+string(a.Entity))
		}
	}
	return out
}

func wantActs(t *testing.T, what string, d ShardDecisions[string], want ...string) {
	t.Helper()
	if got := acts(d); !slices.Equal(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

func TestShardDeliversAndStartsEntities(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{})
	wantActs(t, "first message", s.Deliver(t0, "a", "m1"), "spawn a", "a<-m1")
	wantActs(t, "second message", s.Deliver(t0, "a", "m2"), "a<-m2")
	d := s.Deliver(t0, "", "x")
	if len(d.Dropped) != 1 || !errors.Is(d.Dropped[0].Err, errNoShardID) {
		t.Fatalf("empty entity id: %+v", d)
	}
	// An entity that stops on its own is forgotten and starts again on demand.
	wantActs(t, "stopped", s.EntityTerminated(t0, "a"))
	wantActs(t, "restart on demand", s.Deliver(t0, "a", "m3"), "spawn a", "a<-m3")
	if d := s.EntityTerminated(t0, "zz"); len(d.Problems) != 1 || !errors.Is(d.Problems[0], errEntityState) {
		t.Fatalf("unknown entity terminated: %+v", d)
	}
}

func TestShardPassivation(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{})
	s.Deliver(t0, "a", "m1")
	wantActs(t, "passivate", s.Passivate("a", "bye"), "stop a:bye")
	wantActs(t, "passivate again", s.Passivate("a", "bye"))
	wantActs(t, "held 1", s.Deliver(t0, "a", "m2"))
	wantActs(t, "held 2", s.Deliver(t0, "a", "m3"))
	wantActs(t, "next incarnation", s.EntityTerminated(t0, "a"), "spawn a", "a<-m2", "a<-m3")
	if s.buffered != 0 {
		t.Fatalf("buffered %d", s.buffered)
	}
	// Passivation without waiting messages ends the entity.
	s.Passivate("a", "bye")
	wantActs(t, "gone", s.EntityTerminated(t0, "a"))
	if _, ok := s.entities["a"]; ok {
		t.Fatal("passivated entity kept")
	}
	if d := s.Passivate("nobody", "bye"); len(d.Problems) != 1 || !errors.Is(d.Problems[0], errEntityState) {
		t.Fatalf("passivate of an unknown entity: %+v", d)
	}
	// StartEntity while passivating starts it again even without messages.
	s.Deliver(t0, "b", "x")
	s.Passivate("b", "bye")
	s.StartEntity(t0, "b")
	wantActs(t, "restart requested", s.EntityTerminated(t0, "b"), "spawn b")
}

func TestShardBufferLimit(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{BufferSize: 2})
	s.Deliver(t0, "a", "1")
	s.Deliver(t0, "b", "1")
	s.Passivate("a", "bye")
	s.Passivate("b", "bye")
	s.Deliver(t0, "a", "2")
	s.Deliver(t0, "b", "2")
	d := s.Deliver(t0, "a", "3")
	if len(d.Dropped) != 1 || d.Dropped[0].Msg != "3" || !errors.Is(d.Dropped[0].Err, ErrBufferFull) {
		t.Fatalf("overflow: %+v", d)
	}
	// Direct deliveries are not limited.
	wantActs(t, "direct", s.Deliver(t0, "c", "1"), "spawn c", "c<-1")
}

func TestShardRememberEntitiesStart(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{RememberEntities: true})
	if d := s.Deliver(t0, "x", "early"); len(d.Actions) != 0 {
		t.Fatal("delivered before the remembered entities loaded")
	}
	d := s.EntitiesLoaded(t0, []placement.EntityID{"b", "a", "b"})
	if !d.Ready {
		t.Fatal("not ready after loading")
	}
	wantActs(t, "loaded", d, "spawn a", "spawn b")
	if d.Store == nil || !slices.Equal(d.Store.Started, []placement.EntityID{"x"}) {
		t.Fatalf("early message to a new entity: store %+v", d.Store)
	}
	wantActs(t, "x held", s.Deliver(t0, "x", "m2"))
	d = s.Deliver(t0, "y", "m1")
	if d.Store != nil || len(d.Actions) != 0 {
		t.Fatalf("second write while one is in flight: %+v", d)
	}
	d = s.Stored(t0)
	wantActs(t, "x stored", d, "spawn x", "x<-early", "x<-m2")
	if d.Store == nil || !slices.Equal(d.Store.Started, []placement.EntityID{"y"}) {
		t.Fatalf("next batch %+v", d.Store)
	}
	wantActs(t, "y stored", s.Stored(t0), "spawn y", "y<-m1")

	// A failed write is asked for again.
	s.Deliver(t0, "z", "m")
	d = s.StoreFailed(errors.New("disk"))
	if d.Store == nil || !slices.Equal(d.Store.Started, []placement.EntityID{"z"}) || !errors.Is(d.Problems[0], errRememberStore) {
		t.Fatalf("retry: %+v", d)
	}
	wantActs(t, "z", s.Stored(t0), "spawn z", "z<-m")
}

func TestShardRememberEntitiesPassivationIsRecorded(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{RememberEntities: true})
	s.EntitiesLoaded(t0, []placement.EntityID{"a"})
	s.Passivate("a", "bye")
	d := s.EntityTerminated(t0, "a")
	if d.Store == nil || !slices.Equal(d.Store.Stopped, []placement.EntityID{"a"}) {
		t.Fatalf("stop not recorded: %+v", d.Store)
	}
	wantActs(t, "held while the stop is stored", s.Deliver(t0, "a", "m1"))
	d = s.Stored(t0)
	if d.Store == nil || !slices.Equal(d.Store.Started, []placement.EntityID{"a"}) {
		t.Fatalf("restart not recorded: %+v", d.Store)
	}
	wantActs(t, "restarted", s.Stored(t0), "spawn a", "a<-m1")

	// Without waiting messages the entity is forgotten.
	s.Passivate("a", "bye")
	s.EntityTerminated(t0, "a")
	s.Stored(t0)
	if _, ok := s.entities["a"]; ok {
		t.Fatal("passivated remembered entity kept")
	}
}

func TestShardRememberedEntityRestartsAfterBackoff(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{RememberEntities: true, EntityRestartBackoff: 4 * time.Second})
	s.EntitiesLoaded(t0, []placement.EntityID{"a", "b"})
	d := s.EntityTerminated(t0, "a")
	key := TimerKey{Kind: TimerEntityRestart, Entity: "a"}
	if after, ok := findTimer(d.Timers, key); !ok || after != 4*time.Second || len(d.Actions) != 0 {
		t.Fatalf("no backoff: %+v", d)
	}
	wantActs(t, "after the backoff", s.Timer(at(4), key), "spawn a")

	// A message does not wait for the backoff.
	s.EntityTerminated(t0, "b")
	d = s.Deliver(at(1), "b", "m")
	wantActs(t, "message", d, "spawn b", "b<-m")
	if len(d.Timers) != 1 || !d.Timers[0].Cancel {
		t.Fatalf("restart timer not cancelled: %+v", d.Timers)
	}
	wantActs(t, "stale fire", s.Timer(at(4), TimerKey{Kind: TimerEntityRestart, Entity: "b"}))
}

func TestShardHandOff(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{})
	s.Deliver(at(0), "a", "a1")
	s.Deliver(at(0), "b", "b1")
	s.Deliver(at(0), "c", "c1")
	s.Passivate("c", "bye")
	s.Deliver(at(1), "c", "c2") // held for c's next incarnation
	d := s.HandOff(at(2))
	wantActs(t, "hand-off", d, "stop a:STOP", "stop b:STOP")
	if after, ok := findTimer(d.Timers, TimerKey{Kind: TimerForceStop}); !ok || after != 55*time.Second {
		t.Fatalf("force-stop timer %v", after)
	}
	wantActs(t, "during hand-off", s.Deliver(at(3), "b", "b2"))
	wantActs(t, "new entity during hand-off", s.Deliver(at(3), "d", "d1"))
	wantActs(t, "c stops", s.EntityTerminated(at(4), "c"))
	s.EntityTerminated(at(4), "a")
	if d = s.Deliver(at(5), "a", "a2"); len(d.Actions) != 0 {
		t.Fatal("entity restarted during hand-off")
	}
	d = s.EntityTerminated(at(6), "b")
	if !d.Stopped || !slices.Equal(d.Leftovers, []string{"c2", "b2", "d1", "a2"}) {
		t.Fatalf("leftovers %q (stopped %v), want in arrival order", d.Leftovers, d.Stopped)
	}
	if d = s.Deliver(at(7), "a", "late"); len(d.Dropped) != 1 || !errors.Is(d.Dropped[0].Err, ErrStoppedLoss) {
		t.Fatalf("message after the shard stopped: %+v", d)
	}
}

func TestShardHandOffForceStop(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{HandOffTimeout: 3 * time.Second})
	s.Deliver(t0, "a", "1")
	s.Deliver(t0, "b", "1")
	d := s.HandOff(t0)
	key := TimerKey{Kind: TimerForceStop}
	if after, _ := findTimer(d.Timers, key); after != time.Second {
		t.Fatalf("force stop after %v, want 1s", after)
	}
	s.EntityTerminated(t0, "a")
	s.Deliver(t0, "b", "held")
	d = s.Timer(at(1), key)
	wantActs(t, "force", d, "kill b")
	if !d.Stopped || !slices.Equal(d.Leftovers, []string{"held"}) || !errors.Is(d.Problems[0], errForcedStop) {
		t.Fatalf("after force stop: %+v", d)
	}
	if d = s.EntityTerminated(at(2), "b"); len(d.Actions)+len(d.Problems) != 0 {
		t.Fatalf("late termination: %+v", d)
	}

	// Nothing running: done at once.
	e := newTestShard(t, ShardSettings[string]{})
	if d = e.HandOff(t0); !d.Stopped || len(d.Leftovers) != 0 {
		t.Fatalf("empty shard: %+v", d)
	}
	// Still loading (remember-entities): done at once, with what came meanwhile.
	l := newTestShard(t, ShardSettings[string]{RememberEntities: true})
	l.Deliver(t0, "a", "early")
	if d = l.HandOff(t0); !d.Stopped || !slices.Equal(d.Leftovers, []string{"early"}) {
		t.Fatalf("loading shard: %+v", d)
	}
	if d = l.EntitiesLoaded(t0, []placement.EntityID{"a"}); len(d.Actions)+len(d.Problems) != 0 || d.Ready {
		t.Fatalf("IDs loaded after the hand-off: %+v", d)
	}
}

func TestShardHandOffWithRememberEntities(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{RememberEntities: true})
	s.EntitiesLoaded(t0, []placement.EntityID{"a"})
	s.Deliver(t0, "n", "n1") // start being recorded
	d := s.HandOff(t0)
	wantActs(t, "hand-off", d, "stop a:STOP")
	d = s.EntityTerminated(t0, "a")
	if d.Store != nil {
		t.Fatal("hand-off stop recorded as a passivation")
	}
	if !d.Stopped || !slices.Equal(d.Leftovers, []string{"n1"}) {
		t.Fatalf("leftovers %+v", d)
	}
	if d = s.Stored(t0); len(d.Actions) != 0 {
		t.Fatal("late store confirmation started an entity")
	}
}

func TestShardIdlePassivation(t *testing.T) {
	s := NewShardCore[string]("s1", ShardSettings[string]{IdleTimeout: 10 * time.Second, StopMessage: "STOP"})
	d := s.Start(at(0))
	key := TimerKey{Kind: TimerIdle}
	if after, ok := findTimer(d.Timers, key); !ok || after != 5*time.Second {
		t.Fatalf("idle tick %v", after)
	}
	s.Deliver(at(0), "a", "1")
	s.Deliver(at(3), "b", "1")
	s.Deliver(at(6), "c", "1")
	s.Deliver(at(7), "a", "2") // a used again
	wantActs(t, "tick at 10", s.Timer(at(10), key))
	wantActs(t, "tick at 13", s.Timer(at(13), key), "stop b:STOP")
	wantActs(t, "tick at 17", s.Timer(at(17), key), "stop c:STOP", "stop a:STOP")

	r := NewShardCore[string]("s1", ShardSettings[string]{IdleTimeout: 10 * time.Second, RememberEntities: true})
	if _, ok := findTimer(r.Start(t0).Timers, key); ok {
		t.Fatal("idle passivation with remember-entities")
	}
}

func TestShardActiveLimit(t *testing.T) {
	s := newTestShard(t, ShardSettings[string]{ActiveLimit: 2})
	s.Deliver(at(0), "a", "1")
	s.Deliver(at(1), "b", "1")
	wantActs(t, "third entity", s.Deliver(at(2), "c", "1"), "spawn c", "stop a:STOP", "c<-1")
	s.Deliver(at(3), "b", "2")
	wantActs(t, "fourth", s.Deliver(at(4), "d", "1"), "spawn d", "stop c:STOP", "d<-1")
	wantActs(t, "lower limit", s.setActiveLimit(1), "stop b:STOP")
	wantActs(t, "no limit", s.setActiveLimit(0))
	// A message for a passivating entity waits, it is not lost.
	wantActs(t, "to passivating", s.Deliver(at(5), "a", "2"))
	wantActs(t, "a back", s.EntityTerminated(at(6), "a"), "spawn a", "a<-2")

	r := newTestShard(t, ShardSettings[string]{ActiveLimit: 1, RememberEntities: true})
	r.EntitiesLoaded(t0, []placement.EntityID{"a", "b", "c"})
	if r.live != 3 {
		t.Fatal("limit applied with remember-entities")
	}
}

func TestShardSeveralIncarnations(t *testing.T) {
	// At most one incarnation per entity, whatever the order of inputs.
	s := newTestShard(t, ShardSettings[string]{ActiveLimit: 3})
	incarnations := map[placement.EntityID]int{}
	check := func(d ShardDecisions[string]) {
		for _, a := range d.Actions {
			switch a.Kind {
			case ShardSpawn:
				incarnations[a.Entity]++
				if incarnations[a.Entity] > 1 {
					t.Fatalf("second incarnation of %q", a.Entity)
				}
			case ShardDeliver:
				if incarnations[a.Entity] != 1 {
					t.Fatalf("delivery to %q without an incarnation", a.Entity)
				}
			}
		}
	}
	for i := range 200 {
		id := placement.EntityID(fmt.Sprintf("e%d", i%7))
		now := at(i)
		switch i % 5 {
		case 0, 1, 2:
			check(s.Deliver(now, id, fmt.Sprint(i)))
		case 3:
			if e := s.entities[id]; e != nil && e.state == entActive {
				check(s.Passivate(id, "bye"))
			}
		case 4:
			for _, eid := range []placement.EntityID{"e0", "e1", "e2", "e3", "e4", "e5", "e6"} {
				if e := s.entities[eid]; e != nil && e.state == entPassivating {
					incarnations[eid]--
					check(s.EntityTerminated(now, eid))
					break
				}
			}
		}
	}
	if s.live != s.lru.n+countState(s, entPassivating) {
		t.Fatalf("live %d, active %d", s.live, s.lru.n)
	}
}

func countState(s *ShardCore[string], st entityState) int {
	n := 0
	for _, e := range s.entities {
		if e.state == st {
			n++
		}
	}
	return n
}

func TestEntityStateString(t *testing.T) {
	if got := entPassivating.String(); got != "passivating" {
		t.Fatal(got)
	}
	if got := entityState(99).String(); !strings.Contains(got, "99") {
		t.Fatal(got)
	}
}

// The entity record is a headline figure's part (entities-1m): it stays in the 64-byte
// size class.
func TestEntityRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(entity[*string]{}); n > 48 {
		t.Fatalf("entity record of %d bytes, want at most 48", n)
	}
}
