package membership

import "fmt"

// ua returns the unique address "addr" with uid 1.
func ua(addr string) UniqueAddress { return UniqueAddress{Addr: addr, UID: 1} }

// mem returns a member at addr (uid 1) with the status, age and roles.
func mem(addr string, s MemberStatus, age int64, roles ...string) Member {
	return Member{Unique: ua(addr), Status: s, UpNumber: age, Roles: NormalizeRoles(roles)}
}

// describe renders events as short strings, for table tests.
func describe(evs []Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, describeOne(ev))
	}
	return out
}

func describeOne(ev Event) string {
	switch e := ev.(type) {
	case MemberJoined:
		return "joined " + e.Member.Unique.Addr
	case MemberUp:
		return fmt.Sprintf("up %s@%d", e.Member.Unique.Addr, e.Member.UpNumber)
	case MemberLeft:
		return "left " + e.Member.Unique.Addr
	case MemberExited:
		return "exited " + e.Member.Unique.Addr
	case MemberDowned:
		return "downed " + e.Member.Unique.Addr
	case MemberRemoved:
		return fmt.Sprintf("removed %s from %s", e.Member.Unique.Addr, e.PreviousStatus)
	case RemovalMarginPassed:
		return fmt.Sprintf("margin %s from %s", e.Member.Unique.Addr, e.PreviousStatus)
	case UnreachableMember:
		return "unreachable " + e.Member.Unique.Addr
	case ReachableMember:
		return "reachable " + e.Member.Unique.Addr
	case OldestChanged:
		who := "none"
		if e.Oldest != nil {
			who = e.Oldest.Unique.Addr
		}
		return fmt.Sprintf("oldest[%s] %s", e.Role, who)
	}
	return fmt.Sprintf("?%T", ev)
}
