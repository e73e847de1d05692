package sharding

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

type (
	// passivateMe makes a recorder entity ask its shard to passivate it.
	passivateMe struct{}
	// StopNow is the recorder's stop message; it waits for gate (when set) first.
	stopNow struct{}
	// note is what a recorder entity reports: its incarnation and what it got.
	note struct {
		Entity      EntityID
		Incarnation int64
		Msg         any
	}
	started struct {
		Entity      EntityID
		Incarnation int64
	}
	stoppedNote struct {
		Entity      EntityID
		Incarnation int64
	}
	inStop struct{ Entity EntityID }
)

// stubbornStop is a stop message the recorder ignores (it only notes it) until obey is
// set.
type stubbornStop struct{}

// recorder reports its lifecycle and every message to a probe.
type recorder struct {
	report      actor.Ref
	gate        chan struct{}
	obey        *atomic.Bool
	incarnation int64
	id          EntityID
}

func (r *recorder) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		r.id = EntityIDOf(ctx)
		_ = r.report.Tell(started{Entity: r.id, Incarnation: r.incarnation})
	case actor.Stopped:
		_ = r.report.Tell(stoppedNote{Entity: r.id, Incarnation: r.incarnation})
	case actor.Stopping, actor.Restarting:
	case passivateMe:
		_ = Passivate(ctx, stopNow{})
	case stopNow:
		_ = r.report.Tell(inStop{Entity: r.id})
		if r.gate != nil {
			<-r.gate
		}
		_ = ctx.Stop(ctx.Self())
	case stubbornStop:
		_ = r.report.Tell(note{Entity: r.id, Incarnation: r.incarnation, Msg: "ignored"})
		if r.obey != nil && r.obey.Load() {
			_ = ctx.Stop(ctx.Self())
		}
	case actor.PoisonPill:
	default:
		_ = r.report.Tell(note{Entity: r.id, Incarnation: r.incarnation, Msg: m})
	}
}

func recorderProps(report actor.Ref, gate chan struct{}) *actor.Props {
	return stubbornRecorderProps(report, gate, nil)
}

// stubbornRecorderProps are recorders that ignore stubbornStop until obey is set.
func stubbornRecorderProps(report actor.Ref, gate chan struct{}, obey *atomic.Bool) *actor.Props {
	var n atomic.Int64
	return actor.PropsOf(func() actor.Actor {
		return &recorder{report: report, gate: gate, obey: obey, incarnation: n.Add(1)}
	})
}

// Messages sent while an entity passivates reach its next incarnation, in order.
func TestPassivateKeepsMessagesForTheNextIncarnation(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the system's shutdown, which waits for the entity
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Rec", EntityConfig{Entity: recorderProps(probe.Ref(), gate)})
	if err != nil {
		t.Fatal(err)
	}
	send := func(m any) { _ = region.Tell(Envelope{EntityID: "a", Message: m}) }
	send("m0")
	probe.ExpectMsg(started{Entity: "a", Incarnation: 1})
	probe.ExpectMsg(note{Entity: "a", Incarnation: 1, Msg: "m0"})
	send(passivateMe{})
	probe.ExpectMsg(inStop{Entity: "a"})
	// The entity now waits in its stop message; these go to the shard's buffer.
	for _, m := range []string{"m1", "m2", "m3"} {
		send(m)
	}
	probe.ExpectNoMsg(100 * time.Millisecond)
	release()
	probe.ExpectMsg(stoppedNote{Entity: "a", Incarnation: 1})
	probe.ExpectMsg(started{Entity: "a", Incarnation: 2})
	for _, m := range []string{"m1", "m2", "m3"} {
		probe.ExpectMsg(note{Entity: "a", Incarnation: 2, Msg: m})
	}
}

// Idle entities are passivated after the idle timeout, and start again at the next
// message.
func TestIdlePassivation(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Rec", EntityConfig{
		Entity:      recorderProps(probe.Ref(), nil),
		Passivation: Passivation{IdleTimeout: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = region.Tell(Envelope{EntityID: "a", Message: "x"})
	probe.ExpectMsg(started{Entity: "a", Incarnation: 1})
	probe.ExpectMsg(note{Entity: "a", Incarnation: 1, Msg: "x"})
	probe.ExpectMsg(stoppedNote{Entity: "a", Incarnation: 1}, 2*time.Second)
	_ = region.Tell(Envelope{EntityID: "a", Message: "y"})
	probe.ExpectMsg(started{Entity: "a", Incarnation: 2})
	probe.ExpectMsg(note{Entity: "a", Incarnation: 2, Msg: "y"})
}

// Beyond the active-entity limit the least recently used entity is passivated.
func TestActiveEntityLimit(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	s, err := Start(sys, Config{})
	if err != nil {
		t.Fatal(err)
	}
	region, err := s.Start("Rec", EntityConfig{
		Entity:      recorderProps(probe.Ref(), nil),
		Extractor:   ExtractorFuncs{Shard: func(EntityID) ShardID { return "one" }},
		Passivation: Passivation{ActiveEntityLimit: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []EntityID{"a", "b", "a", "c"} {
		_ = region.Tell(Envelope{EntityID: id, Message: "x"})
	}
	// Three starts, four messages, one stop, in an order that depends on scheduling.
	got := probe.ReceiveN(8, 3*time.Second)
	var stops []EntityID
	for _, m := range got {
		if s, ok := m.(stoppedNote); ok {
			stops = append(stops, s.Entity)
		}
	}
	probe.ExpectNoMsg(100 * time.Millisecond)
	if len(stops) != 1 || stops[0] != "b" {
		t.Fatalf("stops %v, want b (the least recently used) only; all: %v", stops, got)
	}
}
