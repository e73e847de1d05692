package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

// runNode runs one cluster node until it is stopped by a signal (it then leaves the
// cluster gracefully) or downed (the cluster then shuts its system down).
func runNode(o options) error {
	logger, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	cfg, err := clusterConfig(o)
	if err != nil {
		return err
	}
	sys, err := actor.New(o.name, actor.Config{Logger: logger})
	if err != nil {
		return err
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = sys.Shutdown(ctx)
	}
	// SIGTERM or Ctrl-C runs the coordinated shutdown: the node leaves gracefully.
	// Listening starts before anything is announced, so a signal sent right after the
	// first line always means a graceful leave.
	sys.ShutdownOnSignal()

	r, err := remote.Start(sys, remote.Config{
		ListenHost: o.host,
		ListenPort: o.remotePort,
		Registry:   serialization.NewRegistry(), // this node sends no messages of its own
	})
	if err != nil {
		stop()
		return err
	}
	cl, err := cluster.Start(sys, cfg)
	if err != nil {
		stop()
		return err
	}
	out := &printer{prefix: "[" + r.Address().HostPort() + "] "}
	out.printf("node %s uid %d gossip %s", r.Address(), r.UID(), cl.GossipAddress())

	self := cl.SelfUniqueAddress()
	var downed atomic.Bool
	sub, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case cluster.CurrentClusterState:
			out.printf("%s", describeState(m))
		case cluster.Event:
			if d, ok := m.(cluster.MemberDowned); ok && d.Member.Unique == self {
				downed.Store(true)
			}
			out.printf("%s", describeEvent(m))
		}
	}), "membership-printer")
	if err != nil {
		stop()
		return err
	}
	if err := cl.Subscribe(sub); err != nil {
		stop()
		return err
	}
	cl.RegisterOnMemberUp(func() { out.printf("this node is Up (RegisterOnMemberUp)") })

	// Say when the shutdown begins: after a signal, or after this node was downed.
	_ = sys.CoordinatedShutdown().AddTask(actor.PhaseBeforeServiceUnbind, "announce", func(context.Context) error {
		if !downed.Load() {
			out.printf("leaving the cluster")
		}
		return nil
	})
	<-sys.Terminated()
	if downed.Load() {
		out.printf("stopped: this node was downed and shut its system down")
	} else {
		out.printf("stopped")
	}
	return nil
}

// clusterConfig builds the cluster configuration from the flags.
func clusterConfig(o options) (cluster.Config, error) {
	strategy, err := cluster.ParseStrategy(o.strategy)
	if err != nil {
		return cluster.Config{}, err
	}
	cfg := cluster.Config{
		GossipPort:        o.gossipPort,
		SeedNodes:         o.seeds,
		JoinRetryInterval: 250 * time.Millisecond,
		MinNrOfMembers:    o.minMembers,
		Downing: cluster.DowningConfig{
			Strategy:    strategy,
			StableAfter: o.stableAfter,
			QuorumSize:  o.quorumSize,
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
		return cluster.Config{}, fmt.Errorf("unknown -timing %q (test or lan)", o.timing)
	}
	if o.gossipKey != "" {
		key, err := base64.StdEncoding.DecodeString(o.gossipKey)
		if err != nil {
			return cluster.Config{}, fmt.Errorf("-gossip-key: %w", err)
		}
		cfg.Keyring = [][]byte{key}
	}
	return cfg, nil
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

// short returns a member's host:port, or its whole address if that does not parse.
func short(u cluster.UniqueAddress) string {
	if a, err := actor.ParseAddress(u.Addr); err == nil && a.HasHost() {
		return a.HostPort()
	}
	return u.Addr
}

// upFor returns how long ago the member became Up, from its age (UpNumber: its clock in
// milliseconds when it became Up, or a little more when it had to be younger than a
// member it saw).
func upFor(m cluster.Member) time.Duration {
	d := time.Since(time.UnixMilli(m.UpNumber))
	if d < 0 {
		d = 0
	}
	return d.Round(100 * time.Millisecond)
}

// describeState returns the one-line form of a cluster state.
func describeState(st cluster.CurrentClusterState) string {
	var b strings.Builder
	b.WriteString("state: members")
	for _, m := range st.Members {
		fmt.Fprintf(&b, " %s=%s", short(m.Unique), m.Status)
		if m.UpNumber > 0 {
			fmt.Fprintf(&b, "(up for %s)", upFor(m))
		}
	}
	if len(st.Unreachable) > 0 {
		b.WriteString("; unreachable")
		for _, m := range st.Unreachable {
			b.WriteString(" " + short(m.Unique))
		}
	}
	if st.Oldest != nil {
		b.WriteString("; oldest " + short(st.Oldest.Unique))
	}
	return b.String()
}

// describeEvent returns the one-line form of a cluster event: its kind, then the
// member's host:port, then details.
func describeEvent(ev cluster.Event) string {
	switch e := ev.(type) {
	case cluster.MemberJoined:
		s := fmt.Sprintf("joined %s uid %d", short(e.Member.Unique), e.Member.Unique.UID)
		if len(e.Member.Roles) > 0 {
			s += " roles " + strings.Join(e.Member.Roles, ",")
		}
		return s
	case cluster.MemberUp:
		return fmt.Sprintf("up %s (up for %s)", short(e.Member.Unique), upFor(e.Member))
	case cluster.MemberLeft:
		return "leaving " + short(e.Member.Unique)
	case cluster.MemberExited:
		return "exiting " + short(e.Member.Unique)
	case cluster.MemberDowned:
		return "downed " + short(e.Member.Unique)
	case cluster.MemberRemoved:
		return fmt.Sprintf("removed %s (was %s)", short(e.Member.Unique), e.PreviousStatus)
	case cluster.RemovalMarginPassed:
		return fmt.Sprintf("margin-passed %s (was %s): its work may be taken over now", short(e.Member.Unique), e.PreviousStatus)
	case cluster.UnreachableMember:
		return "unreachable " + short(e.Member.Unique)
	case cluster.ReachableMember:
		return "reachable " + short(e.Member.Unique)
	case cluster.OldestChanged:
		who := "none"
		if e.Oldest != nil {
			who = short(e.Oldest.Unique)
		}
		if e.Role != "" {
			return fmt.Sprintf("oldest with role %s is %s", e.Role, who)
		}
		return "oldest is " + who
	}
	return fmt.Sprintf("event %T", ev)
}
