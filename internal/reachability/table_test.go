package reachability

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/member"
)

func ua(addr string) member.UniqueAddress { return member.UniqueAddress{Addr: addr, UID: 1} }

func uas(addrs ...string) []member.UniqueAddress {
	var out []member.UniqueAddress
	for _, a := range addrs {
		out = append(out, ua(a))
	}
	return out
}

func all(member.UniqueAddress) bool { return true }

func none(member.UniqueAddress) bool { return false }

// describeRows renders rows as "observer@version:subject,subject".
func describeRows(rows []Row) string {
	var parts []string
	for _, r := range rows {
		var subs []string
		for _, s := range r.Unreachable {
			subs = append(subs, s.Addr)
		}
		parts = append(parts, fmt.Sprintf("%s@%d:%s", r.Observer.Addr, r.Version, strings.Join(subs, ",")))
	}
	return strings.Join(parts, " ")
}

func TestTableOwnRow(t *testing.T) {
	tb := NewTable(ua("a"))
	steps := []struct {
		name    string
		set     []string
		changed bool
		want    string
	}{
		{"nothing to nothing: no row", nil, false, ""},
		{"b unreachable", []string{"b"}, true, "a@1:b"},
		{"same again, any order, duplicates, self: no change", []string{"b", "a", "b"}, false, "a@1:b"},
		{"c too", []string{"c", "b"}, true, "a@2:b,c"},
		{"all reachable: an empty row keeps its version", nil, true, "a@3:"},
	}
	for _, s := range steps {
		if got := tb.SetOwn(uas(s.set...)); got != s.changed {
			t.Fatalf("%s: changed = %v", s.name, got)
		}
		if got := describeRows(tb.Rows()); got != s.want {
			t.Fatalf("%s: rows %q, want %q", s.name, got, s.want)
		}
	}
	if own := tb.Own(); own.Version != 3 || len(own.Unreachable) != 0 {
		t.Errorf("Own = %+v", own)
	}
}

func TestTableMerge(t *testing.T) {
	removed := ua("gone")
	keep := func(u member.UniqueAddress) bool { return u != removed }
	isRemoved := func(u member.UniqueAddress) bool { return u == removed }
	tb := NewTable(ua("a"))
	tb.SetOwn(uas("x"))
	steps := []struct {
		name    string
		rows    []Row
		changed bool
		want    string
	}{
		{"b's row arrives", []Row{{Observer: ua("b"), Version: 2, Unreachable: uas("c")}}, true, "a@1:x b@2:c"},
		{"an older copy is ignored", []Row{{Observer: ua("b"), Version: 1, Unreachable: uas("d")}}, false, "a@1:x b@2:c"},
		{"the same version is the same row", []Row{{Observer: ua("b"), Version: 2, Unreachable: uas("c")}}, false, "a@1:x b@2:c"},
		{"a newer one replaces it, even empty", []Row{{Observer: ua("b"), Version: 3}}, true, "a@1:x b@3:"},
		{"this node's own row from elsewhere is ignored", []Row{{Observer: ua("a"), Version: 9}}, false, "a@1:x b@3:"},
		{"rows of removed observers are ignored", []Row{{Observer: removed, Version: 1, Unreachable: uas("b")}}, false, "a@1:x b@3:"},
		{"removed subjects are left out, unsorted input sorted", []Row{{Observer: ua("c"), Version: 1, Unreachable: []member.UniqueAddress{ua("e"), removed, ua("d"), ua("c")}}},
			true, "a@1:x b@3: c@1:d,e"},
	}
	for _, s := range steps {
		if got := tb.Merge(s.rows, keep, isRemoved); got != s.changed {
			t.Fatalf("%s: changed = %v", s.name, got)
		}
		if got := describeRows(tb.Rows()); got != s.want {
			t.Fatalf("%s: rows %q, want %q", s.name, got, s.want)
		}
	}
	// Two tables that exchange their rows agree.
	other := NewTable(ua("z"))
	other.SetOwn(uas("a"))
	other.Merge(tb.Rows(), all, none)
	tb.Merge(other.Rows(), all, none)
	if describeRows(other.Rows()) != describeRows(tb.Rows()) {
		t.Fatalf("tables differ after exchange:\n%s\n%s", describeRows(tb.Rows()), describeRows(other.Rows()))
	}
}

func TestTableRemoveAndAggregate(t *testing.T) {
	tb := NewTable(ua("a"))
	tb.SetOwn(uas("d"))
	tb.Merge([]Row{
		{Observer: ua("b"), Version: 1, Unreachable: uas("d", "e")},
		{Observer: ua("c"), Version: 4, Unreachable: uas("b")},
		{Observer: ua("e"), Version: 1, Unreachable: uas("a")},
	}, all, none)
	live := func(u member.UniqueAddress) bool { return u != ua("c") } // c is Down
	var recs []string
	for _, r := range tb.Records(live) {
		recs = append(recs, r.Observer.Addr+">"+r.Subject.Addr)
	}
	if want := []string{"a>d", "b>d", "b>e", "e>a"}; !slices.Equal(recs, want) {
		t.Fatalf("records %q, want %q", recs, want)
	}
	if got := tb.Unreachable(live); !slices.Equal(got, uas("a", "d", "e")) {
		t.Fatalf("unreachable %v", got)
	}
	tb.Remove(ua("e"))
	if got := describeRows(tb.Rows()); got != "a@1:d b@1:d c@4:b" {
		t.Fatalf("after removing e: %q", got)
	}
	if got := tb.Unreachable(all); !slices.Equal(got, uas("b", "d")) {
		t.Fatalf("unreachable after removal %v", got)
	}
}

// TestTableRowAboutAMemberNotYetKnown merges a row whose subject this node does not know
// yet: when the member becomes known, the observation is there, although the same row
// (same version) is never merged again. Before, the subject was dropped and the row's
// version kept, and the observation was missing until the observer's row changed.
func TestTableRowAboutAMemberNotYetKnown(t *testing.T) {
	known := map[member.UniqueAddress]bool{ua("a"): true, ua("b"): true}
	isKnown := func(u member.UniqueAddress) bool { return known[u] }
	removed := func(u member.UniqueAddress) bool { return u == ua("gone") }
	tb := NewTable(ua("a"))
	row := Row{Observer: ua("b"), Version: 4, Unreachable: uas("gone", "late")}
	if !tb.Merge([]Row{row}, isKnown, removed) {
		t.Fatal("a row of a known observer did not change the table")
	}
	if got := tb.Unreachable(isKnown); len(got) != 0 {
		t.Fatalf("unreachable %v before late is known", got)
	}
	known[ua("late")] = true
	if tb.Merge([]Row{row}, isKnown, removed) {
		t.Fatal("the same row again changed the table")
	}
	if got := tb.Unreachable(isKnown); !slices.Equal(got, uas("late")) {
		t.Fatalf("unreachable %v once late is known, want [late]", got)
	}
	if got := describeRows(tb.Rows()); got != "b@4:late" {
		t.Fatalf("rows %q: a removed identity is never kept", got)
	}
}
