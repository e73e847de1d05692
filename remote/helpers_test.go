package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap/zapcore"
)

// Messages the tests send across systems.
type ping struct {
	N       int
	ReplyTo actor.Ref
}

type pong struct{ N int }

// carry holds refs inside a message.
type carry struct {
	Refs []actor.Ref
	One  actor.Ref
}

// unshared is registered only on the sending side in some tests.
type unshared struct{ X int }

// notRegistered is never registered.
type notRegistered struct{ X int }

func registry(t testing.TB) *serialization.Registry {
	t.Helper()
	r := serialization.NewRegistry()
	for _, err := range []error{
		serialization.Register[*ping](r, "test.Ping"),
		serialization.Register[*pong](r, "test.Pong"),
		serialization.Register[*carry](r, "test.Carry"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// node is one actor system with remoting, shut down at the end of the test.
type node struct {
	sys *actor.System
	r   *remote.Remote
}

func startNode(t testing.TB, name string, reg *serialization.Registry, tweak ...func(*remote.Config)) node {
	t.Helper()
	return startNodeWith(t, name, reg, actor.Config{}, tweak...)
}

// startNodeWith is startNode with the system's configuration (its Logger is the test's).
func startNodeWith(t testing.TB, name string, reg *serialization.Registry, sysCfg actor.Config, tweak ...func(*remote.Config)) node {
	t.Helper()
	logger, stopLog := testkit.NewLogger(t, zapcore.InfoLevel)
	sysCfg.Logger = logger
	sys, err := actor.New(name, sysCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := remote.Config{Registry: reg, ReconnectBackoffMin: 10 * time.Millisecond, ReconnectBackoffMax: 200 * time.Millisecond}
	for _, f := range tweak {
		f(&cfg)
	}
	r, err := remote.Start(sys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shutdown(t, sys)
		stopLog()
	})
	return node{sys: sys, r: r}
}

func shutdown(t testing.TB, sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Errorf("shutdown %s: %v", sys.Name(), err)
	}
}

// remoteRef resolves ref (an actor of from) as seen from n.
func (n node) remoteRef(t testing.TB, ref actor.Ref) actor.Ref {
	t.Helper()
	got, err := n.sys.Resolve(ref.URI())
	if err != nil {
		t.Fatalf("resolve %s: %v", ref.URI(), err)
	}
	return got
}

// echo answers ping with pong to ReplyTo, or to the sender when ReplyTo is zero.
func echoProps() *actor.Props {
	return actor.PropsOf(func() actor.Actor {
		return actor.ReceiveFunc(func(ctx actor.Context) {
			switch m := ctx.Message().(type) {
			case *ping:
				if !m.ReplyTo.IsZero() {
					_ = m.ReplyTo.Tell(&pong{N: m.N})
					return
				}
				ctx.Respond(&pong{N: m.N})
			case *carry:
				ctx.Respond(m)
			}
		})
	})
}
