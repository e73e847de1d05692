package routing

import (
	"slices"
	"testing"

	"github.com/troupe-go/troupe/member"
)

func TestClusterViewAvailableMembers(t *testing.T) {
	addr := func(n string) member.UniqueAddress { return member.UniqueAddress{Addr: "troupe://s@" + n, UID: 1} }
	m := func(n string, st member.MemberStatus, roles ...string) member.Member {
		return member.Member{Unique: addr(n), Status: st, Roles: roles}
	}
	names := func(us []member.UniqueAddress) []string {
		out := []string{}
		for _, u := range us {
			out = append(out, u.Addr[len("troupe://s@"):])
		}
		return out
	}
	v := newClusterView("w", addr("a"), true)
	steps := []struct {
		ev      any
		changed bool
		want    []string
	}{
		{member.CurrentClusterState{
			Members:     []member.Member{m("a", member.Up, "w"), m("b", member.Up), m("c", member.Up, "w"), m("d", member.Joining, "w"), m("e", member.Up, "w")},
			Unreachable: []member.Member{m("e", member.Up, "w")},
		}, true, []string{"a", "c"}},
		{member.MemberUp{Member: m("d", member.Up, "w")}, true, []string{"a", "c", "d"}},
		{member.UnreachableMember{Member: m("c", member.Up, "w")}, true, []string{"a", "d"}},
		{member.ReachableMember{Member: m("c", member.Up, "w")}, true, []string{"a", "c", "d"}},
		{member.ReachableMember{Member: m("e", member.Up, "w")}, true, []string{"a", "c", "d", "e"}},
		{member.MemberLeft{Member: m("d", member.Leaving, "w")}, true, []string{"a", "c", "e"}},
		{member.MemberDowned{Member: m("e", member.Down, "w")}, true, []string{"a", "c"}},
		{member.MemberRemoved{Member: m("e", member.Removed, "w")}, true, []string{"a", "c"}},
		{member.OldestChanged{}, false, []string{"a", "c"}},
		{"not an event", false, []string{"a", "c"}},
	}
	for i, s := range steps {
		if got := v.apply(s.ev); got != s.changed {
			t.Fatalf("step %d (%T): changed %v, want %v", i, s.ev, got, s.changed)
		}
		if got := names(v.available()); !slices.Equal(got, s.want) {
			t.Fatalf("step %d (%T): available %v, want %v", i, s.ev, got, s.want)
		}
	}
	// Without the local member, and without a role filter.
	v = newClusterView("", addr("a"), false)
	v.apply(member.CurrentClusterState{Members: []member.Member{m("a", member.Up), m("b", member.Up, "x")}})
	if got := names(v.available()); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("excluding self: %v", got)
	}
}
