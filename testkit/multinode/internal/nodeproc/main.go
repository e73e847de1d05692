// Command nodeproc is testkit/multinode's node program: one cluster node, configured
// by flags, that reports what it sees as JSON lines on standard output (the protocol is
// package nodeproto). SIGTERM or SIGINT makes it leave the cluster gracefully and exit;
// a downed node shuts its actor system down and exits.
//
// The test kit builds it (multinode.BuildNode) and runs it (multinode.StartNode, or in
// network namespaces with multinode.StartNet); it is not meant to be run by hand, for
// which examples/cluster exists.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit/multinode/internal/nodeproto"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// out writes lines to standard output, one at a time.
type out struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (o *out) write(l nodeproto.Line) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l.Time = time.Now().UnixNano()
	_ = o.enc.Encode(l) // a broken pipe means the test kit is gone
}

func main() {
	o := &out{enc: json.NewEncoder(os.Stdout)}
	if err := run(o); err != nil {
		o.write(nodeproto.Line{Kind: nodeproto.KindError, Reason: err.Error()})
		os.Exit(1)
	}
}

type options struct {
	name, host, roles, strategy, timing, logLevel string
	remotePort, gossipPort, minMembers, quorum    int
	seeds                                         []string
	stableAfter, margin                           time.Duration
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.name, "name", "cluster", "actor system name")
	flag.StringVar(&o.host, "host", "127.0.0.1", "host to listen and gossip on")
	flag.IntVar(&o.remotePort, "remote-port", 0, "remote transport port (0: a free port)")
	flag.IntVar(&o.gossipPort, "gossip-port", 0, "serf gossip port (0: a free port)")
	flag.Func("seed", "gossip address (host:port) of a seed node; repeat or separate with commas", func(s string) error {
		for _, seed := range strings.Split(s, ",") {
			if seed = strings.TrimSpace(seed); seed != "" {
				o.seeds = append(o.seeds, seed)
			}
		}
		return nil
	})
	flag.StringVar(&o.roles, "roles", "", "roles, separated by commas")
	flag.IntVar(&o.minMembers, "min-members", 0, "min-nr-of-members")
	flag.StringVar(&o.strategy, "strategy", "keep-majority", "split-brain resolver strategy")
	flag.IntVar(&o.quorum, "quorum-size", 0, "static-quorum's quorum size")
	flag.DurationVar(&o.stableAfter, "stable-after", 2*time.Second, "split-brain resolver stable-after")
	flag.DurationVar(&o.margin, "margin", 0, "down-removal margin (0: stable-after)")
	flag.StringVar(&o.timing, "timing", "test", `"test" (cluster.TestTiming) or "lan" (the defaults)`)
	flag.StringVar(&o.logLevel, "log", "warn", "log to standard error at this level: off, error, warn, info or debug")
	flag.Parse()
	return o
}

func config(o options) (cluster.Config, error) {
	strategy, err := cluster.ParseStrategy(o.strategy)
	if err != nil {
		return cluster.Config{}, err
	}
	cfg := cluster.Config{
		GossipPort:        o.gossipPort,
		SeedNodes:         o.seeds,
		JoinRetryInterval: 100 * time.Millisecond,
		MinNrOfMembers:    o.minMembers,
		Downing: cluster.DowningConfig{
			Strategy:          strategy,
			StableAfter:       o.stableAfter,
			DownRemovalMargin: o.margin,
			QuorumSize:        o.quorum,
		},
	}
	if o.roles != "" {
		cfg.Roles = strings.Split(o.roles, ",")
	}
	switch o.timing {
	case "test":
		cfg.Timing = cluster.TestTiming()
	case "lan":
	default:
		return cluster.Config{}, fmt.Errorf("unknown -timing %q", o.timing)
	}
	return cfg, nil
}

func run(o *out) error {
	opts := parseFlags()
	cfg, err := config(opts)
	if err != nil {
		return err
	}
	logger, err := newLogger(opts.logLevel)
	if err != nil {
		return err
	}
	sys, err := actor.New(opts.name, actor.Config{Logger: logger})
	if err != nil {
		return err
	}
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
	}
	// Signals are watched before the first line, so that a signal sent after it always
	// means a graceful leave.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	r, err := remote.Start(sys, remote.Config{ListenHost: opts.host, ListenPort: opts.remotePort, Registry: serialization.NewRegistry()})
	if err != nil {
		shutdown()
		return err
	}
	c, err := cluster.Start(sys, cfg)
	if err != nil {
		shutdown()
		return err
	}
	self := c.SelfUniqueAddress()
	o.write(nodeproto.Line{Kind: nodeproto.KindNode, Self: &nodeproto.Member{
		Addr: self.Addr, UID: self.UID, HostPort: r.Address().HostPort(), Status: cluster.Joining.String(),
	}, Gossip: c.GossipAddress()})

	var downed sync.Once
	reportDowned := func() { downed.Do(func() { o.write(nodeproto.Line{Kind: nodeproto.KindDowned}) }) }
	sub, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case cluster.CurrentClusterState:
			o.write(stateLine(m))
		case cluster.Event:
			if d, ok := m.(cluster.MemberDowned); ok && d.Member.Unique == self {
				reportDowned()
			}
			o.write(eventLine(m))
		}
	}), "printer")
	if err != nil {
		shutdown()
		return err
	}
	if err := c.Subscribe(sub); err != nil {
		shutdown()
		return err
	}
	c.RegisterOnMemberUp(func() { o.write(nodeproto.Line{Kind: nodeproto.KindUp}) })

	// This program leaves only on a signal: the services stopping otherwise means this
	// member was downed (its MemberDowned line may still be on its way).
	reason := nodeproto.ReasonDowned
	select {
	case <-sigs:
		signal.Stop(sigs)
		reason = nodeproto.ReasonLeft
		shutdown()
	case <-c.Stopped():
		reportDowned()
	}
	o.write(nodeproto.Line{Kind: nodeproto.KindStopped, Reason: reason})
	select {
	case <-sys.Terminated():
	case <-time.After(time.Minute):
		return errors.New("the actor system did not terminate within a minute")
	}
	o.write(nodeproto.Line{Kind: nodeproto.KindTerminated})
	return nil
}

func member(m cluster.Member) *nodeproto.Member {
	hp := m.Unique.Addr
	if a, err := actor.ParseAddress(m.Unique.Addr); err == nil && a.HasHost() {
		hp = a.HostPort()
	}
	return &nodeproto.Member{Addr: m.Unique.Addr, UID: m.Unique.UID, HostPort: hp, Status: m.Status.String(), Age: m.UpNumber}
}

func stateLine(st cluster.CurrentClusterState) nodeproto.Line {
	l := nodeproto.Line{Kind: nodeproto.KindState}
	for _, m := range st.Members {
		l.Members = append(l.Members, *member(m))
	}
	for _, m := range st.Unreachable {
		l.Unreachable = append(l.Unreachable, *member(m))
	}
	return l
}

func eventLine(ev cluster.Event) nodeproto.Line {
	l := nodeproto.Line{Kind: nodeproto.KindEvent}
	switch e := ev.(type) {
	case cluster.MemberJoined:
		l.Event, l.Member = nodeproto.EventJoined, member(e.Member)
	case cluster.MemberUp:
		l.Event, l.Member = nodeproto.EventUp, member(e.Member)
	case cluster.MemberLeft:
		l.Event, l.Member = nodeproto.EventLeaving, member(e.Member)
	case cluster.MemberExited:
		l.Event, l.Member = nodeproto.EventExiting, member(e.Member)
	case cluster.MemberDowned:
		l.Event, l.Member = nodeproto.EventDowned, member(e.Member)
	case cluster.MemberRemoved:
		l.Event, l.Member, l.Previous = nodeproto.EventRemoved, member(e.Member), e.PreviousStatus.String()
	case cluster.RemovalMarginPassed:
		l.Event, l.Member, l.Previous = nodeproto.EventMarginPassed, member(e.Member), e.PreviousStatus.String()
	case cluster.UnreachableMember:
		l.Event, l.Member = nodeproto.EventUnreachable, member(e.Member)
	case cluster.ReachableMember:
		l.Event, l.Member = nodeproto.EventReachable, member(e.Member)
	case cluster.OldestChanged:
		l.Event, l.Role = nodeproto.EventOldest, e.Role
		if e.Oldest != nil {
			l.Member = member(*e.Oldest)
		}
	default:
		l.Event = fmt.Sprintf("%T", ev)
	}
	return l
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
