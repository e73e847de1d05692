package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/internal/membership"
)

func TestJoinPlan(t *testing.T) {
	t0 := time.Unix(1000, 0)
	first := joinPlan{firstSeed: true, otherSeeds: 2, started: t0, seedTimeout: 5 * time.Second, joinTimeout: 30 * time.Second}
	other := first
	other.firstSeed = false
	alone := first
	alone.otherSeeds = 0
	cases := []struct {
		name string
		plan joinPlan
		at   time.Duration
		view joinView
		want joinStep
	}{
		{"the first seed finds a cluster through another seed: it joins", first, 0, joinView{answered: 1, cluster: "c1"}, joinAdopt},
		{"the first seed, before the timeout, one seed silent: it waits", first, 4 * time.Second, joinView{answered: 1}, joinRetry},
		{"the first seed, every other seed answered, none in a cluster: it forms one", first, 0, joinView{answered: 2}, joinFound},
		{"the first seed, no seed answered by the timeout: it forms one", first, 5 * time.Second, joinView{}, joinFound},
		{"the first seed finds a cluster at the timeout: it joins", first, 6 * time.Second, joinView{cluster: "c1"}, joinAdopt},
		{"the only seed forms a cluster at once", alone, 0, joinView{}, joinFound},
		{"another node finds a cluster: it joins", other, 0, joinView{answered: 1, cluster: "c1"}, joinAdopt},
		{"another node, every seed answered, none in a cluster: it waits", other, 0, joinView{answered: 2}, joinRetry},
		{"another node past the seed timeout never forms a cluster", other, 10 * time.Second, joinView{}, joinRetry},
		{"another node gives up after the join timeout", other, 30 * time.Second, joinView{answered: 2}, joinGiveUp},
	}
	for _, tc := range cases {
		if got := tc.plan.next(t0.Add(tc.at), tc.view); got != tc.want {
			t.Errorf("%s: step %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSeenCluster(t *testing.T) {
	m := func(name, id string, st serf.MemberStatus) serf.Member {
		tags := map[string]string{}
		if id != "" {
			tags[membership.TagCluster] = id
		}
		return serf.Member{Name: name, Tags: tags, Status: st}
	}
	cases := []struct {
		name    string
		members []serf.Member
		want    string
	}{
		{"nobody", nil, ""},
		{"only fresh nodes", []serf.Member{m("a", "", serf.StatusAlive), m("b", "", serf.StatusAlive)}, ""},
		{"self does not count", []serf.Member{m("self", "c9", serf.StatusAlive)}, ""},
		{"a failed member does not count", []serf.Member{m("a", "c1", serf.StatusFailed)}, ""},
		{"one cluster", []serf.Member{m("a", "c2", serf.StatusAlive), m("b", "", serf.StatusAlive)}, "c2"},
		{"the larger of two", []serf.Member{m("a", "c1", serf.StatusAlive), m("b", "c2", serf.StatusAlive), m("c", "c2", serf.StatusAlive)}, "c2"},
		{"the lower on a tie", []serf.Member{m("a", "c3", serf.StatusAlive), m("b", "c2", serf.StatusAlive)}, "c2"},
		{"a malformed identity does not count", []serf.Member{m("a", "bad id", serf.StatusAlive)}, ""},
	}
	for _, tc := range cases {
		if got := seenCluster(tc.members, "self"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewClusterIDsDiffer(t *testing.T) {
	a, b := newClusterID(), newClusterID()
	if a == b || len(a) != 16 {
		t.Fatalf("ids %q and %q", a, b)
	}
	if _, err := membership.ClusterOf(map[string]string{membership.TagCluster: a}); err != nil {
		t.Fatal(err)
	}
}

func TestLogEvery(t *testing.T) {
	l := logEvery{every: time.Minute}
	t0 := time.Unix(0, 0)
	if !l.due("a", t0) || l.due("a", t0.Add(time.Second)) || !l.due("b", t0.Add(time.Second)) || !l.due("a", t0.Add(time.Minute)) {
		t.Fatal("logEvery does not space its lines per key")
	}
}
