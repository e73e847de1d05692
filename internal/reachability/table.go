package reachability

import (
	"maps"
	"slices"

	"github.com/troupe-go/troupe/member"
)

// Row is one observer's observations as they travel between nodes: the members the
// observer cannot reach, and the version of that list. Only the observer itself
// changes its row, and it bumps the version each time, so of two copies of a row the
// one with the higher version is the newer.
type Row struct {
	// Observer is the member that made the observations.
	Observer member.UniqueAddress
	// Version counts the observer's changes; 0 means the observer never recorded one.
	Version uint64
	// Unreachable holds the members the observer cannot reach, ordered by address
	// (member.CompareAddress), without duplicates.
	Unreachable []member.UniqueAddress
}

// Record is one observation: Observer cannot reach Subject.
type Record struct {
	Observer member.UniqueAddress
	Subject  member.UniqueAddress
}

// Table is the cluster's reachability table as one node knows it, after Akka's: for
// each observer, the members it cannot reach, with the observer's version. The node
// sets its own row from its failure detectors (SetOwn) and merges the rows others
// gossip (Merge); a member is unreachable when any observer says so. A row may name
// members this node does not know yet: they count from the moment they are live (the
// live argument of Records and Unreachable).
//
// Table is pure and not safe for concurrent use.
type Table struct {
	self member.UniqueAddress
	rows map[member.UniqueAddress]*Row
}

// NewTable returns the table of node self, with no observations.
func NewTable(self member.UniqueAddress) *Table {
	return &Table{self: self, rows: make(map[member.UniqueAddress]*Row)}
}

// SetOwn replaces this node's observations with unreachable (in any order; self and
// duplicates are dropped) and reports whether they changed; a change bumps the row's
// version.
func (t *Table) SetOwn(unreachable []member.UniqueAddress) bool {
	next := normalize(unreachable, t.self)
	r := t.rows[t.self]
	if r == nil {
		if len(next) == 0 {
			return false
		}
		r = &Row{Observer: t.self}
		t.rows[t.self] = r
	}
	if slices.Equal(r.Unreachable, next) {
		return false
	}
	r.Version++
	r.Unreachable = next
	return true
}

// normalize sorts us by address and drops duplicates and self.
func normalize(us []member.UniqueAddress, self member.UniqueAddress) []member.UniqueAddress {
	out := make([]member.UniqueAddress, 0, len(us))
	for _, u := range us {
		if u != self {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, member.CompareAddress)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Merge takes rows gossiped by another node and keeps, per observer, the copy with the
// higher version. Rows of this node itself are ignored (only it writes its row), and so
// are rows whose observer fails known: such a row is not stored, so the periodic gossip
// brings it again once the observer is known. A row that is stored is stored whole,
// with its subjects whether this node knows them yet or not: the same version is never
// merged again, and an observation about a member that joins later must be there when
// it is known (Records and Unreachable leave out the subjects that are not live when
// they are asked). Only subjects for which removed reports true are left out: removed
// identities never come back. A row holds at most what the observer's own row holds,
// so this keeps no more than one row per known observer. Merge reports whether the
// table changed.
func (t *Table) Merge(rows []Row, known, removed func(member.UniqueAddress) bool) bool {
	changed := false
	for _, in := range rows {
		if in.Observer == t.self || !known(in.Observer) {
			continue
		}
		cur := t.rows[in.Observer]
		if cur != nil && cur.Version >= in.Version {
			continue
		}
		var subjects []member.UniqueAddress
		for _, s := range in.Unreachable {
			if !removed(s) {
				subjects = append(subjects, s)
			}
		}
		t.rows[in.Observer] = &Row{Observer: in.Observer, Version: in.Version, Unreachable: normalize(subjects, in.Observer)}
		changed = true
	}
	return changed
}

// Remove forgets member u: its row and every observation about it. Every node removes
// a member when it is removed from the membership, so the rows stay comparable.
func (t *Table) Remove(u member.UniqueAddress) {
	delete(t.rows, u)
	for _, r := range t.rows {
		if i := slices.Index(r.Unreachable, u); i >= 0 {
			r.Unreachable = slices.Delete(slices.Clone(r.Unreachable), i, i+1)
		}
	}
}

// Rows returns a copy of every row, ordered by observer; rows without observations
// are included with their version, so that a newer empty row replaces an older one
// elsewhere.
func (t *Table) Rows() []Row {
	out := make([]Row, 0, len(t.rows))
	for _, r := range t.rows {
		out = append(out, Row{Observer: r.Observer, Version: r.Version, Unreachable: slices.Clone(r.Unreachable)})
	}
	slices.SortFunc(out, func(a, b Row) int { return member.CompareAddress(a.Observer, b.Observer) })
	return out
}

// Own returns this node's row.
func (t *Table) Own() Row {
	if r := t.rows[t.self]; r != nil {
		return Row{Observer: r.Observer, Version: r.Version, Unreachable: slices.Clone(r.Unreachable)}
	}
	return Row{Observer: t.self}
}

// Records returns every observation whose observer and subject both pass live,
// ordered by observer and then subject.
func (t *Table) Records(live func(member.UniqueAddress) bool) []Record {
	var out []Record
	for _, r := range t.Rows() {
		if !live(r.Observer) {
			continue
		}
		for _, s := range r.Unreachable {
			if live(s) {
				out = append(out, Record{Observer: r.Observer, Subject: s})
			}
		}
	}
	return out
}

// Unreachable returns the members that some observer passing live cannot reach, among
// those passing live, ordered by address.
func (t *Table) Unreachable(live func(member.UniqueAddress) bool) []member.UniqueAddress {
	set := make(map[member.UniqueAddress]bool)
	for _, r := range t.Records(live) {
		set[r.Subject] = true
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, member.CompareAddress)
	return out
}
