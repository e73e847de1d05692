package cluster

import (
	"fmt"
	"io"
	"log"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
	"go.uber.org/zap"
)

// userEventDown is the serf user event that spreads a Down decision; its payload is
// the member's UniqueAddress.String().
const userEventDown = "troupe.down"

func (c *Cluster) serfConfig(tags map[string]string) (*serf.Config, error) {
	sc := serf.DefaultConfig()
	sc.NodeName = nodeName(c.self.Unique.Addr)
	sc.Tags = tags
	sc.EventCh = c.events
	t := c.cfg.Timing
	sc.ReconnectTimeout = 72 * time.Hour // unreachable members go when downed, not by timer
	// serf keeps a failed member dead until it reconnects to it; try every ten probe
	// intervals (serf's default is 30s), so that its view heals soon after the network.
	sc.ReconnectInterval = 10 * t.ProbeInterval
	sc.TombstoneTimeout = time.Hour
	// A second node claiming a member's name (its address) is refused by memberlist,
	// which keeps the node it knows; serf's extra conflict resolution races inside
	// serf (seen with -race), and would only make the newcomer shut itself down.
	sc.EnableNameConflictResolution = false
	sc.LeavePropagateDelay = t.LeavePropagateDelay
	sc.Merge = mergeGuard{c: c, guarded: &logEvery{every: time.Minute}, known: new(sync.Map)}
	logger := log.New(&zapWriter{log: c.log.Named("serf")}, "", 0)
	sc.Logger = logger
	sc.LogOutput = nil
	ml := memberlist.DefaultLANConfig()
	ml.Logger = logger
	ml.BindAddr = c.cfg.GossipHost
	ml.BindPort = c.cfg.GossipPort
	ml.AdvertiseAddr = c.cfg.AdvertiseGossipHost
	// memberlist fills AdvertisePort from the bound port only when it binds port 0.
	ml.AdvertisePort = c.cfg.GossipPort
	ml.GossipInterval = t.GossipInterval
	ml.ProbeInterval = t.ProbeInterval
	ml.ProbeTimeout = t.ProbeTimeout
	ml.SuspicionMult = t.SuspicionMult
	ml.SuspicionMaxTimeoutMult = t.SuspicionMaxTimeoutMult
	ml.PushPullInterval = t.PushPullInterval
	if len(c.cfg.Keyring) > 0 {
		kr, err := memberlist.NewKeyring(c.cfg.Keyring, c.cfg.Keyring[0])
		if err != nil {
			return nil, fmt.Errorf("%w: keyring: %w", ErrInvalidConfig, err)
		}
		ml.Keyring = kr
		ml.SecretKey = c.cfg.Keyring[0]
	}
	if c.cfg.Transport != nil {
		tr, err := c.cfg.Transport(&memberlist.NetTransportConfig{
			BindAddrs: []string{c.cfg.GossipHost},
			BindPort:  c.cfg.GossipPort,
			Logger:    logger,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: gossip transport: %w", err)
		}
		port, err := boundGossipPort(tr)
		if err != nil {
			_ = tr.Shutdown()
			return nil, fmt.Errorf("cluster: gossip transport: %w", err)
		}
		ml.Transport = tr
		ml.BindPort = port
		ml.AdvertisePort = port
	}
	if c.cfg.AdvertiseGossipPort != 0 {
		ml.AdvertisePort = c.cfg.AdvertiseGossipPort
	}
	sc.MemberlistConfig = ml
	return sc, nil
}

// boundGossipPort returns the port a gossip transport is bound to: its
// GetAutoBindPort (memberlist.NetTransport's), else the port of its advertise address.
func boundGossipPort(tr memberlist.NodeAwareTransport) (int, error) {
	if b, ok := tr.(interface{ GetAutoBindPort() int }); ok {
		return b.GetAutoBindPort(), nil
	}
	_, port, err := tr.FinalAdvertiseAddr("", 0)
	return port, err
}

// nodeName returns the serf node name of the member at addr: the address without its
// scheme ("shop@10.0.0.7:2552"), since memberlist reads a "/" in a name it joins by
// (serf's reconnection to failed members does) as the end of the name.
func nodeName(addr string) string {
	if i := strings.Index(addr, "://"); i >= 0 {
		return addr[i+3:]
	}
	return addr
}

// zapWriter routes serf's and memberlist's log lines to zap: errors and warnings as
// warnings, except memberlist's failures to reach one member (peerTrouble), which
// are at info, and the rest at debug level.
type zapWriter struct{ log *zap.Logger }

// peerTrouble are the beginnings of memberlist's errors about reaching one member.
// They come whenever a member crashes or leaves, and the cluster reports what
// matters of them itself (unreachable, downed, removed), so they are not warnings.
var peerTrouble = []string{
	"memberlist: Push/Pull with ",
	"memberlist: Failed to send ",
	"memberlist: Failed fallback ping",
	"memberlist: Was able to connect to ",
}

func (w *zapWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	switch {
	case !strings.Contains(line, "[ERR]") && !strings.Contains(line, "[WARN]"):
		w.log.Debug(line)
	case slices.ContainsFunc(peerTrouble, func(s string) bool { return strings.Contains(line, s) }):
		w.log.Info(line)
	default:
		w.log.Warn(line)
	}
	return len(p), nil
}

var _ io.Writer = (*zapWriter)(nil)

// pump forwards serf's events to the core actor, in order. An event the core cannot
// take (it has stopped) is logged and dropped: the node is leaving the cluster then.
func (c *Cluster) pump() {
	defer c.wg.Done()
	for {
		select {
		case ev := <-c.events:
			if err := c.core.Tell(serfEvent{ev: ev}); err != nil {
				c.log.Debug("serf event dropped: the cluster core has stopped", zap.Stringer("event", ev.EventType()), zap.Error(err))
			}
		case <-c.done:
			return
		}
	}
}

// GossipAddress returns the "host:port" serf gossips on: give it to other nodes as a
// seed.
func (c *Cluster) GossipAddress() string {
	m := c.serf.LocalMember()
	return m.Addr.String() + ":" + strconv.Itoa(int(m.Port))
}
