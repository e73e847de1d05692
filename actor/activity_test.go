package actor_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// TestActivityFollowsTheScheduler checks the load signal a sender reads: idle before a
// message, running while one is handled, backlogged once another arrives meanwhile,
// idle again after, and unknown for what is not a live local actor.
func TestActivityFollowsTheScheduler(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	release := make(chan struct{})
	ref := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case string:
			_ = probe.Ref().Tell("handling")
			<-release
		case int:
			_ = probe.Ref().Tell("second")
		}
	}), "busy")

	waitActivity(t, ref, actor.ActivityIdle)
	if err := ref.Tell("block"); err != nil {
		t.Fatal(err)
	}
	probe.ExpectMsg("handling")
	if got := ref.Activity(); got != actor.ActivityRunning {
		t.Fatalf("while handling: %v, want running", got)
	}
	if err := ref.Tell(2); err != nil {
		t.Fatal(err)
	}
	if got := ref.Activity(); got != actor.ActivityBacklogged {
		t.Fatalf("with a message waiting: %v, want backlogged", got)
	}
	close(release)
	probe.ExpectMsg("second")
	waitActivity(t, ref, actor.ActivityIdle)

	if got := (actor.Ref{}).Activity(); got != actor.ActivityUnknown {
		t.Fatalf("zero Ref: %v, want unknown", got)
	}
	probe.Watch(ref)
	if err := sys.Stop(ref); err != nil {
		t.Fatal(err)
	}
	probe.ExpectTerminated(ref)
	if got := ref.Activity(); got != actor.ActivityUnknown {
		t.Fatalf("stopped actor: %v, want unknown", got)
	}
	for a, want := range map[actor.Activity]string{
		actor.ActivityIdle: "idle", actor.ActivityRunning: "running",
		actor.ActivityBacklogged: "backlogged", actor.ActivityUnknown: "unknown", 0: "unknown",
	} {
		if a.String() != want {
			t.Errorf("%d.String() = %q, want %q", a, a.String(), want)
		}
	}
}

// waitActivity waits for ref to show want: an actor gives its goroutine up just after
// its last message, with no message to tell when, so this polls (yielding, not
// sleeping) up to the default timeout.
func waitActivity(t *testing.T, ref actor.Ref, want actor.Activity) {
	t.Helper()
	deadline := time.Now().Add(testkit.Dilated(testkit.DefaultTimeout))
	for ref.Activity() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%v: activity %v, want %v", ref, ref.Activity(), want)
		}
		runtime.Gosched()
	}
}
