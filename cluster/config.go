package cluster

import (
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/troupe-go/troupe/remote"
)

// Config configures a node's cluster membership. Remote is required; zero fields mean
// their documented defaults.
type Config struct {
	// Remote is the system's transport; the member's address is its address.
	Remote *remote.Remote

	// GossipHost and GossipPort are where serf gossips (UDP and TCP). Defaults: the
	// remote address's host, and a free port.
	GossipHost string
	GossipPort int
	// AdvertiseGossipHost and AdvertiseGossipPort are the gossip address the other
	// members use, when it differs from the bound one (containers, NAT). Defaults:
	// GossipHost and the bound port.
	AdvertiseGossipHost string
	AdvertiseGossipPort int
	// SeedNodes are gossip addresses ("host:port") to join through. A node retries
	// them every JoinRetryInterval until one answers or JoinTimeout passes, and stays
	// Joining (never Up, never oldest) until it has joined, so that it cannot form a
	// cluster of its own by mistake. Only a node that is itself the first seed, or
	// has no seeds, forms a new cluster.
	SeedNodes []string
	// JoinRetryInterval defaults to 1s; JoinTimeout to 30s.
	JoinRetryInterval time.Duration
	JoinTimeout       time.Duration

	// Roles and AppVersion describe the member to the others.
	Roles      []string
	AppVersion string
	// MinNrOfMembers and MinNrOfMembersOfRole hold every member at Joining until that
	// many have joined (overall, and with each role).
	MinNrOfMembers       int
	MinNrOfMembersOfRole map[string]int

	// Downing configures the split-brain resolver (keep-majority, stable-after 20s
	// by default).
	Downing DowningConfig
	// KeepSystemWhenDowned, when set, leaves the actor system running after this node
	// is downed; by default a downed node shuts its system down, as Akka does, since
	// its cluster services have stopped and it can only come back as a new
	// incarnation.
	KeepSystemWhenDowned bool

	// Keyring holds serf's gossip encryption keys (16, 24 or 32 bytes each); the first
	// is the primary. Empty: gossip is not encrypted.
	Keyring [][]byte

	// Timing tunes serf's failure detection and gossip; zero values keep serf's LAN
	// defaults. TestTiming returns settings that make a test take seconds.
	Timing Timing

	// WrapTransport, when set, wraps serf's network transport, for fault injection in
	// tests (testkit/multinode).
	WrapTransport func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport
}

// Timing tunes gossip and failure detection; a zero field keeps serf's default.
type Timing struct {
	GossipInterval time.Duration // default 200ms
	ProbeInterval  time.Duration // default 1s
	ProbeTimeout   time.Duration // default 500ms
	SuspicionMult  int           // default 4
	// SuspicionMaxTimeoutMult bounds how far a suspicion's timeout stretches while
	// few other members confirm it; default 6. 1 makes detection times uniform.
	SuspicionMaxTimeoutMult int
	PushPullInterval        time.Duration // default 30s
	// LeavePropagateDelay is how long a leaving node waits for its leave to spread.
	// Default 1s.
	LeavePropagateDelay time.Duration
}

// TestTiming returns timing for tests: failures are detected in about a second.
func TestTiming() Timing {
	return Timing{
		GossipInterval: 20 * time.Millisecond,
		ProbeInterval:  100 * time.Millisecond,
		ProbeTimeout:   50 * time.Millisecond,
		SuspicionMult:  2,
		// A fixed suspicion timeout keeps the members' failure detections close
		// together, well inside the test stable-after of about a second.
		SuspicionMaxTimeoutMult: 1,
		PushPullInterval:        500 * time.Millisecond,
		LeavePropagateDelay:     100 * time.Millisecond,
	}
}

func (c Config) withDefaults() Config {
	if c.GossipHost == "" && c.Remote != nil {
		c.GossipHost = c.Remote.Address().Host
	}
	if c.AdvertiseGossipHost == "" {
		c.AdvertiseGossipHost = c.GossipHost
	}
	if c.JoinRetryInterval == 0 {
		c.JoinRetryInterval = time.Second
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = 30 * time.Second
	}
	if c.Timing.LeavePropagateDelay == 0 {
		c.Timing.LeavePropagateDelay = time.Second
	}
	return c
}

// Validate reports missing or out-of-range fields.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Remote == nil:
		return bad("Remote is required")
	case c.GossipPort < 0 || c.GossipPort > 65535:
		return bad("GossipPort %d", c.GossipPort)
	case c.AdvertiseGossipPort < 0 || c.AdvertiseGossipPort > 65535:
		return bad("AdvertiseGossipPort %d", c.AdvertiseGossipPort)
	case c.JoinRetryInterval < 0 || c.JoinTimeout < 0:
		return bad("negative join interval or timeout")
	case c.Timing.SuspicionMult < 0 || c.Timing.SuspicionMaxTimeoutMult < 0 || c.Timing.GossipInterval < 0 || c.Timing.ProbeInterval < 0 ||
		c.Timing.ProbeTimeout < 0 || c.Timing.PushPullInterval < 0 || c.Timing.LeavePropagateDelay < 0:
		return bad("negative timing")
	}
	for i, k := range c.Keyring {
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return bad("keyring key %d has %d bytes (16, 24 or 32)", i, n)
		}
	}
	if err := (MembershipConfig{MinNrOfMembers: c.MinNrOfMembers, MinNrOfMembersOfRole: c.MinNrOfMembersOfRole}).Validate(); err != nil {
		return err
	}
	if err := c.Downing.Validate(); err != nil {
		return err
	}
	for _, r := range c.Roles {
		if err := checkRole(r); err != nil {
			return fmt.Errorf("%w: role %q: %w", ErrInvalidConfig, r, err)
		}
	}
	return nil
}
