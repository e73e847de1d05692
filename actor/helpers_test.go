package actor_test

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// recorder forwards every message it handles, lifecycle included, to a probe, tagged
// with its name, and runs an optional hook first.
type recorder struct {
	name  string
	probe actor.Ref
	hook  func(ctx actor.Context)
}

// event is what a recorder reports.
type event struct {
	Name string
	Msg  any
}

func (r *recorder) Receive(ctx actor.Context) {
	msg := ctx.Message()
	if _, ok := msg.(actor.Restarting); ok {
		msg = actor.Restarting{} // reasons carry stacks; tests check the type only
	}
	_ = r.probe.Tell(event{Name: r.name, Msg: msg})
	if r.hook != nil {
		r.hook(ctx)
	}
}

func recorderProps(name string, probe *testkit.Probe, hook func(ctx actor.Context)) *actor.Props {
	return actor.PropsOf(func() actor.Actor { return &recorder{name: name, probe: probe.Ref(), hook: hook} })
}

func spawn(t *testing.T, sys *actor.System, p *actor.Props, name string) actor.Ref {
	t.Helper()
	ref, err := sys.Spawn(p, name)
	if err != nil {
		t.Fatalf("spawn %q: %v", name, err)
	}
	return ref
}

type boom struct{}

func (boom) Error() string { return "boom" }
