package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

func TestShutdownBoundCountsThePhasesWithTasks(t *testing.T) {
	sys, err := actor.New("bound", actor.Config{
		Logger:        zap.NewNop(),
		PhaseTimeout:  3 * time.Second,
		PhaseTimeouts: map[actor.Phase]time.Duration{actor.PhaseClusterLeave: 7 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Shutdown(context.Background())
	cs := sys.CoordinatedShutdown()
	if got := cs.Bound(); got != 3*time.Second { // the last phase stops the actors
		t.Fatalf("bound with no tasks %v, want 3s", got)
	}
	noop := func(context.Context) error { return nil }
	for _, p := range []actor.Phase{actor.PhaseClusterLeave, actor.PhaseClusterLeave, actor.PhaseServiceUnbind} {
		if err := cs.AddTask(p, "t", noop); err != nil {
			t.Fatal(err)
		}
	}
	if got := cs.Bound(); got != 13*time.Second {
		t.Fatalf("bound %v, want 13s (7s leave + 3s unbind + 3s terminate)", got)
	}
}
