package testkit_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

func echoProps() *actor.Props {
	return actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case string:
			ctx.Respond(m)
		case int:
			for i := range m {
				ctx.Respond(i)
			}
		}
	})
}

func TestProbeExpectations(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	echo, err := sys.Spawn(echoProps(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	probe.Send(echo, "hi")
	probe.ExpectMsg("hi")
	if probe.LastSender() != echo {
		t.Fatalf("last sender %v", probe.LastSender())
	}
	probe.Reply("back")
	probe.ExpectMsg("back")

	probe.Send(echo, 3)
	if got := probe.ReceiveN(3); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("ReceiveN %v", got)
	}
	probe.Send(echo, 5)
	if got := probe.FishForMessage(func(m any) bool { return m == 3 }); got != 3 {
		t.Fatalf("fished %v", got)
	}
	probe.ExpectMsg(4)
	probe.ExpectNoMsg(20 * time.Millisecond)

	probe.Within(time.Second, func() {
		probe.Send(echo, "quick")
		if s := testkit.ExpectMsgType[string](probe); s != "quick" {
			t.Fatalf("got %q", s)
		}
	})

	other := testkit.NewProbe(t, sys)
	probe.Send(other.Ref(), "fwd")
	other.ExpectMsg("fwd")
	other.Forward(echo) // the echo answers the original sender: probe
	probe.ExpectMsg("fwd")

	probe.Watch(echo)
	_ = echo.Tell(actor.PoisonPill{})
	probe.ExpectTerminated(echo)
}

// recordingT captures the failure of an Expect instead of failing this test.
type recordingT struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.msg = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// failure runs f with a recordingT and returns the failure message.
func failure(t *testing.T, sys *actor.System, f func(p *testkit.Probe)) string {
	rt := &recordingT{TB: t}
	p := testkit.NewProbe(rt, sys)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(p)
	}()
	<-done
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.msg
}

func TestProbeFailuresSayWhatArrived(t *testing.T) {
	sys := testkit.NewSystem(t)
	// "b" is listed as queued only if it reached the probe before "a" was taken; the
	// probe's actor hands messages over asynchronously, so try a few times.
	var msg string
	for range 20 {
		msg = failure(t, sys, func(p *testkit.Probe) {
			_ = p.Ref().Tell("a")
			_ = p.Ref().Tell("b")
			p.ExpectMsg("x", 200*time.Millisecond)
		})
		if !strings.Contains(msg, `got string a`) {
			t.Fatalf("failure message %q", msg)
		}
		if strings.Contains(msg, "also queued: string b") {
			break
		}
	}
	if !strings.Contains(msg, "also queued: string b") {
		t.Fatalf("failure message %q never lists the queued message", msg)
	}
	msg = failure(t, sys, func(p *testkit.Probe) { p.ExpectMsg("x", 10*time.Millisecond) })
	if !strings.Contains(msg, "got nothing") {
		t.Fatalf("failure message %q", msg)
	}
	msg = failure(t, sys, func(p *testkit.Probe) {
		_ = p.Ref().Tell(1)
		p.ExpectNoMsg(100 * time.Millisecond)
	})
	if !strings.Contains(msg, "expected no message") {
		t.Fatalf("failure message %q", msg)
	}
	msg = failure(t, sys, func(p *testkit.Probe) {
		_ = p.Ref().Tell(1)
		_ = p.Ref().Tell(2)
		p.FishForMessage(func(m any) bool { return m == 3 }, 100*time.Millisecond)
	})
	if !strings.Contains(msg, "skipped: [int 1, int 2]") {
		t.Fatalf("failure message %q", msg)
	}
	msg = failure(t, sys, func(p *testkit.Probe) { testkit.ExpectMsgType[int](p, 10*time.Millisecond) })
	if !strings.Contains(msg, "expected a int") {
		t.Fatalf("failure message %q", msg)
	}
}

func TestDilated(t *testing.T) {
	t.Setenv(testkit.TimeFactorEnv, "3")
	if d := testkit.Dilated(time.Second); d != 3*time.Second {
		t.Fatalf("dilated %v", d)
	}
	t.Setenv(testkit.TimeFactorEnv, "nonsense")
	if d := testkit.Dilated(time.Second); d != time.Second {
		t.Fatalf("invalid factor should be ignored: %v", d)
	}
}

func TestExpectNoMsgMatchingIgnoresOtherMessages(t *testing.T) {
	sys := testkit.NewSystem(t)
	p := testkit.NewProbe(t, sys)
	_ = p.Ref().Tell("noise")
	p.ExpectNoMsgMatching(50*time.Millisecond, func(msg any) bool { return msg == "bad" })
	msg := failure(t, sys, func(p *testkit.Probe) {
		_ = p.Ref().Tell("noise")
		_ = p.Ref().Tell("bad")
		p.ExpectNoMsgMatching(time.Second, func(msg any) bool { return msg == "bad" })
	})
	if !strings.Contains(msg, "bad") {
		t.Fatalf("failure message %q", msg)
	}
}
