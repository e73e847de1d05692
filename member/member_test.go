package member

import (
	"testing"
)

func TestMemberStatusString(t *testing.T) {
	for s, want := range map[MemberStatus]string{
		0: "Unknown", Joining: "Joining", Up: "Up", Leaving: "Leaving", Exiting: "Exiting",
		Down: "Down", Removed: "Removed", 42: "Unknown",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(s), got, want)
		}
	}
}

func TestCanMoveTo(t *testing.T) {
	legal := map[[2]MemberStatus]bool{
		{Joining, Up}: true, {Joining, Leaving}: true, {Joining, Exiting}: true, {Joining, Down}: true,
		{Up, Leaving}: true, {Up, Exiting}: true, {Up, Down}: true,
		{Leaving, Exiting}: true, {Leaving, Down}: true,
		{Exiting, Down}: true, {Exiting, Removed}: true,
		{Down, Removed}: true,
	}
	all := []MemberStatus{0, Joining, Up, Leaving, Exiting, Down, Removed, 9}
	for _, from := range all {
		for _, to := range all {
			if got, want := from.CanMoveTo(to), legal[[2]MemberStatus{from, to}]; got != want {
				t.Errorf("%s.CanMoveTo(%s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestCompareAddress(t *testing.T) {
	tests := []struct {
		name string
		a, b UniqueAddress
		want int
	}{
		{"IPs by address", ua("10.0.0.1:2552"), ua("10.0.0.2:2552"), -1},
		{"IPs as numbers, not strings", ua("10.0.0.9:2552"), ua("10.0.0.10:2552"), -1},
		{"ports as numbers", ua("h:9"), ua("h:10"), -1},
		{"host before port", ua("a:9999"), ua("b:1"), -1},
		{"full addresses by port", ua("troupe://s@h:2552"), ua("troupe://s@h:2553"), -1},
		{"port before system name", ua("troupe://node3@127.0.0.1:4000"), ua("troupe://node0@127.0.0.1:5000"), -1},
		{"host before system name", ua("troupe://z@10.0.0.1:9"), ua("troupe://a@10.0.0.2:1"), -1},
		{"system name after port", ua("troupe://a@127.0.0.1:5000"), ua("troupe://b@127.0.0.1:5000"), -1},
		{"IPv4 before IPv6", ua("troupe://s@255.255.255.255:1"), ua("troupe://s@[::1]:1"), -1},
		{"IPv6 by bytes", ua("troupe://s@[::1]:2"), ua("troupe://s@[fe80::1]:1"), -1},
		{"IPv4-mapped IPv6 is its IPv4 address", ua("troupe://s@[::ffff:10.0.0.1]:9"), ua("troupe://s@10.0.0.2:1"), -1},
		{"IPs before host names", ua("troupe://s@192.168.1.1:1"), ua("troupe://s@a.example:1"), -1},
		{"host names as strings", ua("troupe://s@a.example:2"), ua("troupe://s@b.example:1"), -1},
		{"without a port after every address with one", ua("troupe://s@z.example:65535"), ua("a"), -1},
		{"without a port as strings", ua("noport"), ua("noport2"), -1},
		{"the same host and port in two spellings", ua("10.0.0.1:1"), ua("troupe://s@10.0.0.1:1"), -1},
		{"uid last", UniqueAddress{"h:1", 1}, UniqueAddress{"h:1", 2}, -1},
		{"equal", ua("troupe://s@h:1"), ua("troupe://s@h:1"), 0},
	}
	for _, tt := range tests {
		if got := CompareAddress(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: CompareAddress(%s, %s) = %d, want %d", tt.name, tt.a, tt.b, got, tt.want)
		}
		if got := tt.b.Compare(tt.a); got != -tt.want {
			t.Errorf("%s: CompareAddress(%s, %s) = %d, want %d", tt.name, tt.b, tt.a, got, -tt.want)
		}
	}
}

// TestCompareAddressIsATotalOrder checks, over addresses of every shape, that the order
// is antisymmetric and transitive and that only equal addresses compare equal: a sort
// by it is the same on every node.
func TestCompareAddressIsATotalOrder(t *testing.T) {
	var us []UniqueAddress
	for _, addr := range []string{
		"troupe://node0@127.0.0.1:5000", "troupe://node3@127.0.0.1:4000", "troupe://node1@127.0.0.1:4000",
		"troupe://a@10.0.0.10:1", "troupe://a@10.0.0.9:1", "troupe://a@[::1]:1", "troupe://a@[::ffff:10.0.0.9]:1",
		"troupe://a@host.example:1", "troupe://a@Host.example:1", "10.0.0.9:1", "h:10", "h:9",
		"noport", "troupe://a@host.example:x", "troupe://a@:1", "", "[::1]:1", "troupe://a@[fe80::1%eth0]:1",
	} {
		us = append(us, UniqueAddress{Addr: addr, UID: 1}, UniqueAddress{Addr: addr, UID: 2})
	}
	for _, a := range us {
		for _, b := range us {
			ab, ba := CompareAddress(a, b), CompareAddress(b, a)
			if ab != -ba || (ab == 0) != (a == b) {
				t.Fatalf("CompareAddress(%v, %v) = %d, reverse %d", a, b, ab, ba)
			}
			for _, c := range us {
				if ab < 0 && CompareAddress(b, c) < 0 && CompareAddress(a, c) >= 0 {
					t.Fatalf("not transitive: %v < %v < %v but not %v < %v", a, b, c, a, c)
				}
			}
		}
	}
}

func TestIsOlderThan(t *testing.T) {
	tests := []struct {
		name string
		a, b Member
		want bool
	}{
		{"lower up-number", mem("b:1", Up, 5), mem("a:1", Up, 6), true},
		{"higher up-number", mem("a:1", Up, 6), mem("b:1", Up, 5), false},
		{"tie: lower address", mem("a:1", Up, 5), mem("b:1", Up, 5), true},
		{"tie: higher address", mem("b:1", Up, 5), mem("a:1", Up, 5), false},
		{"no age is youngest", mem("a:1", Joining, 0), mem("b:1", Up, 100), false},
		{"any age beats none", mem("b:1", Up, 100), mem("a:1", Joining, 0), true},
		{"itself", mem("a:1", Up, 5), mem("a:1", Up, 5), false},
	}
	for _, tt := range tests {
		if got := tt.a.IsOlderThan(tt.b); got != tt.want {
			t.Errorf("%s: IsOlderThan = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOldest(t *testing.T) {
	members := []Member{
		mem("a:1", Joining, 0, "x"),
		mem("b:1", Exiting, 1, "x"), // Exiting: dropped
		mem("c:1", Down, 2, "x"),    // Down: dropped
		mem("d:1", Leaving, 4, "y"),
		mem("e:1", Up, 3, "x"),
		mem("f:1", Up, 5, "x", "y"),
	}
	tests := []struct {
		role string
		want string
	}{
		{"", "e:1"},
		{"x", "e:1"},
		{"y", "d:1"},
		{"z", ""},
	}
	for _, tt := range tests {
		got, ok := Oldest(members, tt.role)
		if tt.want == "" {
			if ok {
				t.Errorf("Oldest(%q) = %s, want none", tt.role, got.Unique)
			}
			continue
		}
		if !ok || got.Unique.Addr != tt.want {
			t.Errorf("Oldest(%q) = %s %v, want %s", tt.role, got.Unique, ok, tt.want)
		}
	}
	by := OldestByRole(members)
	if len(by) != 2 || by["x"].Unique.Addr != "e:1" || by["y"].Unique.Addr != "d:1" {
		t.Errorf("OldestByRole = %v", by)
	}
	sorted := []Member{mem("z:1", Up, 2), mem("y:1", Joining, 0), mem("x:1", Up, 2), mem("w:1", Up, 1)}
	SortByAge(sorted)
	var order string
	for _, m := range sorted {
		order += m.Unique.Addr + " "
	}
	if order != "w:1 x:1 z:1 y:1 " {
		t.Errorf("SortByAge order = %q", order)
	}
}

func TestHasRoleAndNormalizeRoles(t *testing.T) {
	m := Member{Roles: NormalizeRoles([]string{"web", "db", "web"})}
	if len(m.Roles) != 2 || m.Roles[0] != "db" || m.Roles[1] != "web" {
		t.Fatalf("NormalizeRoles = %q", m.Roles)
	}
	if !m.HasRole("db") || !m.HasRole("") || m.HasRole("x") {
		t.Errorf("HasRole wrong for %q", m.Roles)
	}
	if NormalizeRoles(nil) != nil {
		t.Errorf("NormalizeRoles(nil) is not nil")
	}
}

// ua returns the unique address "addr" with uid 1.
func ua(addr string) UniqueAddress { return UniqueAddress{Addr: addr, UID: 1} }

// mem returns a member at addr (uid 1) with the status, age and roles.
func mem(addr string, s MemberStatus, age int64, roles ...string) Member {
	return Member{Unique: ua(addr), Status: s, UpNumber: age, Roles: NormalizeRoles(roles)}
}
