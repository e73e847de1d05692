package cluster

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/discovery"
)

func addrs(ss ...string) []netip.AddrPort {
	out := make([]netip.AddrPort, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddrPort(s)
	}
	return out
}

func TestBootstrapPlan(t *testing.T) {
	t0 := time.Unix(1000, 0)
	three := addrs("10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946")
	lowest := netip.MustParseAddrPort("10.0.0.1:7946")
	plan := func(self netip.AddrPort, lookups ...func(p *bootstrapPlan)) *bootstrapPlan {
		p := &bootstrapPlan{self: self, required: 3, stableMargin: 5 * time.Second}
		for _, l := range lookups {
			l(p)
		}
		return p
	}
	seen := func(at time.Duration, points []netip.AddrPort) func(*bootstrapPlan) {
		return func(p *bootstrapPlan) { p.observe(t0.Add(at), points, nil) }
	}
	failed := func(at time.Duration) func(*bootstrapPlan) {
		return func(p *bootstrapPlan) { p.observe(t0.Add(at), nil, errors.New("dns down")) }
	}
	cases := []struct {
		name string
		plan *bootstrapPlan
		view joinView
		want joinStep
		why  string // a part of the reason for waiting
	}{
		{"a contact point is in a cluster: join at once, before any stability",
			plan(lowest, seen(0, three)), joinView{answered: 1, cluster: "c1"}, joinAdopt, ""},
		{"a cluster is joined even when no lookup succeeded",
			plan(lowest, failed(0)), joinView{cluster: "c1"}, joinAdopt, ""},
		{"the lowest, stable, all answered, none in a cluster: form",
			plan(lowest, seen(0, three), seen(5*time.Second, three)), joinView{answered: 2}, joinFound, ""},
		{"no lookup succeeded yet",
			plan(lowest, failed(0)), joinView{}, joinRetry, "no lookup"},
		{"not stable for long enough",
			plan(lowest, seen(0, three), seen(4*time.Second, three)), joinView{answered: 2}, joinRetry, "stable for 4s"},
		{"the set changed: the margin restarts",
			plan(lowest, seen(0, three[:2]), seen(3*time.Second, three), seen(7*time.Second, three)), joinView{answered: 2}, joinRetry, "stable for 4s"},
		{"a failed lookup restarts the margin",
			plan(lowest, seen(0, three), failed(3*time.Second), seen(6*time.Second, three)), joinView{answered: 2}, joinRetry, "stable for 3s"},
		{"a failed lookup as the last one: never form on it",
			plan(lowest, seen(0, three), failed(9*time.Second)), joinView{answered: 2}, joinRetry, "stable for 0s"},
		{"after a failed lookup, a whole margin of success: form",
			plan(lowest, seen(0, three), failed(3*time.Second), seen(8*time.Second, three)), joinView{answered: 2}, joinFound, ""},
		{"too few contact points",
			plan(lowest, seen(0, three[:2]), seen(10*time.Second, three[:2])), joinView{answered: 1}, joinRetry, "3 required"},
		{"not the lowest: never form",
			plan(three[1], seen(0, three), seen(10*time.Second, three)), joinView{answered: 2}, joinRetry, "waiting for 10.0.0.1:7946"},
		{"this node not among the contact points: never form",
			plan(netip.MustParseAddrPort("10.0.0.0:7946"), seen(0, three), seen(10*time.Second, three)), joinView{answered: 3}, joinRetry, "not among"},
		{"a contact point did not answer: never form",
			plan(lowest, seen(0, three), seen(10*time.Second, three)), joinView{answered: 1}, joinRetry, "1 of the 2"},
	}
	for _, tc := range cases {
		step, why := tc.plan.next(tc.view)
		if step != tc.want {
			t.Errorf("%s: step %d, want %d (why: %v)", tc.name, step, tc.want, why)
			continue
		}
		if tc.why == "" && why != nil || tc.why != "" && (why == nil || !strings.Contains(why.Error(), tc.why)) {
			t.Errorf("%s: why %v, want it to say %q", tc.name, why, tc.why)
		}
	}
	p := plan(three[1], seen(0, three))
	if got := p.others(); !slices.Equal(got, []netip.AddrPort{three[0], three[2]}) {
		t.Errorf("others %v", got)
	}
}

func TestContactPoints(t *testing.T) {
	self := netip.MustParseAddrPort("10.0.0.2:7946")
	hosts := map[string][]netip.Addr{
		"self":  {netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.2")}, // this node, under a name with two addresses
		"multi": {netip.MustParseAddr("10.0.0.8"), netip.MustParseAddr("10.0.0.7")},
		"v6":    {netip.MustParseAddr("::ffff:10.0.0.5")},
	}
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := hosts[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	got, err := contactPoints(context.Background(), []discovery.Target{
		{Host: "10.0.0.3"}, {Host: "self"}, {Host: "multi", Port: 7000}, {Host: "v6"},
		{Host: "::ffff:10.0.0.1"}, {Host: "10.0.0.3", Port: 7946}, {Host: "fe80::1"},
	}, self, resolve)
	if err != nil {
		t.Fatal(err)
	}
	want := addrs("10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946", "10.0.0.5:7946", "10.0.0.7:7000", "[fe80::1]:7946")
	if !slices.Equal(got, want) {
		t.Fatalf("contact points %v, want %v", got, want)
	}
	if _, err := contactPoints(context.Background(), []discovery.Target{{Host: "10.0.0.3"}, {Host: "nowhere"}}, self, resolve); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("an unresolvable host: error %v", err)
	}
	if _, err := contactPoints(context.Background(), []discovery.Target{{Host: "10.0.0.3", Port: 70000}}, self, resolve); err == nil {
		t.Fatal("a port out of range was taken")
	}
}

func TestBootstrapConfigValidate(t *testing.T) {
	d := discovery.Discovery(fakeLookup{})
	ok := BootstrapConfig{Discovery: d, Lookup: discovery.Lookup{Service: "shop"}}
	if err := (Config{Bootstrap: ok}).Validate(); err != nil {
		t.Fatal(err)
	}
	if b := ok.withDefaults(); b.RequiredContactPoints != 2 || b.StableMargin != 5*time.Second ||
		b.LookupInterval != time.Second || b.LookupTimeout != 3*time.Second {
		t.Fatalf("defaults %+v", b)
	}
	bad := []Config{
		{Bootstrap: ok, SeedNodes: []string{"10.0.0.1:7946"}},
		{Bootstrap: BootstrapConfig{Discovery: d}},
		{Bootstrap: BootstrapConfig{Discovery: d, Lookup: ok.Lookup, RequiredContactPoints: -1}},
		{Bootstrap: BootstrapConfig{Discovery: d, Lookup: ok.Lookup, StableMargin: -1}},
		{Bootstrap: BootstrapConfig{Discovery: d, Lookup: ok.Lookup, LookupInterval: -1}},
		{Bootstrap: BootstrapConfig{Discovery: d, Lookup: ok.Lookup, LookupTimeout: -1}},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("config %d: %v, want ErrInvalidConfig", i, err)
		}
	}
}

type fakeLookup struct{}

func (fakeLookup) Lookup(context.Context, discovery.Lookup) ([]discovery.Target, error) {
	return nil, nil
}
