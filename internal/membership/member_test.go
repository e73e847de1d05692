package membership

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
		a, b UniqueAddress
		want int
	}{
		{ua("10.0.0.1:2552"), ua("10.0.0.2:2552"), -1},
		{ua("h:9"), ua("h:10"), -1}, // ports compare as numbers
		{ua("h:10"), ua("h:9"), 1},
		{ua("a:9999"), ua("b:1"), -1}, // host first
		{ua("troupe://s@h:2552"), ua("troupe://s@h:2553"), -1},
		{ua("noport"), ua("noport2"), -1},
		{UniqueAddress{"h:1", 1}, UniqueAddress{"h:1", 2}, -1}, // uid last
		{ua("h:1"), ua("h:1"), 0},
	}
	for _, tt := range tests {
		if got := CompareAddress(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareAddress(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := CompareAddress(tt.b, tt.a); got != -tt.want {
			t.Errorf("CompareAddress(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
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

func TestNextUpNumber(t *testing.T) {
	tests := []struct {
		name string
		now  int64
		seen []Member
		want int64
	}{
		{"clock when nothing seen", 1000, nil, 1000},
		{"clock above seen", 1000, []Member{mem("a:1", Up, 900)}, 1000},
		{"seen+1 when clock behind", 1000, []Member{mem("a:1", Up, 1200), mem("b:1", Up, 1100)}, 1201},
		{"equal to clock", 1000, []Member{mem("a:1", Up, 1000)}, 1001},
		{"never below 1", -5, nil, 1},
	}
	for _, tt := range tests {
		if got := NextUpNumber(tt.now, tt.seen); got != tt.want {
			t.Errorf("%s: NextUpNumber = %d, want %d", tt.name, got, tt.want)
		}
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
