package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/troupe-go/troupe/discovery"
	"go.uber.org/zap"
)

// Bootstrap by discovery, as Akka's Cluster Bootstrap: every LookupInterval a node
// looks its contact points up and contacts each of them (serf.Join, as with seed
// nodes), which tells it whether any of them is in a cluster. If one is, the node
// joins that cluster at once. If none is, only the contact point with the lowest
// address forms a cluster, and only when the set has not changed for StableMargin, holds
// at least RequiredContactPoints, includes this node, and every other contact point
// answered this round; the others go on and join it. Nodes that see the same set
// agree on its lowest address, so one deployment forms one cluster, provided every
// node has seen the whole set before any set stays unchanged for StableMargin, which
// RequiredContactPoints equal to the replica count guarantees.

// bootstrapPlan decides, round by round, whether a node bootstrapping by discovery
// joins a cluster, forms one or keeps looking. It holds no I/O and takes time as an
// input: observe records each lookup, next decides on what contacting the contact
// points found.
//
// A failed lookup keeps the last set of contact points (they are still contacted,
// and a cluster found through them is still joined) but restarts the stable margin:
// the set must then be seen unchanged, by lookups that succeed, for a whole
// StableMargin again.
type bootstrapPlan struct {
	self         netip.AddrPort // this node's advertised gossip address
	required     int            // RequiredContactPoints
	stableMargin time.Duration

	looked      bool             // a lookup has succeeded
	points      []netip.AddrPort // the contact points of the last successful lookup, sorted, distinct
	stableSince time.Time        // when points last changed, or a lookup last failed
	lastLookup  time.Time        // when the last lookup was made
}

// observe records the lookup made at now: the contact points it found (sorted and
// distinct, as contactPoints returns them), or its error.
func (p *bootstrapPlan) observe(now time.Time, points []netip.AddrPort, err error) {
	p.lastLookup = now
	switch {
	case err != nil:
		p.stableSince = now
	case !p.looked || !slices.Equal(points, p.points):
		p.looked, p.points, p.stableSince = true, points, now
	}
}

// others returns the contact points other than this node: the ones to contact.
func (p *bootstrapPlan) others() []netip.AddrPort {
	return slices.DeleteFunc(slices.Clone(p.points), func(a netip.AddrPort) bool { return a == p.self })
}

// next returns the step after contacting the contact points, which found v
// (v.answered counts the other contact points that answered), and, when the step is
// joinRetry, why this node does not form a cluster yet.
func (p *bootstrapPlan) next(v joinView) (joinStep, error) {
	stable := p.lastLookup.Sub(p.stableSince)
	switch {
	case v.cluster != "":
		return joinAdopt, nil
	case !p.looked:
		return joinRetry, errors.New("no lookup of the contact points has succeeded yet")
	case !slices.Contains(p.points, p.self):
		return joinRetry, fmt.Errorf("this node's gossip address %s is not among the contact points discovered (%s)",
			p.self, joinAddrs(p.points))
	case len(p.points) < p.required:
		return joinRetry, fmt.Errorf("%d contact points discovered (%s), %d required to form a cluster",
			len(p.points), joinAddrs(p.points), p.required)
	case p.points[0] != p.self:
		return joinRetry, fmt.Errorf("no contact point is in a cluster yet; waiting for %s, the lowest address, to form one",
			p.points[0])
	case stable < p.stableMargin:
		return joinRetry, fmt.Errorf("the contact points have been stable for %v, %v required to form a cluster",
			stable.Round(time.Millisecond), p.stableMargin)
	case v.answered < len(p.points)-1:
		return joinRetry, fmt.Errorf("%d of the %d other contact points answered; all must before this node forms a cluster",
			v.answered, len(p.points)-1)
	default:
		return joinFound, nil
	}
}

// joinAddrs formats addresses for a message.
func joinAddrs(as []netip.AddrPort) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// resolveFunc resolves a host name to its IP addresses.
type resolveFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// contactPoints maps the targets of a lookup to gossip addresses, sorted (in
// netip.AddrPort's order: IPv4 before IPv6, then by address, then by port) and
// distinct, so that every node that sees the same targets computes the same set and
// the same lowest address. A target without a port has this node's gossip port. A
// target's host that is an IP address is taken as it is (an IPv4-mapped IPv6 address
// as IPv4); a host name is resolved, and stands for this node when one of its
// addresses is this node's advertised one (with the same port), else for the lowest of
// its addresses. A host name that does not resolve fails the whole lookup: a partial
// set must not look stable.
func contactPoints(ctx context.Context, targets []discovery.Target, self netip.AddrPort, resolve resolveFunc) ([]netip.AddrPort, error) {
	out := make([]netip.AddrPort, 0, len(targets))
	for _, t := range targets {
		port := self.Port()
		if t.Port != 0 {
			if t.Port < 0 || t.Port > 65535 {
				return nil, fmt.Errorf("contact point %s: port out of range", t)
			}
			port = uint16(t.Port)
		}
		if a, err := netip.ParseAddr(t.Host); err == nil {
			out = append(out, netip.AddrPortFrom(a.Unmap().WithZone(""), port))
			continue
		}
		addrs, err := resolve(ctx, t.Host)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		if err != nil {
			return nil, fmt.Errorf("contact point %s: resolving %q: %w", t, t.Host, err)
		}
		best := netip.Addr{}
		for _, a := range addrs {
			a = a.Unmap().WithZone("")
			if netip.AddrPortFrom(a, port) == self {
				best = a
				break
			}
			if !best.IsValid() || a.Less(best) {
				best = a
			}
		}
		out = append(out, netip.AddrPortFrom(best, port))
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out), nil
}

// resolveHost resolves a host name with the default resolver.
func resolveHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// selfGossipAddr returns this node's advertised gossip address.
func (c *Cluster) selfGossipAddr() netip.AddrPort {
	m := c.serf.LocalMember()
	a, _ := netip.AddrFromSlice(m.Addr)
	return netip.AddrPortFrom(a.Unmap(), m.Port)
}

// joinDiscovery runs bootstrap by discovery (bootstrapPlan) until this node has
// joined a cluster or formed one, or stops. It never gives up, as Akka's bootstrap:
// JoinProgress and the log say why it waits.
func (c *Cluster) joinDiscovery() {
	defer c.wg.Done()
	b := c.cfg.Bootstrap
	plan := &bootstrapPlan{self: c.selfGossipAddr(), required: b.RequiredContactPoints, stableMargin: b.StableMargin}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a lookup in flight ends when the node stops
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	name := nodeName(c.self.Unique.Addr)
	c.runJoin("discovery", b.LookupInterval, func() joinOutcome {
		now := time.Now()
		points, lookupErr := c.lookupContactPoints(ctx, plan.self)
		plan.observe(now, points, lookupErr)
		others := plan.others()
		var v joinView
		var silent []string
		var contactErr error
		for _, a := range others {
			n, err := c.serf.Join([]string{a.String()}, true)
			if n == 0 {
				silent = append(silent, a.String())
				contactErr = err
			}
			v.answered += n
		}
		v.cluster = seenCluster(c.serf.Members(), name)
		step, why := plan.next(v)
		known := make([]string, len(plan.points))
		for i, a := range plan.points {
			known[i] = a.String()
		}
		c.mu.Lock()
		c.join.ContactPoints = known
		c.mu.Unlock()
		o := joinOutcome{step: step, cluster: v.cluster, fields: []zap.Field{
			zap.String("service", b.Lookup.Service), zap.Strings("contact_points", known),
			zap.Int("answered", v.answered),
		}}
		switch {
		case lookupErr != nil:
			o.err = fmt.Errorf("looking up the contact points of %q: %w", b.Lookup.Service, lookupErr)
		case len(silent) > 0 && why != nil:
			if contactErr == nil {
				contactErr = errors.New("no answer")
			}
			o.err = fmt.Errorf("%d of %d contact points did not answer (%s: %w); %w",
				len(silent), len(others), strings.Join(silent, ", "), contactErr, why)
		default:
			o.err = why
		}
		if step == joinFound {
			o.formed = fmt.Sprintf("formed a new cluster: this node has the lowest address of %d contact points, unchanged for at least %v, all answered, none in a cluster",
				len(plan.points), b.StableMargin)
		}
		return o
	})
}

// lookupContactPoints looks the contact points up, bounded by LookupTimeout.
func (c *Cluster) lookupContactPoints(ctx context.Context, self netip.AddrPort) ([]netip.AddrPort, error) {
	b := c.cfg.Bootstrap
	ctx, cancel := context.WithTimeout(ctx, b.LookupTimeout)
	defer cancel()
	targets, err := b.Discovery.Lookup(ctx, b.Lookup)
	if err != nil {
		return nil, err
	}
	return contactPoints(ctx, targets, self, resolveHost)
}
