package membership

import (
	"github.com/troupe-go/troupe/member"
	"slices"
	"testing"
	"time"
)

func TestMargins(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	removed := func(addr string, from member.MemberStatus) member.MemberRemoved {
		m := mem(addr, member.Removed, 1)
		return member.MemberRemoved{Member: m, PreviousStatus: from}
	}
	m := NewMargins(2 * time.Second)
	steps := []struct {
		name    string
		removed *member.MemberRemoved
		now     time.Duration
		want    []string
		pending []string
		next    time.Duration // -1: none
	}{
		{name: "nothing pending", now: 0, pending: nil, next: -1},
		{name: "a left gracefully: passes at once", removed: ptr(removed("a:1", member.Exiting)), now: 0,
			want: []string{"margin a:1 from Exiting"}, next: -1},
		{name: "b downed: waits", removed: ptr(removed("b:1", member.Down)), now: time.Second,
			pending: []string{"b:1"}, next: 3 * time.Second},
		{name: "c downed later", removed: ptr(removed("c:1", member.Down)), now: 2 * time.Second,
			pending: []string{"b:1", "c:1"}, next: 3 * time.Second},
		{name: "just before b's margin", now: 3*time.Second - time.Nanosecond,
			pending: []string{"b:1", "c:1"}, next: 3 * time.Second},
		{name: "b's margin passed", now: 3 * time.Second,
			want: []string{"margin b:1 from Down"}, pending: []string{"c:1"}, next: 4 * time.Second},
		{name: "late check: c passes too", now: 10 * time.Second,
			want: []string{"margin c:1 from Down"}, next: -1},
	}
	for _, s := range steps {
		var got []member.Event
		if s.removed != nil {
			got = m.Removed(*s.removed, at(s.now))
		} else {
			got = m.Due(at(s.now))
		}
		if d := describe(got); !slices.Equal(d, s.want) && !(len(d) == 0 && len(s.want) == 0) {
			t.Fatalf("%s: events %q, want %q", s.name, d, s.want)
		}
		var pending []string
		for _, p := range m.Pending() {
			pending = append(pending, p.Unique.Addr)
			if !m.IsPending(p.Unique) {
				t.Errorf("%s: IsPending(%s) false", s.name, p.Unique)
			}
		}
		if !slices.Equal(pending, s.pending) {
			t.Fatalf("%s: pending %q, want %q", s.name, pending, s.pending)
		}
		next, ok := m.Next()
		if s.next < 0 && ok || s.next >= 0 && (!ok || !next.Equal(at(s.next))) {
			t.Fatalf("%s: Next = %v %v, want %v", s.name, next, ok, s.next)
		}
	}
	if m.IsPending(ua("b:1")) {
		t.Error("b still pending")
	}
	// Without a margin a downed member passes at once.
	if got := describe(NewMargins(0).Removed(removed("d:1", member.Down), t0)); !slices.Equal(got, []string{"margin d:1 from Down"}) {
		t.Errorf("zero margin: %q", got)
	}
}

func ptr[T any](v T) *T { return &v }
