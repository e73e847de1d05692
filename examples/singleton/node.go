package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/singleton"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The singleton's messages. They go through proxies, so they cross the wire: every
// node registers them.
type (
	// GetCount asks the singleton how many ticks it has counted.
	GetCount struct{}
	// Count answers GetCount: the ticks counted by the instance on node On.
	Count struct {
		N  int
		On string
	}
)

// tick is the counter's own timer message; it never leaves the node.
type tick struct{}

// printer writes whole lines to standard output, each starting with the time (the
// demo prints the lines of several processes as it reads them, not always in the
// order they were written) and the node's address.
type printer struct {
	mu     sync.Mutex
	prefix string
}

func (p *printer) printf(format string, args ...any) {
	line := time.Now().Format(stamp) + " " + p.prefix + fmt.Sprintf(format, args...) + "\n"
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = os.Stdout.WriteString(line)
}

// counter is the singleton: it counts ticks, from zero on every start (a singleton
// that must keep its state across moves persists it).
type counter struct {
	out  *printer
	here string
	n    int
}

func (c *counter) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case actor.Started:
		c.out.printf("singleton-started here: counting ticks from 0")
		ctx.StartPeriodicTimer("tick", tick{}, 100*time.Millisecond)
	case tick:
		c.n++
	case GetCount:
		_ = ctx.Respond(Count{N: c.n, On: c.here})
	case actor.Stopped:
		c.out.printf("singleton-stopped here after %d ticks", c.n)
	}
}

// client asks the singleton through the node's proxy every few hundred milliseconds
// and prints where it answered from whenever that changes.
type client struct {
	out   *printer
	proxy actor.Ref
	last  string
}

type ask struct{}

func (c *client) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		ctx.StartPeriodicTimer("ask", ask{}, 250*time.Millisecond)
	case ask:
		// The proxy keeps the sender: the singleton's Respond comes back here.
		if err := ctx.Send(c.proxy, GetCount{}); err != nil {
			c.out.printf("proxy refused a message: %v", err)
		}
	case Count:
		if m.On != c.last {
			c.last = m.On
			c.out.printf("proxy-reached the singleton on %s (count %d)", m.On, m.N)
		}
	}
}

// runNode runs one node until a signal (it then hands the singleton over and leaves
// gracefully) or until it is downed.
func runNode(o options) error {
	logger, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	sys, err := actor.New("singleton-demo", actor.Config{Logger: logger})
	if err != nil {
		return err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
	}
	// SIGTERM or Ctrl-C runs the coordinated shutdown: the singleton is handed over
	// and the node leaves. Listening starts before the first line: a signal after it
	// means a graceful leave.
	sys.ShutdownOnSignal()

	reg := serialization.NewRegistry()
	if err := serialization.Register[GetCount](reg, "demo.GetCount"); err != nil {
		return err
	}
	if err := serialization.Register[Count](reg, "demo.Count"); err != nil {
		return err
	}
	r, err := remote.Start(sys, remote.Config{ListenHost: "127.0.0.1", ListenPort: o.remotePort, Registry: reg})
	if err != nil {
		stop()
		return err
	}
	var seeds []string
	if o.seed != "" {
		seeds = []string{o.seed}
	}
	cl, err := cluster.Start(sys, cluster.Config{
		GossipPort:        o.gossipPort,
		SeedNodes:         seeds,
		JoinRetryInterval: 100 * time.Millisecond,
		Timing:            cluster.TestTiming(), // failure detection in about a second
		Downing:           cluster.DowningConfig{StableAfter: o.stableAfter},
	})
	if err != nil {
		stop()
		return err
	}
	here := r.Address().HostPort()
	out := &printer{prefix: "[" + here + "] "}
	out.printf("node %s gossip %s", r.Address(), cl.GossipAddress())

	// What this node sees of the cluster, briefly.
	sub, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case cluster.MemberUp:
			out.printf("cluster: %s is Up", hostPort(m.Member))
		case cluster.UnreachableMember:
			out.printf("cluster: %s is unreachable", hostPort(m.Member))
		case cluster.MemberDowned:
			out.printf("cluster: %s is downed", hostPort(m.Member))
		case cluster.MemberRemoved:
			out.printf("cluster: %s is removed (it was %s)", hostPort(m.Member), m.PreviousStatus)
		case cluster.RemovalMarginPassed:
			if m.PreviousStatus == cluster.Down {
				out.printf("cluster: the down-removal margin of %s has passed", hostPort(m.Member))
			}
		}
	}), "membership")
	if err != nil {
		stop()
		return err
	}
	if err := cl.Subscribe(sub); err != nil {
		stop()
		return err
	}

	// The same manager on every node: the oldest node runs the counter.
	if _, err := singleton.Start(sys, singleton.Config{
		Name:  "counter",
		Props: actor.PropsOf(func() actor.Actor { return &counter{out: out, here: here} }),
	}); err != nil {
		stop()
		return err
	}
	proxy, err := singleton.Proxy(sys, singleton.ProxyConfig{Name: "counter", IdentificationInterval: 250 * time.Millisecond})
	if err != nil {
		stop()
		return err
	}
	if _, err := sys.Spawn(actor.PropsOf(func() actor.Actor { return &client{out: out, proxy: proxy} }), "client"); err != nil {
		stop()
		return err
	}

	// Say when the shutdown begins (after a signal, or after this node was downed).
	_ = sys.CoordinatedShutdown().AddTask(actor.PhaseBeforeServiceUnbind, "announce", func(context.Context) error {
		out.printf("shutting down: handing over and leaving")
		return nil
	})
	<-sys.Terminated()
	out.printf("stopped")
	return nil
}

func hostPort(m cluster.Member) string {
	if a, err := actor.ParseAddress(m.Unique.Addr); err == nil && a.HasHost() {
		return a.HostPort()
	}
	return m.Unique.Addr
}

// newLogger returns a console logger on standard error, or a no-op one for "off".
func newLogger(level string) (*zap.Logger, error) {
	if level == "off" || level == "" {
		return zap.NewNop(), nil
	}
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("-log: %w", err)
	}
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), lvl)), nil
}
