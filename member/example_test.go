package member_test

import (
	"fmt"

	"github.com/troupe-go/troupe/member"
)

// Three members as a node sees them: the oldest is the Up member with the lowest
// UpNumber; the Joining one has no age yet, and equal ages go to the lower address.
func Example() {
	at := func(addr string, s member.MemberStatus, age int64, roles ...string) member.Member {
		return member.Member{
			Unique: member.UniqueAddress{Addr: addr, UID: 1},
			Status: s, UpNumber: age, Roles: member.NormalizeRoles(roles),
		}
	}
	members := []member.Member{
		at("troupe://app@10.0.0.3:2552", member.Up, 1700, "backend"),
		at("troupe://app@10.0.0.1:2552", member.Joining, 0, "backend"),
		at("troupe://app@10.0.0.2:2552", member.Up, 1700),
	}
	oldest, _ := member.Oldest(members, "")
	fmt.Println("oldest:", oldest.Unique.Addr)
	backend, _ := member.Oldest(members, "backend")
	fmt.Println("oldest backend:", backend.Unique.Addr)

	member.SortByAge(members)
	for _, m := range members {
		fmt.Println(m.Status, m.Unique)
	}
	fmt.Println(member.CompareAddress(members[0].Unique, members[1].Unique))
	// Output:
	// oldest: troupe://app@10.0.0.2:2552
	// oldest backend: troupe://app@10.0.0.3:2552
	// Up troupe://app@10.0.0.2:2552#1
	// Up troupe://app@10.0.0.3:2552#1
	// Joining troupe://app@10.0.0.1:2552#1
	// -1
}
