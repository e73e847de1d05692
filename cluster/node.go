package cluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/hooks"
	"github.com/troupe-go/troupe/remote"
	"go.uber.org/zap"
)

// Cluster is one node's membership in a cluster: serf underneath, Akka's member model
// on top. Start it with Start; it leaves the cluster gracefully during the system's
// coordinated shutdown.
type Cluster struct {
	sys  *actor.System
	r    *remote.Remote
	link hooks.Remote // the transport's quarantine and failure-detection hand-over
	cfg  Config
	log  *zap.Logger
	self Member
	serf *serf.Serf
	core actor.Ref

	mu      sync.Mutex
	state   CurrentClusterState
	onUp    []func()
	up      bool
	managed atomic.Pointer[map[actor.Address]bool]
	joined  atomic.Bool // joined through a seed, or forms the cluster itself
	founder bool        // forms the cluster: no seeds, or the first seed itself

	events   chan serf.Event
	done     chan struct{} // closed when the node stops (left, downed or shut down)
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// userEventDown is the serf user event that spreads a Down decision; its payload is
// the member's UniqueAddress.String().
const userEventDown = "troupe.down"

// Start joins sys to a cluster: it starts serf on the gossip address, publishes this
// member (Joining) in its tags, and, with SeedNodes, joins through them in the
// background. The member moves itself Up once min-nr-of-members are in.
func Start(sys *actor.System, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	addr := cfg.Remote.Address()
	self := Member{
		Unique:     UniqueAddress{Addr: addr.String(), UID: cfg.Remote.UID()},
		Status:     Joining,
		Roles:      NormalizeRoles(cfg.Roles),
		AppVersion: cfg.AppVersion,
	}
	tags, err := EncodeTags(self)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	ms, err := NewMembership(MembershipConfig{MinNrOfMembers: cfg.MinNrOfMembers, MinNrOfMembersOfRole: cfg.MinNrOfMembersOfRole}, self)
	if err != nil {
		return nil, err
	}
	res, err := NewResolver(cfg.Downing, time.Now())
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		sys:    sys,
		r:      cfg.Remote,
		cfg:    cfg,
		log:    sys.Logger().With(zap.String("member", self.Unique.String())),
		self:   self,
		events: make(chan serf.Event, 1024),
		done:   make(chan struct{}),
	}
	c.state = ms.State()
	sc, err := c.serfConfig(tags)
	if err != nil {
		return nil, err
	}
	c.serf, err = serf.Create(sc)
	if err != nil {
		return nil, fmt.Errorf("cluster: starting serf: %w", err)
	}
	if len(cfg.SeedNodes) == 0 || cfg.SeedNodes[0] == c.GossipAddress() {
		c.founder = true // before the core starts, which reads it
		c.joined.Store(true)
	}
	c.link = hooks.RemoteOf(sys)
	c.link.SetMembership(c.isMember)
	c.core, err = sys.SpawnSystem(actor.PropsOf(func() actor.Actor {
		return &core{c: c, ms: ms, res: res, subs: make(map[actor.Ref]struct{})}
	}), "cluster")
	if err != nil {
		c.link.SetMembership(nil)
		_ = c.serf.Shutdown()
		return nil, err
	}
	c.wg.Add(1)
	hooks.SetCluster(sys, crasher{c})
	go c.pump()
	if len(cfg.SeedNodes) > 0 {
		c.wg.Add(1)
		go c.joinSeeds()
	}
	cs := sys.CoordinatedShutdown()
	_ = cs.AddTask(actor.PhaseClusterLeave, "cluster-leave", c.Leave)
	_ = cs.AddTask(actor.PhaseClusterShutdown, "cluster-shutdown", func(context.Context) error {
		c.stop()
		c.wg.Wait()
		return nil
	})
	c.log.Info("cluster node started", zap.String("gossip", c.GossipAddress()))
	return c, nil
}

func (c *Cluster) serfConfig(tags map[string]string) (*serf.Config, error) {
	sc := serf.DefaultConfig()
	sc.NodeName = c.self.Unique.Addr
	sc.Tags = tags
	sc.EventCh = c.events
	sc.ReconnectTimeout = 72 * time.Hour // unreachable members go when downed, not by timer
	sc.TombstoneTimeout = time.Hour
	// A second node claiming a member's name (its address) is refused by memberlist,
	// which keeps the node it knows; serf's extra conflict resolution races inside
	// serf (seen with -race), and would only make the newcomer shut itself down.
	sc.EnableNameConflictResolution = false
	sc.LeavePropagateDelay = c.cfg.Timing.LeavePropagateDelay
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
	t := c.cfg.Timing
	if t.GossipInterval > 0 {
		ml.GossipInterval = t.GossipInterval
	}
	if t.ProbeInterval > 0 {
		ml.ProbeInterval = t.ProbeInterval
	}
	if t.ProbeTimeout > 0 {
		ml.ProbeTimeout = t.ProbeTimeout
	}
	if t.SuspicionMult > 0 {
		ml.SuspicionMult = t.SuspicionMult
	}
	if t.SuspicionMaxTimeoutMult > 0 {
		ml.SuspicionMaxTimeoutMult = t.SuspicionMaxTimeoutMult
	}
	if t.PushPullInterval > 0 {
		ml.PushPullInterval = t.PushPullInterval
	}
	if len(c.cfg.Keyring) > 0 {
		kr, err := memberlist.NewKeyring(c.cfg.Keyring, c.cfg.Keyring[0])
		if err != nil {
			return nil, fmt.Errorf("%w: keyring: %w", ErrInvalidConfig, err)
		}
		ml.Keyring = kr
		ml.SecretKey = c.cfg.Keyring[0]
	}
	if c.cfg.WrapTransport != nil {
		nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{c.cfg.GossipHost},
			BindPort:  c.cfg.GossipPort,
			Logger:    logger,
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: gossip transport: %w", err)
		}
		ml.Transport = c.cfg.WrapTransport(nt)
		ml.BindPort = nt.GetAutoBindPort()
		ml.AdvertisePort = ml.BindPort
	}
	if c.cfg.AdvertiseGossipPort != 0 {
		ml.AdvertisePort = c.cfg.AdvertiseGossipPort
	}
	sc.MemberlistConfig = ml
	return sc, nil
}

// zapWriter routes serf's and memberlist's log lines to zap: errors and warnings as
// warnings, the rest at debug level.
type zapWriter struct{ log *zap.Logger }

func (w *zapWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if strings.Contains(line, "[ERR]") || strings.Contains(line, "[WARN]") {
		w.log.Warn(line)
	} else {
		w.log.Debug(line)
	}
	return len(p), nil
}

var _ io.Writer = (*zapWriter)(nil)

// pump forwards serf's events to the core actor, in order.
func (c *Cluster) pump() {
	defer c.wg.Done()
	for {
		select {
		case ev := <-c.events:
			_ = c.core.Tell(serfEvent{ev: ev})
		case <-c.done:
			return
		}
	}
}

// joinSeeds retries the seed nodes until one answers or JoinTimeout passes.
func (c *Cluster) joinSeeds() {
	defer c.wg.Done()
	deadline := time.Now().Add(c.cfg.JoinTimeout)
	for attempt := 0; ; attempt++ {
		n, err := c.serf.Join(c.cfg.SeedNodes, true)
		if err == nil && n > 0 {
			c.joined.Store(true)
			c.log.Info("joined through seed nodes", zap.Int("contacted", n))
			return
		}
		if time.Now().After(deadline) {
			c.log.Error("could not join any seed node; giving up and staying Joining",
				zap.Strings("seeds", c.cfg.SeedNodes), zap.Error(err))
			return
		}
		if attempt%10 == 0 {
			c.log.Warn("joining through the seed nodes failed; retrying",
				zap.Strings("seeds", c.cfg.SeedNodes), zap.Int("attempt", attempt+1), zap.Error(err))
		}
		select {
		case <-time.After(c.cfg.JoinRetryInterval):
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

// SelfUniqueAddress returns this member's identity.
func (c *Cluster) SelfUniqueAddress() UniqueAddress { return c.self.Unique }

// State returns this node's current view of the cluster.
func (c *Cluster) State() CurrentClusterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Subscribe sends ref the current state (a CurrentClusterState) and then every
// cluster event, in order, until ref stops or Unsubscribe.
func (c *Cluster) Subscribe(ref actor.Ref) { _ = c.core.Tell(subscribe{ref: ref}) }

// Unsubscribe stops the events to ref.
func (c *Cluster) Unsubscribe(ref actor.Ref) { _ = c.core.Tell(unsubscribe{ref: ref}) }

// RegisterOnMemberUp runs f (in its own goroutine) once this member is Up; at once if
// it already is.
func (c *Cluster) RegisterOnMemberUp(f func()) {
	c.mu.Lock()
	if !c.up {
		c.onUp = append(c.onUp, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go f()
}

// Down declares the member at u Down by hand: every node removes it, and the member
// itself, if it still runs, stops its cluster services.
func (c *Cluster) Down(u UniqueAddress) { _ = c.core.Tell(downRequest{u: u}) }

// DownAddress downs whichever incarnation is the member at addr (a remote address
// such as troupe://sys@10.0.0.7:2552), as Down does.
func (c *Cluster) DownAddress(addr actor.Address) {
	_ = c.core.Tell(downRequest{addr: addr.String()})
}

// Leave leaves the cluster gracefully: this member becomes Leaving, then Exiting and
// Removed as serf spreads its leave. It runs as the coordinated-shutdown phase
// cluster-leave, after the layers above have handed over their work.
func (c *Cluster) Leave(ctx context.Context) error {
	reply := make(chan error, 1)
	if err := c.core.Tell(leaveRequest{reply: reply}); err != nil {
		return err
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return nil
	}
}

// Stopped is closed when this node has left the cluster, was downed, or shut down.
func (c *Cluster) Stopped() <-chan struct{} { return c.done }

// crasher exposes Crash to the test kits through internal/hooks: serf stops at once
// without leaving, as a killed process would; the others see this member become
// unreachable.
type crasher struct{ c *Cluster }

func (k crasher) Crash() { k.c.stop() }

// stop shuts serf down and ends the node's goroutines; it is idempotent.
func (c *Cluster) stop() {
	c.stopOnce.Do(func() {
		if err := c.serf.Shutdown(); err != nil {
			c.log.Warn("serf shutdown", zap.Error(err))
		}
		close(c.done)
	})
}

// isMember reports whether addr is a member's address: the transport leaves failure
// detection for it to the cluster.
func (c *Cluster) isMember(addr actor.Address) bool {
	m := c.managed.Load()
	return m != nil && (*m)[addr]
}
