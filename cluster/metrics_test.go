package cluster_test

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/metrictest"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
	"go.opentelemetry.io/otel/attribute"
)

// The survivors of a crash count their resolver's decision, and the node that decides
// tells its subscribers (a DowningDecision before the MemberDowned it causes).
func TestMetricsCountMembersByStatusAndDowningDecisions(t *testing.T) {
	readers := []*metrictest.Reader{metrictest.NewReader(t), metrictest.NewReader(t), metrictest.NewReader(t)}
	c := multinode.Start(t, multinode.Options{Nodes: 3, StableAfter: 1400 * time.Millisecond,
		ConfigureSystem: func(i int, ac *actor.Config) { ac.MeterProvider = readers[i].Provider }})
	status := func(s string) attribute.KeyValue { return attribute.String("status", s) }
	for i, m := range readers {
		ms := m.Collect()
		members := m.Metric(ms, "troupe.cluster.members", "{member}")
		for s, want := range map[string]int64{"up": 3, "joining": 0, "leaving": 0, "exiting": 0, "down": 0} {
			if got, ok := metrictest.IntValue(members, status(s)); !ok || got != want {
				t.Errorf("node %d: %s members %d (%v), want %d", i, s, got, ok, want)
			}
		}
		// A loaded machine may make a member unreachable for a moment: only the point
		// is checked.
		if _, ok := metrictest.IntValue(m.Metric(ms, "troupe.cluster.members.unreachable", "{member}")); !ok {
			t.Errorf("node %d: no unreachable members point", i)
		}
	}

	probes := make([]*testkit.Probe, 2)
	for i := range probes {
		probes[i] = testkit.NewProbe(t, c.Node(i).System)
		if err := c.Node(i).Cluster.Subscribe(probes[i].Ref()); err != nil {
			t.Fatal(err)
		}
	}
	crashed := c.Node(2).Cluster.SelfUniqueAddress()
	c.Crash(2)
	published := 0
	for i, p := range probes {
		var decision *cluster.DowningDecision
		p.FishForMessage(func(msg any) bool {
			switch m := msg.(type) {
			case cluster.DowningDecision:
				decision = &m
			case cluster.MemberDowned:
				if decision != nil && m.Member.Unique == crashed {
					published++
					if decision.Strategy != "keep-majority" || decision.Action != "down-unreachable" ||
						len(decision.Down) != 1 || decision.Down[0] != crashed || decision.Unstable {
						t.Errorf("node %d published %+v", i, *decision)
					}
				}
			case cluster.MemberRemoved:
				return m.Member.Unique == crashed
			}
			return false
		}, testkit.Dilated(20*time.Second))
	}
	if published == 0 {
		t.Error("no survivor published its downing decision before the member was downed")
	}
	for i := range 2 {
		c.Await(i, testkit.Dilated(15*time.Second), "two members", func(st cluster.CurrentClusterState) bool {
			return len(st.Members) == 2
		})
	}
	action := func(a string) []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("strategy", "keep-majority"), attribute.String("action", a)}
	}
	decided := int64(0)
	for i, m := range readers[:2] {
		ms := m.Collect()
		if got, _ := metrictest.IntValue(m.Metric(ms, "troupe.cluster.members", "{member}"), status("up")); got != 2 {
			t.Errorf("node %d: %d members up after the crash, want 2", i, got)
		}
		d := m.Metric(ms, "troupe.cluster.downing.decisions", "{decision}")
		n, ok := metrictest.IntValue(d, action("down-unreachable")...)
		if !ok {
			t.Errorf("node %d: no down-unreachable point", i)
		}
		decided += n
		for _, a := range []string{"down-reachable", "down-all"} {
			if got, _ := metrictest.IntValue(d, action(a)...); got != 0 {
				t.Errorf("node %d: %d %s decisions", i, got, a)
			}
		}
	}
	if decided == 0 {
		t.Error("no down-unreachable decision counted on the surviving nodes")
	}
}
