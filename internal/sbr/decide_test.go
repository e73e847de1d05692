package sbr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/member"
)

// ua returns the unique address "addr" with uid 1.
func ua(addr string) member.UniqueAddress { return member.UniqueAddress{Addr: addr, UID: 1} }

// mem returns a member at addr (uid 1) with the status, age and roles.
func mem(addr string, s member.MemberStatus, age int64, roles ...string) member.Member {
	return member.Member{Unique: ua(addr), Status: s, UpNumber: age, Roles: member.NormalizeRoles(roles)}
}

// upMembers returns n members a:1, b:1, ..., Up with ages 1..n (a is the oldest), with
// the roles given per address.
func upMembers(n int, roles map[string][]string) []member.Member {
	var ms []member.Member
	for i := range n {
		addr := fmt.Sprintf("%c:1", 'a'+i)
		ms = append(ms, mem(addr, member.Up, int64(i+1), roles[addr]...))
	}
	return ms
}

// input returns the view of self, which observes the listed members unreachable.
func input(members []member.Member, self string, unreachable ...string) Input {
	in := Input{Self: ua(self), Members: members}
	for _, u := range unreachable {
		in.Unreachable = append(in.Unreachable, Record{Observer: ua(self), Subject: ua(u)})
	}
	return in
}

// observed returns self's view of the observations "o>s" (o cannot reach s).
func observed(members []member.Member, self string, records ...string) Input {
	in := Input{Self: ua(self), Members: members}
	for _, r := range records {
		o, s, _ := strings.Cut(r, ">")
		in.Unreachable = append(in.Unreachable, Record{Observer: ua(o + ":1"), Subject: ua(s + ":1")})
	}
	return in
}

func addrs(us []member.UniqueAddress) string {
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
	withJoining := append(upMembers(5, nil), mem("f:1", member.Joining, 0))
	coreDE := upMembers(5, map[string][]string{"d:1": {"core"}, "e:1": {"core"}})
	withDown := upMembers(5, nil)
	withDown[4].Status = member.Down
	twoALeaving := upMembers(2, nil)
	twoALeaving[0].Status = member.Leaving
	majority := Config{}
	quorum3 := Config{Strategy: StaticQuorum, QuorumSize: 3}
	oldest := Config{Strategy: KeepOldest}
	oldestAloneOK := Config{Strategy: KeepOldest, KeepOldestIfAlone: true}
	downAll := Config{Strategy: DownAll}
	lease := Config{Strategy: LeaseMajority}

	tests := []struct {
		name string
		cfg  Config
		in   Input
		want Action
		down string
	}{
		{"no unreachable: no decision", majority, input(five, "a:1"), NoAction, ""},
		{"only Down members unreachable: no decision", majority, input(withDown, "a:1", "e:1"), NoAction, ""},
		{"a self-observation is ignored", majority, input(five, "a:1", "a:1"), NoAction, ""},

		{"keep-majority 3|2, majority side", majority, input(five, "a:1", "d:1", "e:1"), DownUnreachable, "d:1,e:1"},
		{"keep-majority 3|2, minority side", majority, input(five, "d:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1"},
		{"keep-majority one crashed", majority, input(five, "b:1", "c:1"), DownUnreachable, "c:1"},
		{"keep-majority 2|2, side with lowest address", majority, input(four, "b:1", "c:1", "d:1"), DownUnreachable, "c:1,d:1"},
		{"keep-majority 2|2, other side", majority, input(four, "c:1", "a:1", "b:1"), DownReachable, "c:1,d:1"},
		{"keep-majority 2|2 crosswise, lowest side", majority, input(four, "c:1", "b:1", "d:1"), DownUnreachable, "b:1,d:1"},
		{"keep-majority 2|2 crosswise, other side", majority, input(four, "d:1", "a:1", "c:1"), DownReachable, "b:1,d:1"},
		{"keep-majority 1|1, the lowest address leaving: the other side is kept", majority,
			input(twoALeaving, "b:1", "a:1"), DownUnreachable, "a:1"},
		{"keep-majority 1|1, the leaving side agrees", majority,
			input(twoALeaving, "a:1", "b:1"), DownReachable, "a:1"},
		{"keep-majority: joining not counted, downed with its side", majority,
			input(withJoining, "a:1", "d:1", "e:1", "f:1"), DownUnreachable, "d:1,e:1,f:1"},
		{"keep-majority: joining member on the losing side", majority,
			input(withJoining, "f:1", "a:1", "b:1", "c:1"), DownReachable, "d:1,e:1,f:1"},
		{"keep-majority with role: fewer nodes but more of the role", Config{Role: "core"},
			input(coreDE, "a:1", "d:1", "e:1"), DownReachable, "a:1,b:1,c:1"},
		{"keep-majority with role: the role's side", Config{Role: "core"},
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

		{"lease-majority: the holder's side downs the others, even as minority", lease,
			input(five, "d:1", "a:1", "b:1", "c:1"), DownUnreachable, "a:1,b:1,c:1"},

		// The decision does not depend on who asks: a node that others report
		// unreachable, but that is in their gossip, finds itself on the unreachable side.
		{"one-way observation: the subject is downed, seen by the observer", majority,
			observed(five, "a:1", "a>b"), DownUnreachable, "b:1"},
		{"one-way observation: the bystanders bridge the two, so the subject keeps the row and downs itself", majority,
			observed(five, "b:1", "a>b"), DownUnreachable, "b:1"},
		{"one-way observation: seen by a bystander", majority,
			observed(five, "e:1", "a>b"), DownUnreachable, "b:1"},
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

// TestDecideEqualSplitByHostAndPort splits four nodes of the test kit's shape (every
// node on 127.0.0.1, named node0 to node3) 2|2, with node3 on the lowest port: the side
// that holds node3 is kept, on both sides of the partition. Ordered by system name
// first, node0's side would be kept instead.
func TestDecideEqualSplitByHostAndPort(t *testing.T) {
	addr := func(i int) string {
		return fmt.Sprintf("troupe://node%d@127.0.0.1:%d", i, []int{40100, 40200, 40300, 40000}[i])
	}
	var four []member.Member
	for i := range 4 {
		four = append(four, mem(addr(i), member.Up, int64(i+1)))
	}
	sideA, sideB := []int{0, 1}, []int{2, 3} // node3, the lowest, is on side B
	for _, side := range [][2][]int{{sideA, sideB}, {sideB, sideA}} {
		own, other := side[0], side[1]
		in := Input{Self: ua(addr(own[0])), Members: four}
		for _, o := range own {
			for _, s := range other {
				in.Unreachable = append(in.Unreachable, Record{Observer: ua(addr(o)), Subject: ua(addr(s))})
			}
		}
		d := Decide(Config{}, in)
		want := Decision{Action: DownReachable, Down: []member.UniqueAddress{ua(addr(0)), ua(addr(1))}}
		if own[0] == sideB[0] {
			want.Action = DownUnreachable
		}
		if d.Action != want.Action || addrs(d.Down) != addrs(want.Down) {
			t.Errorf("seen from node%d: %s [%s], want %s [%s] (the side of node3 is kept)",
				own[0], d.Action, addrs(d.Down), want.Action, addrs(want.Down))
		}
	}
}

func TestDecideIndirectlyConnected(t *testing.T) {
	six := upMembers(6, nil) // f observes nothing and is observed by nobody
	tests := []struct {
		name    string
		records []string
		want    Action
		down    string
	}{
		{"a link cut both ways: both ends are downed", []string{"a>b", "b>a"}, DownIndirectlyConnected, "a:1,b:1"},
		{"a cycle of three", []string{"a>b", "b>c", "c>a"}, DownIndirectlyConnected, "a:1,b:1,c:1"},
		{"a node that others cannot reach and that cannot reach one: only it goes", []string{"a>c", "b>c", "c>d"},
			DownIndirectlyConnected, "c:1"},
		{"indirect pair plus a crash: the crash is decided as a clean split", []string{"c>d", "d>c", "a>e", "b>e", "c>e", "d>e"},
			DownIndirectlyConnected, "c:1,d:1,e:1"},
		{"indirect pair plus a minority partition, on its other side", []string{"a>b", "b>a", "a>d", "a>e", "b>d", "b>e", "c>d", "c>e"},
			DownIndirectlyConnected, "a:1,b:1,d:1,e:1"},
		{"what the pair observes, and what is observed of it, is set aside", []string{"a>b", "b>a", "a>e", "d>a"},
			DownIndirectlyConnected, "a:1,b:1"},
		{"counted on the reachable side in the clean split", []string{"a>b", "b>a", "c>d", "c>e", "a>d"},
			DownIndirectlyConnected, "a:1,b:1,d:1,e:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every node that has no broken link to an observer and has the same
			// table decides the same; f is such a node in all these tables.
			d := Decide(Config{}, observed(six, "f:1", tt.records...))
			if d.Action != tt.want || addrs(d.Down) != tt.down {
				t.Fatalf("Decide = %s [%s], want %s [%s]", d.Action, addrs(d.Down), tt.want, tt.down)
			}
		})
	}
}

// The two ends of a link cut both ways, and a bystander, decide the same: the
// bystanders still reach both ends, so each end keeps the other's observations and
// sees both indirectly connected, as the bystander does. (Before, each end set the
// other's observations aside and downed only the other, and relied on hearing the
// bystander's decision; a partition that then cut the bystander off left both ends
// running after the bystander had taken their shards: testkit/sim seed 1104.)
func TestDecideOneLinkCutFromItsEnds(t *testing.T) {
	five := upMembers(5, nil)
	for _, self := range []string{"a:1", "b:1", "c:1"} {
		d := Decide(Config{}, observed(five, self, "a>b", "b>a"))
		if d.Action != DownIndirectlyConnected || addrs(d.Down) != "a:1,b:1" {
			t.Errorf("from %s: Decide = %s [%s], want down-indirectly-connected [a:1,b:1]", self, d.Action, addrs(d.Down))
		}
	}
}

// With no member left that reaches both ends (two members, or every other member
// across a broken link too), each end sets the other's observations aside: the split
// is then a partition, and the sides decide as mirror images.
func TestDecideNoBridgeIsAPartition(t *testing.T) {
	two := upMembers(2, nil)
	a := Decide(Config{}, observed(two, "a:1", "a>b", "b>a"))
	b := Decide(Config{}, observed(two, "b:1", "a>b", "b>a"))
	if a.Action == DownIndirectlyConnected || b.Action == DownIndirectlyConnected {
		t.Fatalf("two members: a %s, b %s; want a clean split", a.Action, b.Action)
	}
	if addrs(a.Down) != addrs(b.Down) || len(a.Down) != 1 {
		t.Fatalf("two members: a downs [%s], b downs [%s]; want one and the same", addrs(a.Down), addrs(b.Down))
	}
	// c observes b unreachable too: it bridges nothing between a and b.
	three := upMembers(3, nil)
	d := Decide(Config{}, observed(three, "a:1", "a>b", "b>a", "c>b", "b>c"))
	if d.Action != DownUnreachable || addrs(d.Down) != "b:1" {
		t.Errorf("3 members, b cut from both: a decides %s [%s], want down-unreachable [b:1]", d.Action, addrs(d.Down))
	}
}

// In a partition 3|2 whose link flapped, each side holds the other side's rows too
// (they arrived while the link was up). Each node sets aside the rows of the members
// across a broken link from it, so the split is still clean, and the sides decide as
// mirror images; Akka's rule would find everyone indirectly connected.
func TestDecidePartitionWithRowsFromTheOtherSide(t *testing.T) {
	five := upMembers(5, nil)
	leaked := []string{"a>d", "b>d", "c>d", "d>a", "d>b", "d>c", "e>a", "e>b", "e>c"} // a..c have not detected e yet
	majority := Decide(Config{}, observed(five, "a:1", leaked...))
	minority := Decide(Config{}, observed(five, "e:1", leaked...))
	if majority.Action != DownUnreachable || addrs(majority.Down) != "d:1" {
		t.Errorf("majority: %s [%s], want down-unreachable [d:1]", majority.Action, addrs(majority.Down))
	}
	if minority.Action != DownReachable || addrs(minority.Down) != "d:1,e:1" {
		t.Errorf("minority: %s [%s], want down-reachable [d:1,e:1]", minority.Action, addrs(minority.Down))
	}
	if u, i := Summary(observed(five, "e:1", leaked...)); addrs(u) != "a:1,b:1,c:1" || len(i) != 0 {
		t.Errorf("Summary from e: unreachable [%s], indirect [%s]", addrs(u), addrs(i))
	}
}

// TestDecideNeverTwoSurvivors splits 2 to 6 members every possible way, asks a member of
// each side for its decision, and checks that the two sides never both keep running and
// that the one-winner strategies always leave exactly one.
func TestDecideNeverTwoSurvivors(t *testing.T) {
	strategies := []struct {
		cfg       Config
		oneWinner bool
	}{
		{Config{}, true},
		{Config{Strategy: KeepOldest}, true},
		{Config{Strategy: KeepOldest, KeepOldestIfAlone: true}, true},
		{Config{Strategy: StaticQuorum, QuorumSize: 3}, false},
		{Config{Strategy: DownAll}, false},
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
				aLives, bLives := !a.Downs(ua(sideA[0])), !b.Downs(ua(sideB[0]))
				if aLives && bLives {
					t.Fatalf("%s %v|%v: both sides survive", s.cfg.Strategy, sideA, sideB)
				}
				if s.oneWinner && aLives == bLives {
					t.Fatalf("%s %v|%v: A %s, B %s: want exactly one survivor", s.cfg.Strategy, sideA, sideB, a.Action, b.Action)
				}
				if s.oneWinner && addrs(a.Down) != addrs(b.Down) {
					t.Fatalf("%s %v|%v: sides disagree on who goes: A [%s], B [%s]", s.cfg.Strategy, sideA, sideB, addrs(a.Down), addrs(b.Down))
				}
			}
		}
	}
}

func TestResponsibleAndMinority(t *testing.T) {
	members := append(upMembers(5, nil), mem("0:1", member.Joining, 0))
	v := analyze(input(members, "c:1", "a:1", "b:1"))
	if who, ok := responsible(v); !ok || who != ua("c:1") {
		t.Errorf("responsible = %v %v, want c:1 (a Joining member does not act)", who, ok)
	}
	if isMinority(Config{}, v) {
		t.Error("3 of 5 counted as minority")
	}
	v = analyze(input(members, "a:1", "c:1", "d:1", "e:1"))
	if who, _ := responsible(v); who != ua("a:1") || !isMinority(Config{}, v) {
		t.Errorf("minority side: responsible %v, minority %v", who, isMinority(Config{}, v))
	}
	joiningOnly := analyze(input([]member.Member{mem("b:1", member.Up, 1), mem("x:1", member.Joining, 0)}, "x:1", "b:1"))
	if who, ok := responsible(joiningOnly); !ok || who != ua("x:1") {
		t.Errorf("only Joining reachable: responsible = %v %v", who, ok)
	}
}
