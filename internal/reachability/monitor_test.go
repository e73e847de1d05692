package reachability

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
)

func testMonitorConfig() MonitorConfig {
	return MonitorConfig{
		Interval:        100 * time.Millisecond,
		AcceptablePause: 300 * time.Millisecond,
		Threshold:       8,
		MinStdDeviation: 20 * time.Millisecond,
		ExpectedFirst:   200 * time.Millisecond,
		Monitors:        3,
		MaxSamples:      100,
	}
}

func TestRing(t *testing.T) {
	var members []member.UniqueAddress
	for i := range 10 {
		members = append(members, ua(fmt.Sprintf("10.0.0.%d:2552", i)))
	}
	none := func(member.UniqueAddress) bool { return false }
	watchedBy := make(map[member.UniqueAddress]int)
	for _, self := range members {
		got := Ring(self, members, none, 3)
		if len(got) != 3 || slices.Contains(got, self) {
			t.Fatalf("%s monitors %v", self, got)
		}
		for _, u := range got {
			watchedBy[u]++
		}
	}
	for _, u := range members {
		if watchedBy[u] != 3 {
			t.Errorf("%s is watched by %d members, want 3", u, watchedBy[u])
		}
	}
	// Unreachable members met on the way stay monitored, and more are added until
	// three reachable ones are.
	self := members[0]
	plain := Ring(self, members, none, 3)
	down := func(u member.UniqueAddress) bool { return u == plain[0] || u == plain[1] }
	got := Ring(self, members, down, 3)
	if len(got) != 5 {
		t.Fatalf("with two unreachable: %v", got)
	}
	for _, u := range plain {
		if !slices.Contains(got, u) {
			t.Errorf("%s dropped from %v", u, got)
		}
	}
	if got := Ring(self, members[:3], none, 5); len(got) != 2 {
		t.Errorf("three members: %v", got)
	}
	if got := Ring(self, nil, none, 5); len(got) != 0 {
		t.Errorf("alone: %v", got)
	}
}

func TestMonitorDetectsAStopAndARecovery(t *testing.T) {
	cfg := testMonitorConfig()
	m, err := NewMonitor(cfg, ua("self"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	b, c := ua("b"), ua("c")
	m.SetTargets([]member.UniqueAddress{c, b, ua("self")}, t0)
	if got := m.Targets(); !slices.Equal(got, []member.UniqueAddress{b, c}) {
		t.Fatalf("targets %v", got)
	}
	// Both answer every interval with a 5 ms round trip, for two seconds.
	now := t0
	for i := range 20 {
		sent := t0.Add(time.Duration(i) * cfg.Interval)
		now = sent.Add(5 * time.Millisecond)
		for _, u := range []member.UniqueAddress{b, c} {
			if !m.Response(u, sent, now) {
				t.Fatalf("answer %d from %s did not count", i, u)
			}
		}
		if down, up := m.Check(now); len(down)+len(up) > 0 {
			t.Fatalf("change %v %v while answering", down, up)
		}
	}
	// c stops answering; b goes on.
	lastC := now
	var detected time.Time
	for i := 20; detected.IsZero() && i < 60; i++ {
		sent := t0.Add(time.Duration(i) * cfg.Interval)
		next, ok := m.NextCheck()
		if !ok {
			t.Fatal("no next check")
		}
		if next.Before(sent) {
			// The detector says c crosses the threshold before the next heartbeat:
			// check exactly then.
			if down, _ := m.Check(next.Add(-2 * time.Millisecond)); len(down) > 0 {
				t.Fatalf("unreachable before NextCheck: %v", down)
			}
			if down, _ := m.Check(next); slices.Equal(down, []member.UniqueAddress{c}) {
				detected = next
				break
			}
		}
		now = sent.Add(5 * time.Millisecond)
		m.Response(b, sent, now)
		if down, _ := m.Check(now); len(down) > 0 {
			if !slices.Equal(down, []member.UniqueAddress{c}) {
				t.Fatalf("unreachable %v", down)
			}
			detected = now
		}
	}
	earliest, latest := cfg.DetectionWindow()
	took := detected.Sub(lastC)
	if took < earliest || took > latest {
		t.Fatalf("detected after %v, want within [%v, %v]", took, earliest, latest)
	}
	if !slices.Equal(m.Unreachable(), []member.UniqueAddress{c}) {
		t.Fatalf("Unreachable %v", m.Unreachable())
	}
	// An answer to a heartbeat sent long ago (a backlog) does not count.
	if m.Response(c, lastC.Add(time.Millisecond), detected.Add(time.Second)) {
		t.Fatal("stale answer counted")
	}
	// A fresh answer brings it back.
	back := detected.Add(time.Second)
	if !m.Response(c, back.Add(-5*time.Millisecond), back) {
		t.Fatal("fresh answer did not count")
	}
	if m.Response(c, back.Add(-6*time.Millisecond), back) {
		t.Fatal("an answer older than one that counted, counted")
	}
	if _, up := m.Check(back); !slices.Equal(up, []member.UniqueAddress{c}) {
		t.Fatalf("reachable %v", up)
	}
	// The long gap was not learned: steady answers again, then a stop, is detected as
	// fast as the first time.
	now = back
	for i := 1; i <= 20; i++ {
		now = back.Add(time.Duration(i) * cfg.Interval)
		m.Response(c, now.Add(-5*time.Millisecond), now)
	}
	m.Check(now)
	if next, _ := m.NextCheck(); next.Sub(now) > latest {
		t.Fatalf("after the gap, detection takes %v, want at most %v", next.Sub(now), latest)
	}
}

func TestMonitorFirstHeartbeatGrace(t *testing.T) {
	cfg := testMonitorConfig()
	m, _ := NewMonitor(cfg, ua("self"))
	t0 := time.Unix(1000, 0)
	d := ua("d")
	m.SetTargets([]member.UniqueAddress{d}, t0)
	next, ok := m.NextCheck()
	if !ok || !next.Equal(t0.Add(cfg.ExpectedFirst)) {
		t.Fatalf("NextCheck = %v %v, want the end of the grace", next, ok)
	}
	if down, _ := m.Check(next); len(down) > 0 {
		t.Fatal("unreachable at the end of the grace")
	}
	// It never answers: unreachable within the detection window after the grace.
	next, _ = m.NextCheck()
	_, latest := cfg.DetectionWindow()
	if next.After(t0.Add(cfg.ExpectedFirst + latest)) {
		t.Fatalf("never-answering member detected only at %v", next.Sub(t0))
	}
	if down, _ := m.Check(next); !slices.Equal(down, []member.UniqueAddress{d}) {
		t.Fatalf("Check at NextCheck: %v", down)
	}
	if _, ok := m.NextCheck(); ok {
		t.Fatal("a next check with every member unreachable")
	}
	// Forgetting the member forgets its state.
	m.SetTargets(nil, next)
	if len(m.Targets()) != 0 || len(m.Unreachable()) != 0 || m.Response(d, next, next) {
		t.Fatal("forgotten member still monitored")
	}
}

func TestMonitorConfigValidate(t *testing.T) {
	bad := testMonitorConfig()
	bad.Monitors = 0
	if _, err := NewMonitor(bad, ua("a")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Monitors 0: %v", err)
	}
}

// The wait for a late first answer is not learned as an interval: once answers come
// steadily, a stop is detected as fast as for a member that answered at once.
func TestMonitorLateFirstAnswerIsNotLearned(t *testing.T) {
	cfg := testMonitorConfig()
	m, _ := NewMonitor(cfg, ua("self"))
	t0 := time.Unix(1000, 0)
	d := ua("d")
	m.SetTargets([]member.UniqueAddress{d}, t0)
	m.Check(t0.Add(cfg.ExpectedFirst)) // starts the detector as if d had answered
	first := t0.Add(cfg.ExpectedFirst + cfg.AcceptablePause/2)
	now := first
	for i := range 10 {
		now = first.Add(time.Duration(i) * cfg.Interval)
		m.Response(d, now.Add(-time.Millisecond), now)
	}
	m.Check(now)
	_, latest := cfg.DetectionWindow()
	if next, _ := m.NextCheck(); next.Sub(now) > latest {
		t.Fatalf("detection takes %v after steady answers, want at most %v", next.Sub(now), latest)
	}
}
