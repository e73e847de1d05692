package actor_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/supervision"
	"github.com/troupe-go/troupe/testkit"
)

// flaky reports its start time and fails on "fail".
func flakyProps(probe *testkit.Probe, start time.Time) *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message() {
		case actor.Started{}:
			_ = probe.Ref().Tell(time.Since(start))
		case "fail":
			panic("fail")
		case "stop":
			ctx.Stop(ctx.Self())
		case "ping":
			ctx.Respond("pong")
		}
	})
}

// A backoff with min 5s and max 7 days waits 20s before restart number 2 (no jitter).
func TestBackoffOnFailureDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		start := time.Now()
		props, err := actor.BackoffSupervisorProps(actor.BackoffOptions{
			Child:     flakyProps(probe, start),
			ChildName: "flaky",
			Backoff:   supervision.Backoff{Min: 5 * time.Second, Max: 7 * 24 * time.Hour},
		})
		if err != nil {
			t.Fatal(err)
		}
		sup := spawn(t, sys, props, "sup")
		probe.ExpectMsg(time.Duration(0))
		want := time.Duration(0)
		for i, delay := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second} {
			_ = sup.Tell("fail")
			want += delay
			got := testkit.ExpectMsgType[time.Duration](probe, time.Minute)
			if got != want {
				t.Fatalf("restart %d at %v, want %v", i, got, want)
			}
		}
		// Messages are forwarded with their sender.
		probe.Send(sup, "ping")
		probe.ExpectMsg("pong")
		// Running longer than ResetAfter (default Min) resets the count.
		time.Sleep(6 * time.Second)
		n, err := actor.Ask[actor.RestartCount](t.Context(), sup, actor.GetRestartCount{})
		if err != nil || n.Count != 0 {
			t.Fatalf("restart count after reset: %v %v", n, err)
		}
		// A child that stops by itself (not a failure) ends the supervisor.
		probe.Watch(sup)
		_ = sup.Tell("stop")
		probe.ExpectTerminated(sup)
	})
}

func TestBackoffOnStopRestartsStoppedChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		start := time.Now()
		props, err := actor.BackoffSupervisorProps(actor.BackoffOptions{
			Child:            flakyProps(probe, start),
			ChildName:        "c",
			Mode:             actor.BackoffOnStop,
			Backoff:          supervision.Backoff{Min: time.Second, Max: 10 * time.Second, MaxRetries: 2},
			FinalStopMessage: func(m any) bool { return m == "final" },
		})
		if err != nil {
			t.Fatal(err)
		}
		sup := spawn(t, sys, props, "sup")
		probe.ExpectMsg(time.Duration(0))
		_ = sup.Tell("stop")
		probe.ExpectMsg(time.Second)
		// In on-stop mode a failure restarts at once (ordinary restart).
		_ = sup.Tell("fail")
		probe.ExpectMsg(time.Second)
		child, err := actor.Ask[actor.CurrentChild](t.Context(), sup, actor.GetCurrentChild{})
		if err != nil || child.Ref.Path() != "/user/sup/c" {
			t.Fatalf("current child: %v %v", child, err)
		}
		// The final stop message is forwarded and ends supervision.
		probe.Watch(sup)
		_ = sup.Tell("final")
		_ = sup.Tell("stop")
		probe.ExpectTerminated(sup)
	})
}

func TestBackoffOptionsValidate(t *testing.T) {
	child := actor.PropsFunc(func(actor.Context) {})
	for name, o := range map[string]actor.BackoffOptions{
		"no child":   {ChildName: "c", Backoff: supervision.Backoff{Min: 1, Max: 2}},
		"no name":    {Child: child, Backoff: supervision.Backoff{Min: 1, Max: 2}},
		"bad delays": {Child: child, ChildName: "c", Backoff: supervision.Backoff{Min: 2, Max: 1}},
		"bad mode":   {Child: child, ChildName: "c", Mode: 9, Backoff: supervision.Backoff{Min: 1, Max: 2}},
	} {
		if _, err := actor.BackoffSupervisorProps(o); !errors.Is(err, actor.ErrInvalidProps) && !errors.Is(err, actor.ErrInvalidName) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
