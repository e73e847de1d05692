package singletoncore

import (
	"slices"

	"github.com/troupe-go/troupe/member"
)

// memberTable is a core's view of the members: those not removed, and the identities
// removed so far (which never come back).
type memberTable struct {
	role    string
	members map[member.UniqueAddress]Member
	removed map[member.UniqueAddress]bool
}

func newMemberTable(role string) memberTable {
	return memberTable{
		role:    role,
		members: make(map[member.UniqueAddress]Member),
		removed: make(map[member.UniqueAddress]bool),
	}
}

// update records m; it reports false for a member already removed.
func (t *memberTable) update(m Member) bool {
	if t.removed[m.Node] {
		return false
	}
	if m.Status == member.Removed {
		t.remove(m.Node)
		return true
	}
	m.Roles = slices.Clone(m.Roles)
	t.members[m.Node] = m
	return true
}

// remove forgets the member for good; it returns the member as it was known.
func (t *memberTable) remove(n member.UniqueAddress) (Member, bool) {
	m, ok := t.members[n]
	delete(t.members, n)
	t.removed[n] = true
	return m, ok
}

// get returns the member n, if known and not removed.
func (t *memberTable) get(n member.UniqueAddress) (Member, bool) {
	m, ok := t.members[n]
	return m, ok
}

// hasRole reports whether m has the table's role ("" is every member).
func (t *memberTable) hasRole(m Member) bool {
	return t.role == "" || slices.Contains(m.Roles, t.role)
}

// candidate reports whether m may be the oldest: it has the role and is Up or Leaving.
func (t *memberTable) candidate(m Member) bool {
	return (m.Status == member.Up || m.Status == member.Leaving) && m.UpNumber > 0 && t.hasRole(m)
}

// oldest returns the oldest candidate that skip does not exclude.
func (t *memberTable) oldest(skip func(member.UniqueAddress) bool) (Member, bool) {
	var best Member
	found := false
	for _, m := range t.members {
		if !t.candidate(m) || skip(m.Node) {
			continue
		}
		if !found || compareAge(m, best) < 0 {
			best, found = m, true
		}
	}
	return best, found
}

// compareAge orders members oldest first: member.CompareAge, the cluster's one age
// order (equal UpNumbers ordered by member.CompareAddress), so that the manager's
// oldest is the cluster's.
func compareAge(a, b Member) int {
	return member.CompareAge(
		member.Member{Unique: a.Node, Status: a.Status, UpNumber: a.UpNumber},
		member.Member{Unique: b.Node, Status: b.Status, UpNumber: b.UpNumber})
}
