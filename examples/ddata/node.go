package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The shared values: a cart every node adds to and removes from (durable: it is
// stored on each node's disk) and a page-hit counter (in memory only).
var (
	cartKey = ddata.NewKey[*ddata.ORSet[string]]("cart-42")
	hitsKey = ddata.NewKey[*ddata.GCounter]("hits")
)

// printer writes whole lines to standard output, each starting with the node's address.
type printer struct {
	mu     sync.Mutex
	prefix string
}

func (p *printer) printf(format string, args ...any) {
	line := p.prefix + fmt.Sprintf(format, args...) + "\n"
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = os.Stdout.WriteString(line)
}

// runNode runs one node until a signal (it then leaves the cluster) or until it is
// downed. It reads commands from standard input.
func runNode(o options) error {
	if o.dir == "" {
		return errors.New("-node needs -dir, the directory of its durable store")
	}
	logger, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	sys, err := actor.New("shop", actor.Config{Logger: logger})
	if err != nil {
		return err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
	}
	sys.ShutdownOnSignal() // SIGTERM or Ctrl-C: the node leaves gracefully

	// One registry for the transport and the replicator: the replicators' messages
	// and the values cross the wire through it. ddata.Start registers what it needs.
	reg := serialization.NewRegistry()
	r, err := remote.Start(sys, remote.Config{ListenHost: o.host, ListenPort: o.remotePort, Registry: reg})
	if err != nil {
		stop()
		return err
	}
	cl, err := cluster.Start(sys, cluster.Config{
		GossipPort:        o.gossipPort,
		SeedNodes:         o.seeds,
		JoinRetryInterval: 250 * time.Millisecond,
		Timing:            cluster.TestTiming(),
		Downing:           cluster.DowningConfig{StableAfter: 2 * time.Second},
	})
	if err != nil {
		stop()
		return err
	}
	repl, err := ddata.Start(context.Background(), sys, ddata.Config{
		Cluster:                   cl,
		Registry:                  reg,
		GossipInterval:            500 * time.Millisecond, // the default is 2s; shorter for the demo
		NotifySubscribersInterval: 100 * time.Millisecond,
		DurableKeys:               []string{"cart-*"},
		DurableDir:                o.dir,
	})
	if err != nil {
		stop()
		return err
	}
	out := &printer{prefix: "[" + r.Address().HostPort() + "] "}
	out.printf("node %s uid %d gossip %s", r.Address(), r.UID(), cl.GossipAddress())

	// The printer actor: subscribes to both values and to the cluster (the actor
	// API: replies and notifications arrive as messages).
	members := -1
	watcher, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case ddata.Changed[*ddata.ORSet[string]]:
			items := m.Value.Elements()
			slices.Sort(items)
			out.printf("cart %v", items)
		case ddata.Changed[*ddata.GCounter]:
			out.printf("hits %d", m.Value.Value())
		case cluster.CurrentClusterState, cluster.Event:
			if n := upMembers(cl.State()); n != members {
				members = n
				out.printf("members %d", n)
			}
		}
	}), "watcher")
	if err != nil {
		stop()
		return err
	}
	_ = ddata.Subscribe(repl, cartKey, watcher)
	_ = ddata.Subscribe(repl, hitsKey, watcher)
	cl.Subscribe(watcher)

	// Commands from standard input use the blocking API.
	go func() {
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			if cmd := strings.TrimSpace(lines.Text()); cmd != "" {
				if err := command(repl, cmd); err != nil {
					out.printf("error %s: %v", cmd, err)
				} else {
					out.printf("ok %s", cmd)
				}
			}
		}
	}()

	<-sys.Terminated()
	out.printf("stopped")
	return nil
}

// command runs one command: "add ITEM", "remove ITEM" or "hit N".
func command(repl *ddata.Replicator, cmd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	self := repl.SelfUniqueAddress()
	verb, arg, _ := strings.Cut(cmd, " ")
	switch verb {
	case "add":
		// A majority write: once it returns, a majority read anywhere sees it.
		return ddata.Update(ctx, repl, cartKey, ddata.WriteMajority(3*time.Second, 0), nil,
			func(s *ddata.ORSet[string]) (*ddata.ORSet[string], error) { s.Add(self, arg); return s, nil })
	case "remove":
		return ddata.Update(ctx, repl, cartKey, ddata.WriteMajority(3*time.Second, 0), nil,
			func(s *ddata.ORSet[string]) (*ddata.ORSet[string], error) { s.Remove(arg); return s, nil })
	case "hit":
		n, err := strconv.ParseUint(arg, 10, 32)
		if err != nil {
			return err
		}
		// A local write: cheap, spread by deltas within a fraction of a second.
		return ddata.Update(ctx, repl, hitsKey, ddata.WriteLocal(), nil,
			func(c *ddata.GCounter) (*ddata.GCounter, error) { c.Increment(self, n); return c, nil })
	}
	return fmt.Errorf("unknown command (add ITEM, remove ITEM, hit N)")
}

// upMembers counts the Up members.
func upMembers(st cluster.CurrentClusterState) int {
	n := 0
	for _, m := range st.Members {
		if m.Status == cluster.Up {
			n++
		}
	}
	return n
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
