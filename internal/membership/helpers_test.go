package membership

import (
	"fmt"
	"github.com/troupe-go/troupe/member"
)

// ua returns the unique address "addr" with uid 1.
func ua(addr string) member.UniqueAddress { return member.UniqueAddress{Addr: addr, UID: 1} }

// mem returns a member at addr (uid 1) with the status, age and roles.
func mem(addr string, s member.MemberStatus, age int64, roles ...string) member.Member {
	return member.Member{Unique: ua(addr), Status: s, UpNumber: age, Roles: member.NormalizeRoles(roles)}
}

// describe renders events as short strings, for table tests.
func describe(evs []member.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, describeOne(ev))
	}
	return out
}

func describeOne(ev member.Event) string {
	switch e := ev.(type) {
	case member.MemberJoined:
		return "joined " + e.Member.Unique.Addr
	case member.MemberUp:
		return fmt.Sprintf("up %s@%d", e.Member.Unique.Addr, e.Member.UpNumber)
	case member.MemberLeft:
		return "left " + e.Member.Unique.Addr
	case member.MemberExited:
		return "exited " + e.Member.Unique.Addr
	case member.MemberDowned:
		return "downed " + e.Member.Unique.Addr
	case member.MemberRemoved:
		return fmt.Sprintf("removed %s from %s", e.Member.Unique.Addr, e.PreviousStatus)
	case member.RemovalMarginPassed:
		return fmt.Sprintf("margin %s from %s", e.Member.Unique.Addr, e.PreviousStatus)
	case member.UnreachableMember:
		return "unreachable " + e.Member.Unique.Addr
	case member.ReachableMember:
		return "reachable " + e.Member.Unique.Addr
	case member.OldestChanged:
		who := "none"
		if e.Oldest != nil {
			who = e.Oldest.Unique.Addr
		}
		return fmt.Sprintf("oldest[%s] %s", e.Role, who)
	}
	return fmt.Sprintf("?%T", ev)
}
