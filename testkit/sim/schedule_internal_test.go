package sim

import (
	"slices"
	"testing"
	"time"
)

func TestPartitionCutsOnlyBetweenSides(t *testing.T) {
	e := Event{Kind: Partition, Sides: [][]int{{1, 0}, {4, 3}, {2}}}
	there, back := e.crossing(false), e.crossing(true)
	side := map[int]int{1: 0, 0: 0, 4: 1, 3: 1, 2: 2}
	if len(there) != 8 || len(back) != 8 {
		t.Fatalf("crossing = %v and %v, want 8 links each way", there, back)
	}
	for i, l := range there {
		if side[l[0]] >= side[l[1]] {
			t.Errorf("link %v does not go from an earlier side to a later one", l)
		}
		if r := back[i]; r != [2]int{l[1], l[0]} {
			t.Errorf("way back %v, want %v", r, [2]int{l[1], l[0]})
		}
	}
}

func TestGenerateIsAFunctionOfItsSeed(t *testing.T) {
	a, b := Generate(42, 5, 8, 3*time.Minute), Generate(42, 5, 8, 3*time.Minute)
	if !slices.EqualFunc(a, b, func(x, y Event) bool { return x.String() == y.String() }) {
		t.Fatalf("two schedules of one seed differ:\n%v\n%v", a, b)
	}
	if last := a[len(a)-1]; last.Kind != Heal && last.Kind != Restart {
		t.Errorf("the schedule ends with %v, want a heal and restarts", last)
	}
}

func TestSeedRangeParsesCountsAndRanges(t *testing.T) {
	for _, c := range []struct {
		in          string
		first, last uint64
		ok          bool
	}{
		{"1000", 1, 1000, true},
		{"1001-2000", 1001, 2000, true},
		{"7-7", 7, 7, true},
		{"0", 0, 0, false},
		{"5-3", 0, 0, false},
		{"x", 0, 0, false},
		{"3-", 0, 0, false},
	} {
		first, last, ok := seedRange(c.in)
		if ok != c.ok || first != c.first || last != c.last {
			t.Errorf("seedRange(%q) = %d, %d, %v; want %d, %d, %v", c.in, first, last, ok, c.first, c.last, c.ok)
		}
	}
}
