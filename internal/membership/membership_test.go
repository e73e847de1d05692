package membership

import (
	"errors"
	"github.com/troupe-go/troupe/member"
	"slices"
	"testing"
)

// step is one input to a Membership and what it must return.
type step struct {
	name string
	do   func(ms *Membership) ([]member.Event, error)
	want []string // described events, in order
	err  error
}

func observe(m member.Member) func(*Membership) ([]member.Event, error) {
	return func(ms *Membership) ([]member.Event, error) { return ms.Observe(m) }
}

func call(f func(*Membership, member.UniqueAddress) ([]member.Event, error), addr string) func(*Membership) ([]member.Event, error) {
	return func(ms *Membership) ([]member.Event, error) { return f(ms, ua(addr)) }
}

// run applies the steps in order to a fresh Membership of self.
func run(t *testing.T, cfg MembershipConfig, self member.Member, steps []step) *Membership {
	t.Helper()
	ms, err := NewMembership(cfg, self)
	if err != nil {
		t.Fatalf("NewMembership: %v", err)
	}
	for _, s := range steps {
		evs, err := s.do(ms)
		if s.err != nil {
			if !errors.Is(err, s.err) {
				t.Fatalf("%s: err = %v, want %v", s.name, err, s.err)
			}
		} else if err != nil {
			t.Fatalf("%s: unexpected error %v", s.name, err)
		}
		if got := describe(evs); !slices.Equal(got, s.want) {
			t.Fatalf("%s:\n got  %q\n want %q", s.name, got, s.want)
		}
	}
	return ms
}

// upCluster returns steps that bring b:1 (age 2) and c:1 (age 3) in as Up members of a
// cluster whose self a:1 is Up with age 1.
func upCluster() []step {
	return []step{
		{name: "b up", do: observe(mem("b:1", member.Up, 2)), want: []string{"up b:1@2"}},
		{name: "c up", do: observe(mem("c:1", member.Up, 3)), want: []string{"up c:1@3"}},
	}
}

func TestMinNrOfMembersGatesUp(t *testing.T) {
	cfg := MembershipConfig{MinNrOfMembers: 3}
	ms := run(t, cfg, mem("a:1", member.Joining, 0), []step{
		{name: "b joins", do: observe(mem("b:1", member.Joining, 0)), want: []string{"joined b:1"}},
		{name: "b reports Up too early: held", do: observe(mem("b:1", member.Up, 10)), want: []string{}},
		{name: "b reports Up again: still held", do: observe(mem("b:1", member.Up, 10)), want: []string{}},
		{name: "self cannot be set Up without age", do: func(ms *Membership) ([]member.Event, error) { return ms.SetStatus(ua("a:1"), member.Up) }, err: ErrInvalidMember, want: []string{}},
		{name: "c joins: gate opens, b becomes Up", do: observe(mem("c:1", member.Joining, 0)),
			want: []string{"joined c:1", "up b:1@10", "oldest[] b:1"}},
		{name: "self moves Up with the next age", do: func(ms *Membership) ([]member.Event, error) {
			return ms.Observe(mem("a:1", member.Up, ms.NextUpNumber(5)))
		}, want: []string{"up a:1@11"}},
	})
	if !ms.MinMembersMet() {
		t.Errorf("MinMembersMet false with three members")
	}
	if o, _ := ms.Oldest(""); o.Unique.Addr != "b:1" {
		t.Errorf("oldest %s, want b:1", o.Unique)
	}
}

func TestMinNrOfMembersPerRole(t *testing.T) {
	cfg := MembershipConfig{MinNrOfMembersOfRole: map[string]int{"db": 2}}
	run(t, cfg, mem("a:1", member.Joining, 0, "web"), []step{
		{name: "first db member Up: held", do: observe(mem("b:1", member.Up, 5, "db")), want: []string{"joined b:1"}},
		{name: "web member Up: held, role gate not met", do: observe(mem("d:1", member.Up, 9, "web")), want: []string{"joined d:1"}},
		{name: "second db member: both held members Up, oldest first", do: observe(mem("c:1", member.Joining, 0, "db")),
			want: []string{"joined c:1", "up b:1@5", "up d:1@9", "oldest[] b:1", "oldest[db] b:1", "oldest[web] d:1"}},
	})
}

func TestMinNrOfMembersSelfUpHeld(t *testing.T) {
	ms, err := NewMembership(MembershipConfig{MinNrOfMembers: 2}, mem("a:1", member.Up, 4))
	if err != nil {
		t.Fatal(err)
	}
	if ms.Self().Status != member.Joining {
		t.Fatalf("self is %s before min-nr-of-members, want Joining", ms.Self().Status)
	}
	evs, err := ms.Observe(mem("b:1", member.Joining, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(evs); !slices.Equal(got, []string{"joined b:1", "up a:1@4", "oldest[] a:1"}) {
		t.Fatalf("events %q", got)
	}
}

func TestGracefulLeaveEventOrder(t *testing.T) {
	steps := append(upCluster(),
		step{name: "a leaves", do: call((*Membership).Leave, "a:1"), want: []string{"left a:1"}},
		step{name: "a leaving again: nothing", do: observe(mem("a:1", member.Leaving, 1)), want: []string{}},
		step{name: "a exits: oldest moves", do: observe(mem("a:1", member.Exiting, 1)),
			want: []string{"exited a:1", "oldest[] b:1"}},
		step{name: "a removed", do: call((*Membership).Remove, "a:1"), want: []string{"removed a:1 from Exiting"}},
		step{name: "removed again: nothing", do: call((*Membership).Remove, "a:1"), want: []string{}},
		step{name: "a cannot come back", do: observe(mem("a:1", member.Up, 1)), err: ErrRemovedMember, want: []string{}},
	)
	ms := run(t, MembershipConfig{}, mem("a:1", member.Up, 1), steps)
	if !ms.WasRemoved(ua("a:1")) {
		t.Errorf("WasRemoved(a) false")
	}
	if _, ok := ms.Member(ua("a:1")); ok {
		t.Errorf("a is still a member")
	}
}

func TestReachability(t *testing.T) {
	steps := append(upCluster(),
		step{name: "b unreachable", do: call((*Membership).Unreachable, "b:1"), want: []string{"unreachable b:1"}},
		step{name: "b unreachable again", do: call((*Membership).Unreachable, "b:1"), want: []string{}},
		step{name: "b reachable", do: call((*Membership).Reachable, "b:1"), want: []string{"reachable b:1"}},
		step{name: "b reachable again", do: call((*Membership).Reachable, "b:1"), want: []string{}},
		step{name: "self never unreachable", do: call((*Membership).Unreachable, "a:1"), want: []string{}},
		step{name: "unknown member", do: call((*Membership).Unreachable, "z:1"), err: ErrUnknownMember, want: []string{}},
		step{name: "unknown member reachable", do: call((*Membership).Reachable, "z:1"), err: ErrUnknownMember, want: []string{}},
		step{name: "a (oldest) cannot be unreachable from itself; c can", do: call((*Membership).Unreachable, "c:1"),
			want: []string{"unreachable c:1"}},
		step{name: "c downed", do: call((*Membership).Down, "c:1"), want: []string{"downed c:1"}},
		step{name: "c removed", do: call((*Membership).Remove, "c:1"), want: []string{"removed c:1 from Down"}},
	)
	ms := run(t, MembershipConfig{}, mem("a:1", member.Up, 1), steps)
	if ms.IsUnreachable(ua("c:1")) {
		t.Errorf("removed member still unreachable")
	}
}

func TestUnreachableOldestStaysOldest(t *testing.T) {
	run(t, MembershipConfig{}, mem("c:1", member.Up, 3), []step{
		{name: "a up", do: observe(mem("a:1", member.Up, 1)), want: []string{"up a:1@1", "oldest[] a:1"}},
		{name: "b up", do: observe(mem("b:1", member.Up, 2)), want: []string{"up b:1@2"}},
		{name: "a unreachable: still oldest", do: call((*Membership).Unreachable, "a:1"), want: []string{"unreachable a:1"}},
		{name: "a downed: b is oldest", do: call((*Membership).Down, "a:1"), want: []string{"downed a:1", "oldest[] b:1"}},
	})
}

func TestOldestChangesPerRole(t *testing.T) {
	run(t, MembershipConfig{}, mem("c:1", member.Up, 3, "y"), []step{
		{name: "b up with x and y: older than c", do: observe(mem("b:1", member.Up, 2, "x", "y")),
			want: []string{"up b:1@2", "oldest[] b:1", "oldest[x] b:1", "oldest[y] b:1"}},
		{name: "a up with x: oldest overall and of x", do: observe(mem("a:1", member.Up, 1, "x")),
			want: []string{"up a:1@1", "oldest[] a:1", "oldest[x] a:1"}},
		{name: "a downed", do: call((*Membership).Down, "a:1"),
			want: []string{"downed a:1", "oldest[] b:1", "oldest[x] b:1"}},
		{name: "b leaving: still counts", do: call((*Membership).Leave, "b:1"), want: []string{"left b:1"}},
		{name: "b exiting: x has none", do: observe(mem("b:1", member.Exiting, 2, "x", "y")),
			want: []string{"exited b:1", "oldest[] c:1", "oldest[x] none", "oldest[y] c:1"}},
		{name: "d joins with x: no age, no oldest", do: observe(mem("d:1", member.Joining, 0, "x")), want: []string{"joined d:1"}},
		{name: "d up: oldest of x", do: observe(mem("d:1", member.Up, 9, "x")), want: []string{"up d:1@9", "oldest[x] d:1"}},
	})
}

func TestIllegalTransitionsIgnored(t *testing.T) {
	tests := []struct {
		name string
		from member.Member
		do   func(ms *Membership) ([]member.Event, error)
		err  error
	}{
		{"Up back to Joining", mem("b:1", member.Up, 2), observe(mem("b:1", member.Joining, 0)), ErrIllegalTransition},
		{"Leaving back to Up", mem("b:1", member.Leaving, 2), observe(mem("b:1", member.Up, 2)), ErrIllegalTransition},
		{"Exiting back to Leaving", mem("b:1", member.Exiting, 2), call((*Membership).Leave, "b:1"), ErrIllegalTransition},
		{"Up straight to Removed", mem("b:1", member.Up, 2), call((*Membership).Remove, "b:1"), ErrIllegalTransition},
		{"Leaving straight to Removed", mem("b:1", member.Leaving, 2), call((*Membership).Remove, "b:1"), ErrIllegalTransition},
		{"Joining straight to Removed", mem("b:1", member.Joining, 0), call((*Membership).Remove, "b:1"), ErrIllegalTransition},
		{"Down to Leaving", mem("b:1", member.Down, 2), call((*Membership).Leave, "b:1"), ErrIllegalTransition},
		{"roles changed", mem("b:1", member.Up, 2, "x"), observe(mem("b:1", member.Leaving, 2, "y")), ErrMemberChanged},
		{"age changed", mem("b:1", member.Up, 2), observe(mem("b:1", member.Leaving, 7)), ErrMemberChanged},
		{"app version changed", mem("b:1", member.Up, 2), observe(member.Member{Unique: ua("b:1"), Status: member.Up, UpNumber: 2, AppVersion: "2"}), ErrMemberChanged},
		{"invalid status", mem("b:1", member.Up, 2), observe(member.Member{Unique: ua("b:1"), Status: 9}), ErrInvalidMember},
		{"uid 0", mem("b:1", member.Up, 2), observe(member.Member{Unique: member.UniqueAddress{Addr: "x:1"}, Status: member.Joining}), ErrInvalidMember},
		{"unsorted roles", mem("b:1", member.Up, 2), observe(member.Member{Unique: ua("x:1"), Status: member.Joining, Roles: []string{"b", "a"}}), ErrInvalidMember},
		{"unknown member leaves", mem("b:1", member.Up, 2), call((*Membership).Leave, "z:1"), ErrUnknownMember},
		{"unknown member reported Removed", mem("b:1", member.Up, 2), observe(mem("z:1", member.Removed, 0)), ErrUnknownMember},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := NewMembership(MembershipConfig{}, mem("a:1", member.Up, 1))
			if err != nil {
				t.Fatal(err)
			}
			// Bring b to its starting status through legal steps.
			path := map[member.MemberStatus][]member.MemberStatus{
				member.Joining: {member.Joining}, member.Up: {member.Up}, member.Leaving: {member.Up, member.Leaving}, member.Exiting: {member.Up, member.Leaving, member.Exiting},
				member.Down: {member.Up, member.Down},
			}[tt.from.Status]
			for _, s := range path {
				m := tt.from
				m.Status = s
				if _, err := ms.Observe(m); err != nil {
					t.Fatalf("setup %s: %v", s, err)
				}
			}
			before := ms.State()
			evs, err := tt.do(ms)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if len(evs) != 0 {
				t.Errorf("events %q after an ignored input", describe(evs))
			}
			if after := ms.State(); !sameState(before, after) {
				t.Errorf("state changed:\n before %+v\n after  %+v", before, after)
			}
		})
	}
}

func sameState(a, b member.CurrentClusterState) bool {
	eq := func(x, y []member.Member) bool {
		return slices.EqualFunc(x, y, func(p, q member.Member) bool {
			return p.Unique == q.Unique && p.Status == q.Status && p.UpNumber == q.UpNumber &&
				slices.Equal(p.Roles, q.Roles) && p.AppVersion == q.AppVersion
		})
	}
	return eq(a.Members, b.Members) && eq(a.Unreachable, b.Unreachable) && a.MinMembersMet == b.MinMembersMet
}

func TestDownedMemberReportsAreIgnored(t *testing.T) {
	run(t, MembershipConfig{}, mem("a:1", member.Up, 1), []step{
		{name: "b up", do: observe(mem("b:1", member.Up, 2)), want: []string{"up b:1@2"}},
		{name: "b downed", do: call((*Membership).Down, "b:1"), want: []string{"downed b:1"}},
		{name: "b still says Up: ignored, no error", do: observe(mem("b:1", member.Up, 2)), want: []string{}},
		{name: "b downed again: nothing", do: call((*Membership).Down, "b:1"), want: []string{}},
		{name: "b removed", do: call((*Membership).Remove, "b:1"), want: []string{"removed b:1 from Down"}},
	})
}

func TestNewIncarnation(t *testing.T) {
	b2 := member.Member{Unique: member.UniqueAddress{Addr: "b:1", UID: 2}, Status: member.Joining}
	ms := run(t, MembershipConfig{}, mem("a:1", member.Up, 1), []step{
		{name: "b up", do: observe(mem("b:1", member.Up, 2)), want: []string{"up b:1@2"}},
		{name: "self's address is never taken", do: observe(member.Member{Unique: member.UniqueAddress{Addr: "a:1", UID: 9}, Status: member.Joining}),
			err: ErrAddressInUse, want: []string{}},
		{name: "b crashes", do: call((*Membership).Unreachable, "b:1"), want: []string{"unreachable b:1"}},
		{name: "b restarted: old incarnation downed, new one joins", do: observe(b2),
			want: []string{"downed b:1", "joined b:1"}},
		{name: "old incarnation removed", do: call((*Membership).Remove, "b:1"), want: []string{"removed b:1 from Down"}},
	})
	if m, ok := ms.Member(b2.Unique); !ok || m.Status != member.Joining {
		t.Fatalf("new incarnation %v %v", m, ok)
	}
}

func TestQuickRestartReplacesAReachableIncarnation(t *testing.T) {
	// A node restarted on its address before anyone noticed the crash: serf holds one
	// entry per address, so the new incarnation's report replaces the old one.
	b2 := member.Member{Unique: member.UniqueAddress{Addr: "b:1", UID: 2}, Status: member.Joining}
	run(t, MembershipConfig{}, mem("a:1", member.Up, 1), []step{
		{name: "b up", do: observe(mem("b:1", member.Up, 2)), want: []string{"up b:1@2"}},
		{name: "b restarted at once", do: observe(b2), want: []string{"downed b:1", "joined b:1"}},
	})
}

func TestFirstSightingInLaterStatus(t *testing.T) {
	run(t, MembershipConfig{}, mem("c:1", member.Joining, 0), []step{
		{name: "leaving member", do: observe(mem("a:1", member.Leaving, 1)), want: []string{"left a:1", "oldest[] a:1"}},
		{name: "exiting member", do: observe(mem("b:1", member.Exiting, 2)), want: []string{"exited b:1"}},
		{name: "down member", do: observe(mem("d:1", member.Down, 4)), want: []string{"downed d:1"}},
	})
}

func TestState(t *testing.T) {
	ms := run(t, MembershipConfig{MinNrOfMembers: 2}, mem("b:1", member.Joining, 0, "x"), []step{
		{name: "a up", do: observe(mem("a:1", member.Up, 1, "x")), want: []string{"up a:1@1", "oldest[] a:1", "oldest[x] a:1"}},
		{name: "c joins", do: observe(mem("c:1", member.Joining, 0)), want: []string{"joined c:1"}},
		{name: "c unreachable", do: call((*Membership).Unreachable, "c:1"), want: []string{"unreachable c:1"}},
	})
	st := ms.State()
	var addrs []string
	for _, m := range st.Members {
		addrs = append(addrs, m.Unique.Addr)
	}
	if !slices.Equal(addrs, []string{"a:1", "b:1", "c:1"}) {
		t.Errorf("members %q", addrs)
	}
	if len(st.Unreachable) != 1 || st.Unreachable[0].Unique.Addr != "c:1" {
		t.Errorf("unreachable %v", st.Unreachable)
	}
	if st.Oldest == nil || st.Oldest.Unique.Addr != "a:1" || st.OldestByRole["x"].Unique.Addr != "a:1" {
		t.Errorf("oldest %v by role %v", st.Oldest, st.OldestByRole)
	}
	if !st.MinMembersMet {
		t.Errorf("MinMembersMet false")
	}
	// The snapshot is a copy.
	st.Members[0].Roles[0] = "changed"
	if m, _ := ms.Member(ua("a:1")); m.Roles[0] != "x" {
		t.Errorf("State shares memory with the membership")
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []MembershipConfig{
		{MinNrOfMembers: -1},
		{MinNrOfMembersOfRole: map[string]int{"": 1}},
		{MinNrOfMembersOfRole: map[string]int{"x": -1}},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v", c, err)
		}
		if _, err := NewMembership(c, mem("a:1", member.Joining, 0)); err == nil {
			t.Errorf("%+v: NewMembership accepted it", c)
		}
	}
	if _, err := NewMembership(MembershipConfig{}, mem("a:1", member.Removed, 0)); !errors.Is(err, ErrInvalidMember) {
		t.Errorf("Removed self: err = %v", err)
	}
}
