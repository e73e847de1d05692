package cluster

import (
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/troupe-go/troupe/discovery"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/lease"
)

// Config configures a node's cluster membership. Zero fields mean their documented
// defaults; the zero Config is valid and forms a cluster of one with keep-majority
// downing.
type Config struct {
	// GossipHost and GossipPort are where serf gossips (UDP and TCP). Defaults: the
	// remote address's host, and a free port.
	GossipHost string
	GossipPort int
	// AdvertiseGossipHost and AdvertiseGossipPort are the gossip address the other
	// members use, when it differs from the bound one (containers, NAT). Defaults:
	// GossipHost and the bound port.
	AdvertiseGossipHost string
	AdvertiseGossipPort int
	// SeedNodes are gossip addresses ("host:port") to join through; give every node
	// the same list, the same first. A node contacts them every JoinRetryInterval
	// until it finds a member of a cluster through them, then joins that cluster; it
	// stays Joining (never Up, never oldest) until then, and gives up only after
	// JoinTimeout, when that is set. Only the first seed node forms a new cluster, and only when no
	// other seed node is in one: at once when every other seed node answered and none
	// is, else after SeedNodeTimeout. A restarted first seed node thus joins the
	// cluster the others still run. A node without seed nodes forms a cluster of its
	// own at once.
	SeedNodes []string
	// JoinRetryInterval defaults to 1s. JoinTimeout, when above 0, makes a node that
	// is not the first seed give up (stay Joining and try no more) after that long
	// without finding a cluster; 0, the default, retries until it joins, as Akka's
	// seed-node process does. A node that gave up never joins: set it only when
	// something watches JoinProgress or WaitUp and restarts the node.
	JoinRetryInterval time.Duration
	JoinTimeout       time.Duration
	// SeedNodeTimeout is how long the first seed node looks for a cluster through the
	// other seed nodes before it forms one, when some of them do not answer. Default
	// 5s, as Akka's seed-node-timeout.
	SeedNodeTimeout time.Duration
	// Bootstrap, when its Discovery is set, finds the other nodes by discovery instead
	// of SeedNodes (which must then be empty); see BootstrapConfig.
	Bootstrap BootstrapConfig

	// Roles and AppVersion describe the member to the others.
	Roles      []string
	AppVersion string
	// MinNrOfMembers and MinNrOfMembersOfRole hold every member at Joining until that
	// many have joined (overall, and with each role).
	MinNrOfMembers       int
	MinNrOfMembersOfRole map[string]int

	// Downing configures the split-brain resolver.
	Downing DowningConfig
	// KeepSystemWhenDowned, when set, leaves the actor system running after this node
	// is downed; by default a downed node shuts its system down, as Akka does, since
	// its cluster services have stopped and it can only come back as a new
	// incarnation.
	KeepSystemWhenDowned bool

	// Keyring holds serf's gossip encryption keys (16, 24 or 32 bytes each); the first
	// is the primary. Empty: gossip is not encrypted.
	Keyring [][]byte

	// Timing tunes gossip and failure detection; zero fields keep the defaults.
	// TestTiming returns settings that make a test take seconds.
	Timing Timing

	// Transport, when set, makes the transport serf gossips over (UDP packets and TCP
	// streams), in place of the memberlist.NetTransport serf would bind itself. It
	// gets the configuration that transport would have (GossipHost, GossipPort, serf's
	// logger) and may return memberlist.NewNetTransport of it, wrapped, or a transport
	// of its own. The node advertises the port the transport reports bound (its
	// GetAutoBindPort method when it has one, else FinalAdvertiseAddr("", 0)) unless
	// AdvertiseGossipPort is set. Serf shuts the transport down when the node stops.
	// It is the seam for fault injection in tests (testkit/faultnet drops packets and
	// streams per link and direction) and for special networks. Default: nil, serf's
	// own NetTransport.
	Transport func(cfg *memberlist.NetTransportConfig) (memberlist.NodeAwareTransport, error)
}

// BootstrapConfig configures joining a cluster through discovery, as Akka's Cluster
// Bootstrap. Every LookupInterval the node looks its contact points up (the gossip
// addresses of the nodes of its deployment) and contacts each, which tells it whether
// any belongs to a cluster. If one does, the node joins that cluster at once. If none
// does, only the node with the lowest address of the set forms a new cluster, and only
// once the set has been the same for StableMargin, has at least RequiredContactPoints,
// includes this node, and every other contact point answered; the others join it.
//
// A target's host name is resolved: it stands for this node when one of its addresses
// is this node's advertised gossip address, else for the lowest of them; addresses are
// ordered IPv4 before IPv6, then by address, then by port. A failed lookup keeps the
// last set (a cluster found through it is still joined) but restarts the stable
// margin. Bootstrap never gives up (JoinTimeout does not apply); JoinProgress says
// why the node waits, and failed rounds are logged, every tenth.
type BootstrapConfig struct {
	// Discovery looks the contact points up; nil turns bootstrap off.
	Discovery discovery.Discovery
	// Lookup is the service looked up; Service is required. A target without a port
	// means this node's gossip port.
	Lookup discovery.Lookup
	// RequiredContactPoints is the least number of contact points (this node
	// included) seen before a new cluster may be formed. Set it to the number of
	// replicas the deployment starts with: with fewer, nodes that see different sets
	// of contact points for longer than StableMargin can form two clusters. Default 2.
	RequiredContactPoints int
	// StableMargin is how long the set of contact points must stay the same before a
	// new cluster may be formed. Default 5s.
	StableMargin time.Duration
	// LookupInterval is the time between lookups. Default 1s.
	LookupInterval time.Duration
	// LookupTimeout bounds each lookup, with the resolution of the host names it
	// returns. Default 3s.
	LookupTimeout time.Duration
}

// Defaults of BootstrapConfig.
const (
	defaultRequiredContactPoints = 2
	defaultStableMargin          = 5 * time.Second
	defaultLookupInterval        = time.Second
	defaultLookupTimeout         = 3 * time.Second
)

// withDefaults fills in the zero fields.
func (b BootstrapConfig) withDefaults() BootstrapConfig {
	if b.RequiredContactPoints == 0 {
		b.RequiredContactPoints = defaultRequiredContactPoints
	}
	if b.StableMargin == 0 {
		b.StableMargin = defaultStableMargin
	}
	if b.LookupInterval == 0 {
		b.LookupInterval = defaultLookupInterval
	}
	if b.LookupTimeout == 0 {
		b.LookupTimeout = defaultLookupTimeout
	}
	return b
}

// DowningConfig configures the split-brain resolver. The zero value is keep-majority
// with a stable-after of 20s.
type DowningConfig struct {
	// Strategy chooses the side that survives a partition. Default KeepMajority.
	Strategy Strategy
	// StableAfter is how long membership and reachability must be unchanged before
	// the resolver decides. Default 20s. It must be at least twice
	// Timing.DetectionSpread. Akka's guidance by cluster size: 7s for 5 members, 10s
	// for 10, 13s for 20, 17s for 50, 20s for 100, 30s for 1,000.
	StableAfter time.Duration
	// DownAllWhenUnstable downs every member when reachability keeps changing for
	// StableAfter plus this long after the first change without a decision. 0 means
	// three quarters of StableAfter; negative turns it off (not recommended: the sides
	// of a partition that never settles could decide differently).
	DownAllWhenUnstable time.Duration
	// DownRemovalMargin is how long after removing a downed member this node waits
	// before it publishes RemovalMarginPassed, the event on which the layers above
	// take over the member's work. The downed side must have stopped by then. 0 means
	// StableAfter; it must be at least Timing.DetectionSpread.
	DownRemovalMargin time.Duration
	// Role, when set, makes the strategies count only members with the role. Members
	// without it are still downed with their side.
	Role string
	// QuorumSize is StaticQuorum's minimum side size; required for StaticQuorum.
	QuorumSize int
	// KeepOldestIfAlone, for KeepOldest, keeps the oldest's side even when the oldest is
	// alone on it. By default a lone oldest is downed and the other side survives.
	KeepOldestIfAlone bool
	// Lease is the lease LeaseMajority competes for; required for LeaseMajority. Every
	// node gives it the same lease name and its own owner name (its address, say).
	Lease lease.Lease
	// AcquireLeaseDelayForMinority is how long the minority side waits before it
	// tries to acquire the lease, so that the majority normally gets it. Default 2s.
	AcquireLeaseDelayForMinority time.Duration
}

// Defaults of DowningConfig.
const (
	defaultStableAfter       = 20 * time.Second
	defaultLeaseMinorityWait = 2 * time.Second
)

// withDefaults fills in the zero fields.
func (d DowningConfig) withDefaults() DowningConfig {
	if d.StableAfter == 0 {
		d.StableAfter = defaultStableAfter
	}
	if d.DownAllWhenUnstable == 0 {
		d.DownAllWhenUnstable = d.StableAfter * 3 / 4
	}
	if d.DownRemovalMargin == 0 {
		d.DownRemovalMargin = d.StableAfter
	}
	if d.AcquireLeaseDelayForMinority == 0 {
		d.AcquireLeaseDelayForMinority = defaultLeaseMinorityWait
	}
	return d
}

// resolverConfig returns the resolver's settings (after withDefaults).
func (d DowningConfig) resolverConfig() sbr.Config {
	return sbr.Config{
		Strategy:                     sbr.Strategy(d.Strategy),
		StableAfter:                  d.StableAfter,
		DownAllWhenUnstable:          d.DownAllWhenUnstable,
		Role:                         d.Role,
		QuorumSize:                   d.QuorumSize,
		KeepOldestIfAlone:            d.KeepOldestIfAlone,
		AcquireLeaseDelayForMinority: d.AcquireLeaseDelayForMinority,
	}
}

func (c Config) withDefaults() Config {
	if c.AdvertiseGossipHost == "" {
		c.AdvertiseGossipHost = c.GossipHost
	}
	if c.JoinRetryInterval == 0 {
		c.JoinRetryInterval = time.Second
	}
	if c.SeedNodeTimeout == 0 {
		c.SeedNodeTimeout = 5 * time.Second
	}
	c.Timing = c.Timing.withDefaults()
	c.Downing = c.Downing.withDefaults()
	c.Bootstrap = c.Bootstrap.withDefaults()
	return c
}

// Validate reports the first field that is out of range, wrapping ErrInvalidConfig:
// ports, negative durations or counts, keys that are not 16, 24 or 32 bytes, roles
// that are not plain names, an unknown strategy or one missing its setting
// (QuorumSize, Lease), a StableAfter or DownRemovalMargin too short for the
// timing (see Timing.DetectionSpread), and a Bootstrap with a Discovery together with
// SeedNodes or without a Lookup.Service.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	t := c.Timing
	switch {
	case c.GossipPort < 0 || c.GossipPort > 65535:
		return bad("GossipPort %d", c.GossipPort)
	case c.AdvertiseGossipPort < 0 || c.AdvertiseGossipPort > 65535:
		return bad("AdvertiseGossipPort %d", c.AdvertiseGossipPort)
	case c.JoinRetryInterval < 0 || c.JoinTimeout < 0 || c.SeedNodeTimeout < 0:
		return bad("negative join interval or timeout")
	case t.SuspicionMult < 0 || t.SuspicionMaxTimeoutMult < 0 || t.GossipInterval < 0 || t.ProbeInterval < 0 ||
		t.ProbeTimeout < 0 || t.PushPullInterval < 0 || t.LeavePropagateDelay < 0 ||
		t.HeartbeatInterval < 0 || t.AcceptableHeartbeatPause < 0:
		return bad("negative timing")
	case c.Downing.StableAfter < 0 || c.Downing.DownRemovalMargin < 0 || c.Downing.AcquireLeaseDelayForMinority < 0:
		return bad("negative downing duration")
	case c.Downing.Strategy == LeaseMajority && c.Downing.Lease == nil:
		return bad("lease-majority needs a Lease")
	}
	if b := c.Bootstrap; b.Discovery != nil {
		switch {
		case len(c.SeedNodes) > 0:
			return bad("Bootstrap.Discovery and SeedNodes are both set: use one")
		case b.Lookup.Service == "":
			return bad("Bootstrap.Lookup.Service is empty")
		case b.RequiredContactPoints < 0:
			return bad("Bootstrap.RequiredContactPoints %d", b.RequiredContactPoints)
		case b.StableMargin < 0 || b.LookupInterval < 0 || b.LookupTimeout < 0:
			return bad("negative bootstrap duration")
		}
	}
	for i, k := range c.Keyring {
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return bad("keyring key %d has %d bytes (16, 24 or 32)", i, n)
		}
	}
	if err := (membership.MembershipConfig{MinNrOfMembers: c.MinNrOfMembers, MinNrOfMembersOfRole: c.MinNrOfMembersOfRole}).Validate(); err != nil {
		return bad("%v", err)
	}
	for _, r := range c.Roles {
		if err := membership.CheckRole(r); err != nil {
			return bad("role %q: %v", r, err)
		}
	}
	d := c.Downing.withDefaults()
	if err := d.resolverConfig().Validate(); err != nil {
		return bad("%v", err)
	}
	spread := c.Timing.DetectionSpread()
	switch {
	case d.StableAfter < 2*spread:
		return bad("StableAfter %v is below twice the failure detection spread of the timing (%v): use at least %v",
			d.StableAfter, spread, 2*spread)
	case d.DownRemovalMargin < spread:
		return bad("DownRemovalMargin %v is below the failure detection spread of the timing (%v)", d.DownRemovalMargin, spread)
	}
	return nil
}
