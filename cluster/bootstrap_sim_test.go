package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// The simulation runs bootstrapPlan for five nodes in virtual time from a seed: the
// nodes start at random moments, discovery reveals them in a random order and after
// random delays, each node's lookups see the deployment as it was some time ago, each
// node's staleness its own (so nodes see different sets for a while) and fail at random, contacts fail at
// random, and a node that forms or joins a cluster is seen in it by the others only
// after a random delay (its tags spreading). Once every node is in a cluster, one node
// restarts, at the same address or a new one (the old one lingering in discovery for
// a while), with its network cut for a while: it must join the running cluster.
//
// The model is harsher than serf: a node learns of a cluster only from the contact
// point that holds it, never by gossip from a third node.

// simSetup is one kind of deployment.
type simSetup struct {
	required     int           // RequiredContactPoints
	startSpread  time.Duration // nodes start within this
	appearSpread time.Duration // a node appears in discovery up to this after it starts
	earlyAppear  time.Duration // or up to this before (the pod's address is published first)
	maxLag       time.Duration // how stale a node's lookups are (each node has its own staleness)
}

// simulated kinds of deployment. RequiredContactPoints equal to the replica count
// holds for any delays; a lower one only when every node appears in every view before
// a partial set can stay unchanged for StableMargin (spread plus lag below it).
var simSetups = map[string]simSetup{
	"required=replicas, slow and scattered":                 {required: 5, startSpread: 20 * time.Second, appearSpread: 10 * time.Second, earlyAppear: 2 * time.Second, maxLag: 3 * time.Second},
	"required=2, quick deployment":                          {required: 2, startSpread: 2 * time.Second, appearSpread: time.Second, earlyAppear: time.Second, maxLag: time.Second},
	"required=3, quick deployment":                          {required: 3, startSpread: 2 * time.Second, appearSpread: time.Second, maxLag: 1500 * time.Millisecond},
	"required=replicas, views stale longer than the margin": {required: 5, startSpread: 30 * time.Second, appearSpread: 2 * time.Second, maxLag: 15 * time.Second},
}

const (
	simNodes        = 5
	simStableMargin = 5 * time.Second
	simInterval     = time.Second
	simFailLookup   = 0.2 // probability that a lookup fails
	simFailContact  = 0.1 // probability that a contact goes unanswered
	simLimit        = 10 * time.Minute
	simJitter       = 500 * time.Millisecond // how much a node's staleness varies between lookups
)

// simAddr is one address in discovery.
type simAddr struct {
	addr           netip.AddrPort
	appear, vanish time.Duration // vanish 0: never
	node           *simNode      // the incarnation listening there; nil when none
}

type simNode struct {
	name        string
	addr        netip.AddrPort
	pending     bool // not started yet: it starts at startAt
	startAt     time.Duration
	runs        bool          // started and not stopped: it answers contacts
	nextRound   time.Duration // when it looks up next
	plan        *bootstrapPlan
	cluster     string        // the cluster it joined or formed; "" while it looks
	visibleFrom time.Duration // when the others see its cluster
	cutUntil    time.Duration // its contacts fail until then
	lag         time.Duration // how stale its lookups are
}

type sim struct {
	rng     *rand.Rand
	setup   simSetup
	now     time.Duration
	t0      time.Time
	nodes   []*simNode
	addrs   []*simAddr
	formed  []string // the clusters formed, in order
	history []string // what happened, for a failure's report
}

func (s *sim) uniform(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(s.rng.Int64N(int64(d)))
}

func (s *sim) logf(format string, args ...any) {
	s.history = append(s.history, fmt.Sprintf("%7.3fs ", s.now.Seconds())+fmt.Sprintf(format, args...))
}

// start starts n at the current time with a fresh plan.
func (s *sim) start(n *simNode) {
	n.runs, n.cluster = true, ""
	n.plan = &bootstrapPlan{self: n.addr, required: s.setup.required, stableMargin: simStableMargin}
	n.nextRound = s.now
	n.lag = s.uniform(s.setup.maxLag)
	s.logf("%s starts at %s", n.name, n.addr)
}

// lookup is what n's discovery answers now: the deployment as it was n.lag ago, give or
// take simJitter, or a failure.
func (s *sim) lookup(n *simNode) ([]netip.AddrPort, error) {
	if s.rng.Float64() < simFailLookup {
		return nil, errors.New("lookup failed")
	}
	at := s.now - max(0, n.lag-simJitter/2+s.uniform(simJitter))
	var out []netip.AddrPort
	for _, a := range s.addrs {
		if a.appear <= at && (a.vanish == 0 || at < a.vanish) {
			out = append(out, a.addr)
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out), nil
}

// round runs one round of n: lookup, contacts, decision.
func (s *sim) round(n *simNode) {
	points, err := s.lookup(n)
	n.plan.observe(s.t0.Add(s.now), points, err)
	var v joinView
	for _, a := range n.plan.others() {
		var peer *simNode
		for _, x := range s.addrs {
			if x.addr == a && x.node != nil && x.node.runs {
				peer = x.node
			}
		}
		if peer == nil || s.now < n.cutUntil || s.rng.Float64() < simFailContact {
			continue
		}
		v.answered++
		if peer.cluster != "" && s.now >= peer.visibleFrom && v.cluster == "" {
			v.cluster = peer.cluster
		}
	}
	step, why := n.plan.next(v)
	switch step {
	case joinAdopt:
		n.cluster = v.cluster
		s.logf("%s joins %s (points %v)", n.name, v.cluster, n.plan.points)
	case joinFound:
		n.cluster = fmt.Sprintf("c%d", len(s.formed)+1)
		s.formed = append(s.formed, n.cluster)
		s.logf("%s forms %s (points %v)", n.name, n.cluster, n.plan.points)
	default:
		_ = why
	}
	if n.cluster != "" {
		n.visibleFrom = s.now + s.uniform(2*time.Second)
	}
}

// runUntil advances virtual time, start by start and round by round, until done
// holds or the limit passes.
func (s *sim) runUntil(done func() bool) error {
	for !done() {
		var next *simNode
		at := func(n *simNode) time.Duration {
			if n.pending {
				return n.startAt
			}
			return n.nextRound
		}
		for _, n := range s.nodes {
			if (n.pending || n.runs && n.cluster == "") && (next == nil || at(n) < at(next)) {
				next = n
			}
		}
		if next == nil {
			return errors.New("no node looks for a cluster, yet not done")
		}
		s.now = max(s.now, at(next))
		if s.now > simLimit {
			return fmt.Errorf("not done after %v", simLimit)
		}
		if next.pending {
			next.pending = false
			s.start(next)
			continue
		}
		s.round(next)
		next.nextRound = s.now + simInterval/2 + s.uniform(simInterval)
	}
	return nil
}

// allIn reports whether every node has started and is in a cluster.
func (s *sim) allIn() bool {
	for _, n := range s.nodes {
		if n.pending || n.runs && n.cluster == "" {
			return false
		}
	}
	return true
}

// simulate runs one seeded deployment and returns the first broken promise.
func simulate(seed uint64, setup simSetup) (s *sim, err error) {
	s = &sim{rng: rand.New(rand.NewPCG(seed, 29)), setup: setup, t0: time.Unix(0, 0)}
	// Five distinct addresses, in random order of their start.
	used := map[netip.AddrPort]bool{}
	newAddr := func() netip.AddrPort {
		for {
			a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + s.rng.IntN(20))}), 7946)
			if s.rng.IntN(3) == 0 {
				a = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 1}), uint16(7000+s.rng.IntN(20)))
			}
			if !used[a] {
				used[a] = true
				return a
			}
		}
	}
	for i := range simNodes {
		n := &simNode{name: fmt.Sprintf("n%d", i), addr: newAddr(), pending: true, startAt: s.uniform(setup.startSpread)}
		appear := max(0, n.startAt-s.uniform(setup.earlyAppear))
		if s.rng.IntN(2) == 0 {
			appear = n.startAt + s.uniform(setup.appearSpread)
		}
		s.nodes = append(s.nodes, n)
		s.addrs = append(s.addrs, &simAddr{addr: n.addr, appear: appear, node: n})
	}
	if err := s.runUntil(s.allIn); err != nil {
		return s, fmt.Errorf("the deployment: %w", err)
	}
	if err := s.oneCluster(); err != nil {
		return s, err
	}

	// A node restarts: at the same address, or at a new one while the old lingers in
	// discovery; its contacts fail for a while (its network is not ready).
	n := s.nodes[s.rng.IntN(simNodes)]
	n.runs = false
	s.logf("%s stops", n.name)
	s.now += s.uniform(3 * time.Second)
	if s.rng.IntN(2) == 0 {
		for _, a := range s.addrs {
			if a.addr == n.addr {
				a.node, a.vanish = nil, s.now+s.uniform(10*time.Second)
			}
		}
		n.addr = newAddr()
		s.addrs = append(s.addrs, &simAddr{addr: n.addr, appear: s.now + s.uniform(2*time.Second), node: n})
	}
	s.start(n)
	n.cutUntil = s.now + s.uniform(3*simStableMargin)
	s.logf("%s's contacts fail until %.3fs", n.name, n.cutUntil.Seconds())
	if err := s.runUntil(s.allIn); err != nil {
		return s, fmt.Errorf("the restart: %w", err)
	}
	return s, s.oneCluster()
}

// oneCluster checks that exactly one cluster was formed and every running node is in
// it.
func (s *sim) oneCluster() error {
	if len(s.formed) != 1 {
		return fmt.Errorf("%d clusters formed: %v", len(s.formed), s.formed)
	}
	for _, n := range s.nodes {
		if n.runs && n.cluster != s.formed[0] {
			return fmt.Errorf("%s is in cluster %q, not %s", n.name, n.cluster, s.formed[0])
		}
	}
	return nil
}

// Hundreds of seeded deployments of five nodes: exactly one cluster forms and every
// node ends in it, also after a node restarts into it. A failing seed reproduces its
// run: the history of the run is printed.
func TestBootstrapSimulation(t *testing.T) {
	const seeds = 400
	for name, setup := range simSetups {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(seeds) {
				s, err := simulate(seed, setup)
				if err != nil {
					t.Fatalf("seed %d: %v\n%s", seed, err, joinLines(s.history))
				}
			}
		})
	}
}

func joinLines(ls []string) string {
	out := ""
	for _, l := range ls {
		out += l + "\n"
	}
	return out
}
