package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/lease"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/remote"
	"go.uber.org/zap"
)

// Errors returned by the cluster. Test for them with errors.Is.
var (
	// ErrInvalidConfig is returned by Config.Validate and Start for a configuration that
	// cannot work, and by Start when remoting is not started in the system.
	ErrInvalidConfig = errors.New("cluster: invalid configuration")
	// ErrAlreadyStarted is returned by a second Start in the same system.
	ErrAlreadyStarted = errors.New("cluster: already started in this system")
	// ErrJoinFailed is returned by WaitUp when no seed node answered within
	// Config.JoinTimeout; it wraps the last attempt's error.
	ErrJoinFailed = errors.New("cluster: could not join through the seed nodes")
	// ErrStopped is returned by WaitUp, and by calls that need a running node, once
	// this node has left the cluster, was downed, or shut down.
	ErrStopped = errors.New("cluster: this node has stopped its cluster services")
)

// Cluster is one node's membership in a cluster: serf underneath, Akka's member model
// on top. Start it with Start and find it with Get; it leaves the cluster gracefully
// during the system's coordinated shutdown. Its methods are safe for concurrent use.
type Cluster struct {
	sys  *actor.System
	r    *remote.Remote // the transport: quarantine and failure-detection hand-over
	cfg  Config         // with defaults
	log  *zap.Logger
	self Member
	serf *serf.Serf
	core actor.Ref
	// clusterID is the identity of the cluster this node formed or joined; nil until
	// then. Written once, by Start or the join process.
	clusterID atomic.Pointer[string]

	mu           sync.Mutex
	state        CurrentClusterState
	observations []Observation
	onUp         []func()
	join         JoinProgress
	managed      atomic.Pointer[map[actor.Address]bool]

	up         chan struct{} // closed when this member is Up
	joined     chan struct{} // closed when this node has joined (or forms the cluster)
	joinFailed chan struct{} // closed when joining gave up
	events     chan serf.Event
	done       chan struct{} // closed when the node stops (left, downed or shut down)
	stopOnce   sync.Once
	wg         sync.WaitGroup

	leaseCtx       context.Context // ends when the node stops: lease calls in flight end too
	leaseCancel    context.CancelFunc
	leaseReleaseAt atomic.Int64 // Unix nanoseconds before which a held lease is kept

	decisions decisionCounts // the resolver's decisions acted on, by action (metrics)
}

// JoinProgress says how joining through the seed nodes or by discovery goes (see
// Cluster.JoinProgress).
type JoinProgress struct {
	// Joined is set once this node is in a cluster: it found a member of one through
	// the seed nodes, or formed one (at once without seed nodes; as the first seed
	// node when no other seed node is in a cluster).
	Joined bool
	// Attempts counts the attempts made so far.
	Attempts int
	// LastError is the last failed attempt's error; nil once joined.
	LastError error
	// GaveUp is set when JoinTimeout passed without finding a cluster: the node stays
	// Joining and tries no more. The first seed node never gives up: it forms a cluster;
	// nor does a node that bootstraps by discovery.
	GaveUp bool
	// ContactPoints are the gossip addresses the last successful lookup found, sorted,
	// when the node bootstraps by discovery (Config.Bootstrap); nil otherwise.
	ContactPoints []string
}

var started = actor.NewOncePerSystem[Cluster]("troupe.cluster")

// Get returns the node Start started in sys, or nil before that (or when Start
// failed). A node that has stopped is still returned; see Stopped.
func Get(sys *actor.System) *Cluster { return started.Get(sys) }

// Start joins sys to a cluster, once per system: it finds the system's transport
// (remote.Start must have run; its address is the member's address), starts serf on
// the gossip address, publishes this member (Joining) in its tags, and, with
// SeedNodes or Bootstrap, joins through them in the background (see WaitUp and
// JoinProgress). The member moves itself Up once min-nr-of-members are in.
//
// Start returns an error wrapping ErrInvalidConfig for an invalid configuration or
// when remoting is not started, ErrAlreadyStarted when a node already runs in sys, and
// an error when serf cannot start (the gossip port is taken, say).
func Start(sys *actor.System, cfg Config) (*Cluster, error) {
	r := remote.Get(sys)
	if r == nil {
		return nil, fmt.Errorf("%w: remoting is not started in system %q: call remote.Start first", ErrInvalidConfig, sys.Name())
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if u, ok := cfg.Downing.Lease.(lease.SystemLogger); ok {
		u.UseSystemLogger(sys.Logger())
	}
	return started.Start(sys, ErrAlreadyStarted, func() (*Cluster, error) { return start(sys, r, cfg) })
}

func start(sys *actor.System, r *remote.Remote, cfg Config) (*Cluster, error) {
	if cfg.GossipHost == "" {
		cfg.GossipHost = r.Address().Host
	}
	cfg = cfg.withDefaults()
	self := Member{
		Unique:     UniqueAddress{Addr: r.Address().String(), UID: r.UID()},
		Status:     Joining,
		Roles:      member.NormalizeRoles(cfg.Roles),
		AppVersion: cfg.AppVersion,
	}
	// Without seed nodes the node forms a cluster of its own at once; with them, the
	// join process (joinSeeds) finds out whether it joins or forms one.
	founding := len(cfg.SeedNodes) == 0 && cfg.Bootstrap.Discovery == nil
	id := ""
	if founding {
		id = newClusterID()
	}
	tags, err := membership.EncodeTagsIn(self, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	k, err := newCore(cfg, self)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c := &Cluster{
		sys:        sys,
		r:          r,
		cfg:        cfg,
		log:        sys.Logger().With(zap.String("member", self.Unique.String())),
		self:       self,
		up:         make(chan struct{}),
		joined:     make(chan struct{}),
		joinFailed: make(chan struct{}),
		events:     make(chan serf.Event, 1024),
		done:       make(chan struct{}),
	}
	c.leaseCtx, c.leaseCancel = context.WithCancel(context.Background())
	k.c = c
	c.state = k.ms.State()
	sc, err := c.serfConfig(tags)
	if err != nil {
		c.leaseCancel()
		return nil, err
	}
	if c.serf, err = serf.Create(sc); err != nil {
		c.leaseCancel()
		if tr := sc.MemberlistConfig.Transport; tr != nil && c.cfg.Transport != nil {
			_ = tr.Shutdown() // a transport Config.Transport made: serf did not take it over
		}
		return nil, fmt.Errorf("cluster: starting serf: %w", err)
	}
	if founding {
		c.clusterID.Store(&id)
		k.cc.SetJoined(true)
		c.join.Joined = true
		close(c.joined)
	}
	r.SetMembership(c.isMember)
	c.core, err = sys.SpawnSystem(actor.PropsOf(func() actor.Actor { return k }), "cluster")
	if err != nil {
		r.SetMembership(nil)
		_ = c.serf.Shutdown()
		c.leaseCancel()
		return nil, err
	}
	// A member that removed this one refuses its connections from then on: that tells
	// this node it was downed when the decision itself missed it (see onQuarantinedBy).
	core := c.core
	r.OnQuarantinedBy(func(by actor.Address) { _ = core.Tell(quarantinedBy{addr: by.String()}) })
	c.wg.Add(1)
	go c.pump()
	switch {
	case cfg.Bootstrap.Discovery != nil:
		c.wg.Add(1)
		go c.joinDiscovery()
	case !founding:
		c.wg.Add(1)
		go c.joinSeeds()
	}
	cs := sys.CoordinatedShutdown()
	_ = cs.AddTask(actor.PhaseClusterLeave, "cluster-leave", c.Leave)
	_ = cs.AddTask(actor.PhaseClusterShutdown, "cluster-shutdown", func(ctx context.Context) error {
		c.stop()
		c.releaseLease(ctx)
		c.wg.Wait()
		return nil
	})
	c.startMetrics()
	c.log.Info("cluster node started", zap.String("gossip", c.GossipAddress()))
	return c, nil
}

// SelfUniqueAddress returns this member's identity.
func (c *Cluster) SelfUniqueAddress() UniqueAddress { return c.self.Unique }

// State returns this node's current view of the cluster.
func (c *Cluster) State() CurrentClusterState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Observations returns who cannot reach whom, as this node knows it from its own
// observations and the others' gossip: the detail behind CurrentClusterState.Unreachable,
// ordered by observer, then subject. Observations about members that are Down or
// removed are left out. It is empty when every member reaches every other.
func (c *Cluster) Observations() []Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.observations)
}

// setObservations replaces the snapshot behind Observations, and reports whether it
// changed.
func (c *Cluster) setObservations(obs []Observation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(obs, c.observations) {
		return false
	}
	c.observations = obs
	return true
}

// Subscribe sends ref the current state (a CurrentClusterState) and then every
// cluster event, in order, until ref stops or Unsubscribe. It returns an error when
// the request could not be queued (the node's core has stopped).
func (c *Cluster) Subscribe(ref actor.Ref) error { return c.core.Tell(subscribe{ref: ref}) }

// Unsubscribe stops the events to ref.
func (c *Cluster) Unsubscribe(ref actor.Ref) error { return c.core.Tell(unsubscribe{ref: ref}) }

// RegisterOnMemberUp runs f (in its own goroutine) once this member is Up; at once if
// it already is. It never runs when the node stops before it is Up.
func (c *Cluster) RegisterOnMemberUp(f func()) {
	c.mu.Lock()
	select {
	case <-c.up:
	default:
		c.onUp = append(c.onUp, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go f()
}

// WaitUp waits until this member is Up. It returns nil then (also when the member
// was Up and has stopped since); an error wrapping ErrJoinFailed when the node gave up
// joining through its seed nodes; ErrStopped when the node stopped before it was Up;
// and, when ctx ends first, ctx's error, with the last join attempt's error when the
// node has not joined yet.
func (c *Cluster) WaitUp(ctx context.Context) error {
	select {
	case <-c.up:
		return nil
	default:
	}
	select {
	case <-c.up:
		return nil
	case <-c.joinFailed:
		return fmt.Errorf("%w: %w", ErrJoinFailed, c.JoinProgress().LastError)
	case <-c.done:
		select {
		case <-c.up:
			return nil
		default:
			return ErrStopped
		}
	case <-ctx.Done():
		if jp := c.JoinProgress(); !jp.Joined && jp.LastError != nil {
			return fmt.Errorf("%w (not joined after %d attempts; last: %v)", ctx.Err(), jp.Attempts, jp.LastError)
		}
		return ctx.Err()
	}
}

// JoinProgress reports how joining through the seed nodes or by discovery goes:
// whether the node joined, how many attempts were made, the last error (or why the
// node does not form a cluster yet) and whether the node gave up. Failed attempts are
// also logged, as warnings, every tenth attempt.
func (c *Cluster) JoinProgress() JoinProgress {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.join
}

// Down declares the member u Down by hand: every node removes it, and the member
// itself, if it still runs and hears of it, stops its cluster services. A member this
// node does not know is ignored; this node's own identity downs this node. It returns
// an error when the request could not be queued.
func (c *Cluster) Down(u UniqueAddress) error { return c.core.Tell(downRequest{u: u}) }

// DownAddress downs whichever incarnation is the member at addr (a remote address such
// as troupe://shop@10.0.0.7:2552), as Down does.
func (c *Cluster) DownAddress(addr actor.Address) error {
	return c.core.Tell(downRequest{addr: addr.String()})
}

// Leave leaves the cluster gracefully and waits until this node is out: the member
// becomes Leaving, then Exiting and Removed as serf spreads its leave; then its cluster
// services stop. It runs as the coordinated-shutdown phase cluster-leave, after the
// layers above have handed over their work. It returns nil at once when the node has
// already stopped, serf's error when the leave could not be spread, and ctx's error
// when ctx ends first (the leave goes on).
func (c *Cluster) Leave(ctx context.Context) error {
	if c.isStopped() {
		return nil
	}
	reply := make(chan error, 1)
	if err := c.core.Tell(leaveRequest{reply: reply}); err != nil {
		select {
		case <-c.done:
			return nil
		default:
			return err
		}
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

// DownRemovalMargin returns the down-removal margin in force on this node
// (DowningConfig.DownRemovalMargin, with its default applied): how long after
// removing a downed member the node waits before the services above it (singleton,
// sharding) take over what that member ran.
func (c *Cluster) DownRemovalMargin() time.Duration { return c.cfg.Downing.DownRemovalMargin }

// stop shuts serf down and ends the node's goroutines; it is idempotent.
func (c *Cluster) stop() {
	c.stopOnce.Do(func() {
		if err := c.serf.Shutdown(); err != nil {
			c.log.Warn("serf shutdown", zap.Error(err))
		}
		close(c.done)
	})
}

func (c *Cluster) isStopped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// isMember reports whether addr is a member's address: the transport leaves failure
// detection for it to the cluster.
func (c *Cluster) isMember(addr actor.Address) bool {
	m := c.managed.Load()
	return m != nil && (*m)[addr]
}

// publishState refreshes the snapshot behind State and the transport's member list.
func (c *Cluster) publishState(st CurrentClusterState) {
	managed := make(map[actor.Address]bool, len(st.Members))
	for _, m := range st.Members {
		if addr, err := actor.ParseAddress(m.Unique.Addr); err == nil {
			managed[addr] = true
		}
	}
	c.managed.Store(&managed)
	c.mu.Lock()
	c.state = st
	c.mu.Unlock()
}

// markUp runs the RegisterOnMemberUp callbacks once.
func (c *Cluster) markUp() {
	c.mu.Lock()
	select {
	case <-c.up:
		c.mu.Unlock()
		return
	default:
	}
	close(c.up)
	fs := c.onUp
	c.onUp = nil
	c.mu.Unlock()
	for _, f := range fs {
		go f()
	}
}
