package actor_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func TestWatchDeliversTerminated(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	target := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "target")
	probe.Watch(target)
	_ = target.Tell(actor.PoisonPill{})
	term := probe.ExpectTerminated(target)
	if term.AddressTerminated {
		t.Fatal("local stop reported as address terminated")
	}
}

// Watching an actor that is already dead yields Terminated at once.
func TestWatchDeadActorYieldsTerminatedAtOnce(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	target := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "target")
	probe.Watch(target)
	sys.Stop(target)
	probe.ExpectTerminated(target)

	late := testkit.NewProbe(t, sys)
	late.Watch(target)
	late.ExpectTerminated(target, 500*time.Millisecond)

	dl := testkit.NewProbe(t, sys)
	dl.Watch(sys.DeadLetters())
	dl.ExpectTerminated(sys.DeadLetters(), 500*time.Millisecond)
}

func TestUnwatchSuppressesTerminated(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	target := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "target")
	probe.Watch(target)
	probe.Unwatch(target)
	other := testkit.NewProbe(t, sys)
	other.Watch(target)
	sys.Stop(target)
	other.ExpectTerminated(target)
	probe.ExpectNoMsg(50 * time.Millisecond)
}

func TestWatchFromActorAndChildTermination(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	parent := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			kid, _ := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "kid")
			ctx.Watch(kid)
			ctx.Stop(kid)
		case actor.Terminated:
			_ = probe.Ref().Tell(m.Ref.Path())
			if len(ctx.Children()) != 0 {
				_ = probe.Ref().Tell("child still listed")
			}
		}
	}), "parent")
	probe.ExpectMsg("/user/parent/kid")
	probe.ExpectNoMsg(20 * time.Millisecond)
	_ = parent
}

// The temporary Ref of an Ask is an ordinary Ref: it can be watched, and it terminates
// when the future completes.
func TestWatchAskFuture(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	var asker actor.Ref
	watcher := spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case string:
			asker = ctx.Sender()
			ctx.Watch(asker)
			ctx.Respond("watching")
		case actor.Terminated:
			_ = probe.Ref().Tell(m.Ref == asker)
		}
	}), "watcher")
	if r, err := watcher.Ask(t.Context(), "hello").Result(t.Context()); err != nil || r != "watching" {
		t.Fatalf("ask: %v %v", r, err)
	}
	probe.ExpectMsg(true)
}

// A parent's watch of its child (kept as a flag, not in the child's extras) ends with
// Unwatch, and does not take the place of other watchers: both the parent and a probe
// that watch the child hear of its end, once each; a parent that unwatched hears
// nothing.
func TestParentWatchAndUnwatchOfChild(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	other := testkit.NewProbe(t, sys)
	spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			watched, _ := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "watched")
			unwatched, _ := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "unwatched")
			ctx.Watch(watched)
			ctx.Watch(watched) // twice: still one Terminated
			ctx.Watch(unwatched)
			ctx.Unwatch(unwatched)
			_ = probe.Ref().Tell([]actor.Ref{watched, unwatched})
		case actor.Terminated:
			_ = probe.Ref().Tell(m.Ref.Path())
		}
	}), "parent")
	kids := testkit.ExpectMsgType[[]actor.Ref](probe)
	other.Watch(kids[0])
	other.Watch(kids[1])
	_ = sys.Stop(kids[1])
	other.ExpectTerminated(kids[1])
	_ = sys.Stop(kids[0])
	other.ExpectTerminated(kids[0])
	probe.ExpectMsg("/user/parent/watched")
	probe.ExpectNoMsg(50 * time.Millisecond)
}

// A parent's watch of its child lives in the child's state, not in a table of the
// parent's: these are the races that table used to settle. In each case the child dies
// while the parent is busy, so its death notice is on its way when the parent calls
// Watch or Unwatch again; the parent then sends itself two markers, and any Terminated
// the notice produced comes between them.
func TestParentWatchWhileTheChildsDeathIsOnItsWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(ctx actor.Context, kid actor.Ref) // once the child is dead
		want  int                                    // Terminated messages
	}{
		{"unwatch", func(ctx actor.Context, kid actor.Ref) { ctx.Unwatch(kid) }, 0},
		{"watch again", func(ctx actor.Context, kid actor.Ref) { ctx.Watch(kid) }, 1},
		{"unwatch and watch again", func(ctx actor.Context, kid actor.Ref) { ctx.Unwatch(kid); ctx.Watch(kid) }, 1},
		{"nothing", func(actor.Context, actor.Ref) {}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := testkit.NewSystem(t)
			probe := testkit.NewProbe(t, sys)
			other := testkit.NewProbe(t, sys)
			spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
				switch m := ctx.Message().(type) {
				case actor.Started:
					kid, _ := ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "kid")
					other.Watch(kid)
					ctx.Watch(kid)
					_ = ctx.Stop(kid)
					other.ExpectTerminated(kid) // the parent's notice is queued by now
					tc.after(ctx, kid)
					_ = ctx.Self().Tell("m1")
				case string:
					if m == "m1" {
						_ = ctx.Self().Tell("m2")
						return
					}
					_ = probe.Ref().Tell(m)
				case actor.Terminated:
					_ = probe.Ref().Tell("terminated")
				}
			}), "parent")
			for range tc.want {
				probe.ExpectMsg("terminated")
			}
			probe.ExpectMsg("m2")
			probe.ExpectNoMsg(50 * time.Millisecond)
		})
	}
}

// A parent that unwatches its child after the child's Terminated was queued (the
// parent took the death notice while it was busy) does not receive it; watched again,
// the dead child answers the new Watch with one Terminated, after what the parent
// sent itself meanwhile: the cancelled Terminated is never delivered in its place.
func TestParentUnwatchOfAQueuedTerminated(t *testing.T) {
	for _, rewatch := range []bool{false, true} {
		sys := testkit.NewSystem(t)
		probe := testkit.NewProbe(t, sys)
		other := testkit.NewProbe(t, sys)
		var kid actor.Ref
		spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case actor.Started:
				kid, _ = ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "kid")
				other.Watch(kid)
				ctx.Watch(kid)
				_ = ctx.Stop(kid)
				other.ExpectTerminated(kid)
				// The death notice waits in the system lane; it is taken before m1,
				// and its Terminated queued behind m1.
				_ = ctx.Self().Tell("m1")
			case string:
				switch m {
				case "m1":
					ctx.Unwatch(kid)
					if rewatch {
						ctx.Watch(kid)
						// Once the dead child has answered another watcher that asked
						// after this actor, its answer to this Watch waits in the
						// system lane too: it is taken before the cancelled
						// Terminated queued behind m1, and must not revive it.
						other.Watch(kid)
						other.ExpectTerminated(kid)
					}
					_ = ctx.Self().Tell("m2")
				default:
					_ = probe.Ref().Tell(m)
				}
			case actor.Terminated:
				_ = probe.Ref().Tell("terminated")
			}
		}), "parent")
		probe.ExpectMsg("m2")
		if rewatch {
			probe.ExpectMsg("terminated") // the dead child's answer to the new Watch
		}
		probe.ExpectNoMsg(50 * time.Millisecond)
	}
}

// The same for an actor that is not a child: a Terminated that Unwatch cancelled
// stays cancelled when the actor watches the dead target again, and the target's
// answer to the new Watch comes after what the watcher sent itself meanwhile.
func TestUnwatchOfAQueuedTerminatedThenWatchAgain(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	other := testkit.NewProbe(t, sys)
	target := spawn(t, sys, actor.PropsFunc(func(actor.Context) {}), "target")
	spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			ctx.Watch(target) // the first watcher: told first when the target stops
			other.Watch(target)
			sys.Stop(target)
			other.ExpectTerminated(target)
			_ = ctx.Self().Tell("m1") // the death notice is taken before m1 is
		case string:
			switch m {
			case "m1":
				ctx.Unwatch(target)
				ctx.Watch(target)
				late := testkit.NewProbe(t, sys)
				late.Watch(target)
				late.ExpectTerminated(target) // the answer to our Watch is queued too
				_ = ctx.Self().Tell("m2")
			default:
				_ = probe.Ref().Tell(m)
			}
		case actor.Terminated:
			_ = probe.Ref().Tell("terminated")
		}
	}), "watcher")
	probe.ExpectMsg("m2")
	probe.ExpectMsg("terminated")
	probe.ExpectNoMsg(50 * time.Millisecond)
}

// Watching a child that has already stopped yields Terminated, once.
func TestParentWatchOfAStoppedChild(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	other := testkit.NewProbe(t, sys)
	var kid actor.Ref
	spawn(t, sys, actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.Started:
			kid, _ = ctx.Spawn(actor.PropsFunc(func(actor.Context) {}), "kid")
			other.Watch(kid)
			_ = ctx.Stop(kid)
			other.ExpectTerminated(kid)
			_ = ctx.Self().Tell("later") // handled after the parent has removed the child
		case string:
			ctx.Watch(kid)
			ctx.Watch(kid)
		case actor.Terminated:
			_ = probe.Ref().Tell("terminated")
		}
	}), "parent")
	probe.ExpectMsg("terminated")
	probe.ExpectNoMsg(50 * time.Millisecond)
}
