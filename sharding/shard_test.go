package sharding

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func newTestShard(t *testing.T, cfg shardSettings[string]) *shardCore[string] {
	t.Helper()
	if cfg.stopMessage == "" {
		cfg.stopMessage = "STOP"
	}
	s := newShardCore[string]("s1", cfg)
	d := s.start(t0)
	if !cfg.rememberEntities && !d.ready {
		t.Fatal("shard without remember-entities not ready at start")
	}
	return s
}

// acts renders the actions of d as "spawn a", "a<-m", "stop a:STOP", "kill a".
func acts(d shardDecisions[string]) []string {
	var out []string
	for _, a := range d.actions {
		switch a.kind {
		case shardSpawn:
			out = append(out, "spawn "+string(a.entity))
		case shardDeliver:
			out = append(out, string(a.entity)+"<-"+a.msg)
		case shardStopEntity:
			out = append(out, "stop "+string(a.entity)+":"+a.msg)
		case shardKill:
			out = append(out, "kill "+string(a.entity))
		}
	}
	return out
}

func wantActs(t *testing.T, what string, d shardDecisions[string], want ...string) {
	t.Helper()
	if got := acts(d); !slices.Equal(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

func TestShardDeliversAndStartsEntities(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{})
	wantActs(t, "first message", s.deliver(t0, "a", "m1"), "spawn a", "a<-m1")
	wantActs(t, "second message", s.deliver(t0, "a", "m2"), "a<-m2")
	d := s.deliver(t0, "", "x")
	if len(d.dropped) != 1 || !errors.Is(d.dropped[0].err, errNoShardID) {
		t.Fatalf("empty entity id: %+v", d)
	}
	// An entity that stops on its own is forgotten and starts again on demand.
	wantActs(t, "stopped", s.entityTerminated(t0, "a"))
	wantActs(t, "restart on demand", s.deliver(t0, "a", "m3"), "spawn a", "a<-m3")
	if d := s.entityTerminated(t0, "zz"); len(d.problems) != 1 || !errors.Is(d.problems[0], errEntityState) {
		t.Fatalf("unknown entity terminated: %+v", d)
	}
}

func TestShardPassivation(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{})
	s.deliver(t0, "a", "m1")
	wantActs(t, "passivate", s.passivate("a", "bye"), "stop a:bye")
	wantActs(t, "passivate again", s.passivate("a", "bye"))
	wantActs(t, "held 1", s.deliver(t0, "a", "m2"))
	wantActs(t, "held 2", s.deliver(t0, "a", "m3"))
	wantActs(t, "next incarnation", s.entityTerminated(t0, "a"), "spawn a", "a<-m2", "a<-m3")
	if s.buffered != 0 {
		t.Fatalf("buffered %d", s.buffered)
	}
	// Passivation without waiting messages ends the entity.
	s.passivate("a", "bye")
	wantActs(t, "gone", s.entityTerminated(t0, "a"))
	if _, ok := s.entities["a"]; ok {
		t.Fatal("passivated entity kept")
	}
	if d := s.passivate("nobody", "bye"); len(d.problems) != 1 || !errors.Is(d.problems[0], errEntityState) {
		t.Fatalf("passivate of an unknown entity: %+v", d)
	}
	// StartEntity while passivating starts it again even without messages.
	s.deliver(t0, "b", "x")
	s.passivate("b", "bye")
	s.startEntity(t0, "b")
	wantActs(t, "restart requested", s.entityTerminated(t0, "b"), "spawn b")
}

func TestShardBufferLimit(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{bufferSize: 2})
	s.deliver(t0, "a", "1")
	s.deliver(t0, "b", "1")
	s.passivate("a", "bye")
	s.passivate("b", "bye")
	s.deliver(t0, "a", "2")
	s.deliver(t0, "b", "2")
	d := s.deliver(t0, "a", "3")
	if len(d.dropped) != 1 || d.dropped[0].msg != "3" || !errors.Is(d.dropped[0].err, ErrBufferFull) {
		t.Fatalf("overflow: %+v", d)
	}
	// Direct deliveries are not limited.
	wantActs(t, "direct", s.deliver(t0, "c", "1"), "spawn c", "c<-1")
}

func TestShardRememberEntitiesStart(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{rememberEntities: true})
	if d := s.deliver(t0, "x", "early"); len(d.actions) != 0 {
		t.Fatal("delivered before the remembered entities loaded")
	}
	d := s.entitiesLoaded(t0, []EntityID{"b", "a", "b"})
	if !d.ready {
		t.Fatal("not ready after loading")
	}
	wantActs(t, "loaded", d, "spawn a", "spawn b")
	if d.store == nil || !slices.Equal(d.store.started, []EntityID{"x"}) {
		t.Fatalf("early message to a new entity: store %+v", d.store)
	}
	wantActs(t, "x held", s.deliver(t0, "x", "m2"))
	d = s.deliver(t0, "y", "m1")
	if d.store != nil || len(d.actions) != 0 {
		t.Fatalf("second write while one is in flight: %+v", d)
	}
	d = s.stored(t0)
	wantActs(t, "x stored", d, "spawn x", "x<-early", "x<-m2")
	if d.store == nil || !slices.Equal(d.store.started, []EntityID{"y"}) {
		t.Fatalf("next batch %+v", d.store)
	}
	wantActs(t, "y stored", s.stored(t0), "spawn y", "y<-m1")

	// A failed write is asked for again.
	s.deliver(t0, "z", "m")
	d = s.storeFailed(errors.New("disk"))
	if d.store == nil || !slices.Equal(d.store.started, []EntityID{"z"}) || !errors.Is(d.problems[0], errRememberStore) {
		t.Fatalf("retry: %+v", d)
	}
	wantActs(t, "z", s.stored(t0), "spawn z", "z<-m")
}

func TestShardRememberEntitiesPassivationIsRecorded(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{rememberEntities: true})
	s.entitiesLoaded(t0, []EntityID{"a"})
	s.passivate("a", "bye")
	d := s.entityTerminated(t0, "a")
	if d.store == nil || !slices.Equal(d.store.stopped, []EntityID{"a"}) {
		t.Fatalf("stop not recorded: %+v", d.store)
	}
	wantActs(t, "held while the stop is stored", s.deliver(t0, "a", "m1"))
	d = s.stored(t0)
	if d.store == nil || !slices.Equal(d.store.started, []EntityID{"a"}) {
		t.Fatalf("restart not recorded: %+v", d.store)
	}
	wantActs(t, "restarted", s.stored(t0), "spawn a", "a<-m1")

	// Without waiting messages the entity is forgotten.
	s.passivate("a", "bye")
	s.entityTerminated(t0, "a")
	s.stored(t0)
	if _, ok := s.entities["a"]; ok {
		t.Fatal("passivated remembered entity kept")
	}
}

func TestShardRememberedEntityRestartsAfterBackoff(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{rememberEntities: true, entityRestartBackoff: 4 * time.Second})
	s.entitiesLoaded(t0, []EntityID{"a", "b"})
	d := s.entityTerminated(t0, "a")
	key := timerKey{kind: timerEntityRestart, entity: "a"}
	if after, ok := findTimer(d.timers, key); !ok || after != 4*time.Second || len(d.actions) != 0 {
		t.Fatalf("no backoff: %+v", d)
	}
	wantActs(t, "after the backoff", s.timer(at(4), key), "spawn a")

	// A message does not wait for the backoff.
	s.entityTerminated(t0, "b")
	d = s.deliver(at(1), "b", "m")
	wantActs(t, "message", d, "spawn b", "b<-m")
	if len(d.timers) != 1 || !d.timers[0].cancel {
		t.Fatalf("restart timer not cancelled: %+v", d.timers)
	}
	wantActs(t, "stale fire", s.timer(at(4), timerKey{kind: timerEntityRestart, entity: "b"}))
}

func TestShardHandOff(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{})
	s.deliver(at(0), "a", "a1")
	s.deliver(at(0), "b", "b1")
	s.deliver(at(0), "c", "c1")
	s.passivate("c", "bye")
	s.deliver(at(1), "c", "c2") // held for c's next incarnation
	d := s.handOff(at(2))
	wantActs(t, "hand-off", d, "stop a:STOP", "stop b:STOP")
	if after, ok := findTimer(d.timers, timerKey{kind: timerForceStop}); !ok || after != 55*time.Second {
		t.Fatalf("force-stop timer %v", after)
	}
	wantActs(t, "during hand-off", s.deliver(at(3), "b", "b2"))
	wantActs(t, "new entity during hand-off", s.deliver(at(3), "d", "d1"))
	wantActs(t, "c stops", s.entityTerminated(at(4), "c"))
	s.entityTerminated(at(4), "a")
	if d = s.deliver(at(5), "a", "a2"); len(d.actions) != 0 {
		t.Fatal("entity restarted during hand-off")
	}
	d = s.entityTerminated(at(6), "b")
	if !d.stopped || !slices.Equal(d.leftovers, []string{"c2", "b2", "d1", "a2"}) {
		t.Fatalf("leftovers %q (stopped %v), want in arrival order", d.leftovers, d.stopped)
	}
	if d = s.deliver(at(7), "a", "late"); len(d.dropped) != 1 || !errors.Is(d.dropped[0].err, errStoppedLoss) {
		t.Fatalf("message after the shard stopped: %+v", d)
	}
}

func TestShardHandOffForceStop(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{handOffTimeout: 3 * time.Second})
	s.deliver(t0, "a", "1")
	s.deliver(t0, "b", "1")
	d := s.handOff(t0)
	key := timerKey{kind: timerForceStop}
	if after, _ := findTimer(d.timers, key); after != time.Second {
		t.Fatalf("force stop after %v, want 1s", after)
	}
	s.entityTerminated(t0, "a")
	s.deliver(t0, "b", "held")
	d = s.timer(at(1), key)
	wantActs(t, "force", d, "kill b")
	if !d.stopped || !slices.Equal(d.leftovers, []string{"held"}) || !errors.Is(d.problems[0], errForcedStop) {
		t.Fatalf("after force stop: %+v", d)
	}
	if d = s.entityTerminated(at(2), "b"); len(d.actions)+len(d.problems) != 0 {
		t.Fatalf("late termination: %+v", d)
	}

	// Nothing running: done at once.
	e := newTestShard(t, shardSettings[string]{})
	if d = e.handOff(t0); !d.stopped || len(d.leftovers) != 0 {
		t.Fatalf("empty shard: %+v", d)
	}
	// Still loading (remember-entities): done at once, with what came meanwhile.
	l := newTestShard(t, shardSettings[string]{rememberEntities: true})
	l.deliver(t0, "a", "early")
	if d = l.handOff(t0); !d.stopped || !slices.Equal(d.leftovers, []string{"early"}) {
		t.Fatalf("loading shard: %+v", d)
	}
	if d = l.entitiesLoaded(t0, []EntityID{"a"}); len(d.actions)+len(d.problems) != 0 || d.ready {
		t.Fatalf("IDs loaded after the hand-off: %+v", d)
	}
}

func TestShardHandOffWithRememberEntities(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{rememberEntities: true})
	s.entitiesLoaded(t0, []EntityID{"a"})
	s.deliver(t0, "n", "n1") // start being recorded
	d := s.handOff(t0)
	wantActs(t, "hand-off", d, "stop a:STOP")
	d = s.entityTerminated(t0, "a")
	if d.store != nil {
		t.Fatal("hand-off stop recorded as a passivation")
	}
	if !d.stopped || !slices.Equal(d.leftovers, []string{"n1"}) {
		t.Fatalf("leftovers %+v", d)
	}
	if d = s.stored(t0); len(d.actions) != 0 {
		t.Fatal("late store confirmation started an entity")
	}
}

func TestShardIdlePassivation(t *testing.T) {
	s := newShardCore[string]("s1", shardSettings[string]{idleTimeout: 10 * time.Second, stopMessage: "STOP"})
	d := s.start(at(0))
	key := timerKey{kind: timerIdle}
	if after, ok := findTimer(d.timers, key); !ok || after != 5*time.Second {
		t.Fatalf("idle tick %v", after)
	}
	s.deliver(at(0), "a", "1")
	s.deliver(at(3), "b", "1")
	s.deliver(at(6), "c", "1")
	s.deliver(at(7), "a", "2") // a used again
	wantActs(t, "tick at 10", s.timer(at(10), key))
	wantActs(t, "tick at 13", s.timer(at(13), key), "stop b:STOP")
	wantActs(t, "tick at 17", s.timer(at(17), key), "stop c:STOP", "stop a:STOP")

	r := newShardCore[string]("s1", shardSettings[string]{idleTimeout: 10 * time.Second, rememberEntities: true})
	if _, ok := findTimer(r.start(t0).timers, key); ok {
		t.Fatal("idle passivation with remember-entities")
	}
}

func TestShardActiveLimit(t *testing.T) {
	s := newTestShard(t, shardSettings[string]{activeLimit: 2})
	s.deliver(at(0), "a", "1")
	s.deliver(at(1), "b", "1")
	wantActs(t, "third entity", s.deliver(at(2), "c", "1"), "spawn c", "stop a:STOP", "c<-1")
	s.deliver(at(3), "b", "2")
	wantActs(t, "fourth", s.deliver(at(4), "d", "1"), "spawn d", "stop c:STOP", "d<-1")
	wantActs(t, "lower limit", s.setActiveLimit(1), "stop b:STOP")
	wantActs(t, "no limit", s.setActiveLimit(0))
	// A message for a passivating entity waits, it is not lost.
	wantActs(t, "to passivating", s.deliver(at(5), "a", "2"))
	wantActs(t, "a back", s.entityTerminated(at(6), "a"), "spawn a", "a<-2")

	r := newTestShard(t, shardSettings[string]{activeLimit: 1, rememberEntities: true})
	r.entitiesLoaded(t0, []EntityID{"a", "b", "c"})
	if r.live != 3 {
		t.Fatal("limit applied with remember-entities")
	}
}

func TestShardSeveralIncarnations(t *testing.T) {
	// At most one incarnation per entity, whatever the order of inputs.
	s := newTestShard(t, shardSettings[string]{activeLimit: 3})
	incarnations := map[EntityID]int{}
	check := func(d shardDecisions[string]) {
		for _, a := range d.actions {
			switch a.kind {
			case shardSpawn:
				incarnations[a.entity]++
				if incarnations[a.entity] > 1 {
					t.Fatalf("second incarnation of %q", a.entity)
				}
			case shardDeliver:
				if incarnations[a.entity] != 1 {
					t.Fatalf("delivery to %q without an incarnation", a.entity)
				}
			}
		}
	}
	for i := range 200 {
		id := EntityID(fmt.Sprintf("e%d", i%7))
		now := at(i)
		switch i % 5 {
		case 0, 1, 2:
			check(s.deliver(now, id, fmt.Sprint(i)))
		case 3:
			if e := s.entities[id]; e != nil && e.state == entActive {
				check(s.passivate(id, "bye"))
			}
		case 4:
			for _, eid := range []EntityID{"e0", "e1", "e2", "e3", "e4", "e5", "e6"} {
				if e := s.entities[eid]; e != nil && e.state == entPassivating {
					incarnations[eid]--
					check(s.entityTerminated(now, eid))
					break
				}
			}
		}
	}
	if s.live != s.lru.n+countState(s, entPassivating) {
		t.Fatalf("live %d, active %d", s.live, s.lru.n)
	}
}

func countState(s *shardCore[string], st entityState) int {
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
	if n := unsafe.Sizeof(entity[*delivery]{}); n > 48 {
		t.Fatalf("entity record of %d bytes, want at most 48", n)
	}
}
