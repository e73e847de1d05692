package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// upMembers returns n members a:1, b:1, ..., Up with ages 1..n (a is the oldest), with
// the roles given per address.
func upMembers(n int, roles map[string][]string) []Member {
	var ms []Member
	for i := range n {
		addr := fmt.Sprintf("%c:1", 'a'+i)
		ms = append(ms, mem(addr, Up, int64(i+1), roles[addr]...))
	}
	return ms
}

// input returns the view of self, with the listed members unreachable.
func input(members []Member, self string, unreachable ...string) DowningInput {
	in := DowningInput{Self: ua(self), Members: members}
	for _, u := range unreachable {
		in.Unreachable = append(in.Unreachable, ua(u))
	}
	return in
}

func addrs(us []UniqueAddress) string {
	var s []string
	for _, u := range us {
		s = append(s, u.Addr)
	}
	return strings.Join(s, ",")
}

func TestDecide(t *testing.T) {
	five := upMembers(5, nil)
	four := upMembers(4, nil)
	six := upMembers(6, nil)
	withJoining := append(upMembers(5, nil), mem("f:1", Joining, 0))
	coreDE := upMembers(5, map[string][]string{"d:1": {"core"}, "e:1": {"core"}})
	withDown := upMembers(5, nil)
	withDown[4].Status = Down
	majority := DowningConfig{}
	quorum3 := DowningConfig{Strategy: StaticQuorum, QuorumSize: 3}
	oldest := DowningConfig{Strategy: KeepOldest}
	oldestAloneOK := DowningConfig{Strategy: KeepOldest, KeepOldestIfAlone: true}
	downAll := DowningConfig{Strategy: DownAll}

	tests := []struct {
		name string
		cfg  DowningConfig
		in   DowningInput
		want Action
		down string
	}{
		{"no unreachable: no decision", majority, input(five, "a:1"), NoAction, ""},
		{"only Down members unreachable: no decision", majority, input(withDown, "a:1", "e:1"), NoAction, ""},
		{"self listed unreachable is ignored", majority, input(five, "a:1", "a:1"), NoAction, ""},

		{"keep-majority 3|2, majority side", majority, input(five, "a:1", "d:1", "e:1"), DownUnreachable, "d:1,e:1"},
		{"keep-majority 3|2, minority side", majority, input(five, "d:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1"},
		{"keep-majority one crashed", majority, input(five, "b:1", "c:1"), DownUnreachable, "c:1"},
		{"keep-majority 2|2, side with lowest address", majority, input(four, "b:1", "c:1", "d:1"), DownUnreachable, "c:1,d:1"},
		{"keep-majority 2|2, other side", majority, input(four, "c:1", "a:1", "b:1"), DownReachable, "c:1,d:1"},
		{"keep-majority 2|2 crosswise, lowest side", majority, input(four, "c:1", "b:1", "d:1"), DownUnreachable, "b:1,d:1"},
		{"keep-majority 2|2 crosswise, other side", majority, input(four, "d:1", "a:1", "c:1"), DownReachable, "b:1,d:1"},
		{"keep-majority: joining not counted, downed with its side", majority,
			input(withJoining, "a:1", "d:1", "e:1", "f:1"), DownUnreachable, "d:1,e:1,f:1"},
		{"keep-majority: joining member on the losing side", majority,
			input(withJoining, "f:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1,f:1"},
		{"keep-majority with role: fewer nodes but more of the role", DowningConfig{Role: "core"},
			input(coreDE, "a:1", "d:1", "e:1"), DownReachable, "a:1,b:1,c:1"},
		{"keep-majority with role: the role's side", DowningConfig{Role: "core"},
			input(coreDE, "d:1", "a:1", "b:1", "c:1"), DownUnreachable, "a:1,b:1,c:1"},

		{"static-quorum 3|2, quorum side", quorum3, input(five, "a:1", "d:1", "e:1"), DownUnreachable, "d:1,e:1"},
		{"static-quorum 3|2, small side", quorum3, input(five, "e:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1"},
		{"static-quorum 2|2 of 4: both sides below quorum", quorum3, input(four, "a:1", "c:1", "d:1"), DownReachable, "a:1,b:1"},
		{"static-quorum too many members: down all", quorum3, input(six, "a:1", "f:1"), DownEveryone, "a:1,b:1,c:1,d:1,e:1,f:1"},

		{"keep-oldest, oldest in the majority", oldest, input(five, "b:1", "d:1", "e:1"), DownUnreachable, "d:1,e:1"},
		{"keep-oldest, oldest on the other side", oldest, input(five, "d:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1"},
		{"keep-oldest, oldest's minority side wins", oldest, input(five, "a:1", "c:1", "d:1", "e:1"), DownUnreachable, "c:1,d:1,e:1"},
		{"keep-oldest, majority without the oldest loses", oldest, input(five, "c:1", "a:1", "b:1"), DownReachable, "c:1,d:1,e:1"},
		{"keep-oldest, oldest alone downs itself", oldest, input(five, "a:1", "b:1", "c:1", "d:1", "e:1"), DownReachable, "a:1"},
		{"keep-oldest, others down the lone oldest", oldest, input(five, "b:1", "a:1"), DownUnreachable, "a:1"},
		{"keep-oldest if alone: oldest keeps", oldestAloneOK, input(five, "a:1", "b:1", "c:1", "d:1", "e:1"), DownUnreachable, "b:1,c:1,d:1,e:1"},
		{"keep-oldest if alone: others go", oldestAloneOK, input(five, "b:1", "a:1"), DownReachable, "b:1,c:1,d:1,e:1"},

		{"down-all, one side", downAll, input(five, "a:1", "e:1"), DownEveryone, "a:1,b:1,c:1,d:1,e:1"},
		{"down-all, other side", downAll, input(five, "e:1", "a:1", "b:1", "c:1", "d:1"), DownEveryone, "a:1,b:1,c:1,d:1,e:1"},
		{"down-all skips members already Down", downAll, input(withDown, "a:1", "d:1"), DownEveryone, "a:1,b:1,c:1,d:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.cfg, tt.in)
			if d.Action != tt.want || addrs(d.Down) != tt.down {
				t.Fatalf("Decide = %s [%s], want %s [%s]", d.Action, addrs(d.Down), tt.want, tt.down)
			}
			if tt.want == DownReachable && !d.Downs(tt.in.Self) {
				t.Errorf("losing side does not down itself")
			}
		})
	}
}

func TestDecideIndirectlyConnected(t *testing.T) {
	five := upMembers(5, nil)
	in := input(five, "a:1", "e:1")
	in.IndirectlyConnected = []UniqueAddress{ua("c:1")}
	if d := Decide(DowningConfig{}, in); d.Action != DownUnreachable || addrs(d.Down) != "c:1,e:1" {
		t.Errorf("winning side: %s [%s], want down-unreachable [c:1,e:1]", d.Action, addrs(d.Down))
	}
	in = input(five, "d:1", "a:1", "b:1")
	in.IndirectlyConnected = []UniqueAddress{ua("c:1")}
	if d := Decide(DowningConfig{}, in); d.Action != DownReachable || addrs(d.Down) != "c:1,d:1,e:1" {
		t.Errorf("losing side: %s [%s], want down-reachable [c:1,d:1,e:1]", d.Action, addrs(d.Down))
	}
	in = input(five, "c:1")
	in.IndirectlyConnected = []UniqueAddress{ua("c:1"), ua("b:1")}
	if d := Decide(DowningConfig{}, in); d.Action != DownSelf || addrs(d.Down) != "c:1" {
		t.Errorf("self indirectly connected: %s [%s], want down-self [c:1]", d.Action, addrs(d.Down))
	}
}

// TestDecideNeverTwoSurvivors splits 2 to 6 members every possible way, asks a member of
// each side for its decision, and checks that the two sides never both keep running and
// that the one-winner strategies always leave exactly one.
func TestDecideNeverTwoSurvivors(t *testing.T) {
	strategies := []struct {
		cfg       DowningConfig
		oneWinner bool
	}{
		{DowningConfig{}, true},
		{DowningConfig{Strategy: KeepOldest}, true},
		{DowningConfig{Strategy: KeepOldest, KeepOldestIfAlone: true}, true},
		{DowningConfig{Strategy: StaticQuorum, QuorumSize: 3}, false},
		{DowningConfig{Strategy: DownAll}, false},
	}
	for n := 2; n <= 6; n++ {
		members := upMembers(n, nil)
		for mask := 1; mask < 1<<n-1; mask++ {
			var sideA, sideB []string
			for i, m := range members {
				if mask&(1<<i) != 0 {
					sideA = append(sideA, m.Unique.Addr)
				} else {
					sideB = append(sideB, m.Unique.Addr)
				}
			}
			for _, s := range strategies {
				a := Decide(s.cfg, input(members, sideA[0], sideB...))
				b := Decide(s.cfg, input(members, sideB[0], sideA...))
				aLives, bLives := a.Action == DownUnreachable, b.Action == DownUnreachable
				if aLives && bLives {
					t.Fatalf("%s %v|%v: both sides survive", s.cfg.Strategy, sideA, sideB)
				}
				if s.oneWinner && aLives == bLives {
					t.Fatalf("%s %v|%v: A %s, B %s: want exactly one survivor", s.cfg.Strategy, sideA, sideB, a.Action, b.Action)
				}
				if s.oneWinner && (aLives && addrs(a.Down) != addrs(b.Down) || bLives && addrs(a.Down) != addrs(b.Down)) {
					t.Fatalf("%s %v|%v: sides disagree on who goes: A [%s], B [%s]", s.cfg.Strategy, sideA, sideB, addrs(a.Down), addrs(b.Down))
				}
			}
		}
	}
}

func TestResolverWaitsForStable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r, err := NewResolver(DowningConfig{StableAfter: 10 * time.Second}, t0)
	if err != nil {
		t.Fatal(err)
	}
	split := input(upMembers(5, nil), "a:1", "e:1")
	steps := []struct {
		name      string
		changedAt time.Duration // < 0: no change
		now       time.Duration
		in        DowningInput
		want      Action
		remaining time.Duration
	}{
		{"not stable yet", -1, 5 * time.Second, split, NoAction, 5 * time.Second},
		{"a change restarts the wait", 8 * time.Second, 10 * time.Second, split, NoAction, 8 * time.Second},
		{"an older change is ignored", 2 * time.Second, 17 * time.Second, split, NoAction, time.Second},
		{"stable: decides", -1, 18 * time.Second, split, DownUnreachable, 0},
		{"stable without unreachable: nothing, ever", -1, time.Hour, input(upMembers(5, nil), "a:1"), NoAction, 0},
	}
	for _, s := range steps {
		if s.changedAt >= 0 {
			r.Changed(t0.Add(s.changedAt))
		}
		now := t0.Add(s.now)
		if got := r.Decide(now, s.in); got.Action != s.want {
			t.Errorf("%s: Decide = %s, want %s", s.name, got.Action, s.want)
		}
		if got := r.Remaining(now); got != s.remaining {
			t.Errorf("%s: Remaining = %v, want %v", s.name, got, s.remaining)
		}
	}
	tr := NewStableTracker(time.Second, t0)
	if tr.Stable(t0.Add(999*time.Millisecond)) || !tr.Stable(t0.Add(time.Second)) {
		t.Errorf("StableTracker boundary wrong")
	}
}

func TestDowningConfig(t *testing.T) {
	bad := []DowningConfig{
		{Strategy: 9},
		{StableAfter: -time.Second},
		{QuorumSize: -1},
		{Strategy: StaticQuorum},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v", c, err)
		}
		if _, err := NewResolver(c, time.Time{}); err == nil {
			t.Errorf("%+v: NewResolver accepted it", c)
		}
	}
	if err := (DowningConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if (DowningConfig{}).stableAfter() != DefaultStableAfter {
		t.Errorf("zero StableAfter is not the default")
	}
	for _, s := range []Strategy{KeepMajority, StaticQuorum, KeepOldest, DownAll} {
		got, err := ParseStrategy(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStrategy(%q) = %v, %v", s.String(), got, err)
		}
	}
	if s, err := ParseStrategy(""); err != nil || s != KeepMajority {
		t.Errorf("ParseStrategy(\"\") = %v, %v", s, err)
	}
	if _, err := ParseStrategy("keep-referee"); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unknown strategy: %v", err)
	}
	if Strategy(7).String() != "Strategy(7)" || Action(9).String() != "Action(9)" || DownSelf.String() != "down-self" {
		t.Errorf("String of out-of-range values")
	}
	if !slices.Equal([]string{NoAction.String(), DownEveryone.String()}, []string{"no-action", "down-all"}) {
		t.Errorf("Action names")
	}
}

func TestMembershipDowningInput(t *testing.T) {
	ms := run(t, MembershipConfig{}, mem("b:1", Up, 2), []step{
		{name: "a up", do: observe(mem("a:1", Up, 1)), want: []string{"up a:1@1", "oldest[] a:1"}},
		{name: "c joins", do: observe(mem("c:1", Joining, 0)), want: []string{"joined c:1"}},
		{name: "c unreachable", do: call((*Membership).Unreachable, "c:1"), want: []string{"unreachable c:1"}},
	})
	in := ms.DowningInput()
	if in.Self != ua("b:1") || len(in.Members) != 3 || !slices.Equal(in.Unreachable, []UniqueAddress{ua("c:1")}) {
		t.Errorf("DowningInput %+v", in)
	}
	if d := Decide(DowningConfig{}, in); d.Action != DownUnreachable || addrs(d.Down) != "c:1" {
		t.Errorf("Decide = %s [%s]", d.Action, addrs(d.Down))
	}
}
