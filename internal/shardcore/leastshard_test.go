package shardcore

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/sharding/placement"
)

// upNode is an Up member at troupe://sys@127.0.0.<host>:2552 with age up and version v.
func upNode(host int, up int64, v string) placement.NodeInfo {
	return placement.NodeInfo{
		Address:    member.UniqueAddress{Addr: fmt.Sprintf("troupe://sys@127.0.0.%d:2552", host), UID: 1},
		Status:     member.Up,
		AppVersion: v,
		UpNumber:   up,
	}
}

// regionOn is the region on a node.
func regionOn(n placement.NodeInfo) placement.RegionID {
	return placement.RegionID(n.Address.Addr + "/system/sharding/t#1")
}

// shardIDs returns "001".."999" style ids from..to inclusive.
func shardIDs(from, to int) []placement.ShardID {
	var out []placement.ShardID
	for i := from; i <= to; i++ {
		out = append(out, placement.ShardID(fmt.Sprintf("%03d", i)))
	}
	return out
}

// threeRegions builds regions A, B, C (hosts 1, 2, 3, same age and version) holding
// counts[i] consecutive shards each, numbered from 001.
func threeRegions(counts ...int) []placement.RegionInfo {
	return nRegions(counts...)
}

func nRegions(counts ...int) []placement.RegionInfo {
	var out []placement.RegionInfo
	next := 1
	for i, n := range counts {
		node := upNode(i+1, 1, "1.0.0")
		out = append(out, placement.RegionInfo{Region: regionOn(node), Node: node, Shards: shardIDs(next, next+n-1)})
		next += n
	}
	return out
}

func membersOf(regions []placement.RegionInfo) []placement.NodeInfo {
	var out []placement.NodeInfo
	for _, r := range regions {
		out = append(out, r.Node)
	}
	return out
}

func mustStrategy(t *testing.T, cfg LeastShardSettings) *LeastShard {
	t.Helper()
	return NewLeastShard(cfg)
}

// unlimited is the newer algorithm without effective limits, as in Akka's own tests.
var unlimited = LeastShardSettings{RebalanceAbsoluteLimit: 1000, RebalanceRelativeLimit: 1.0}

func rebalance(t *testing.T, s placement.AllocationStrategy, regions []placement.RegionInfo, inProgress ...placement.ShardID) []placement.ShardID {
	t.Helper()
	ip := map[placement.ShardID]bool{}
	for _, id := range inProgress {
		ip[id] = true
	}
	out, err := s.Rebalance(placement.RebalanceRequest{Regions: regions, InProgress: ip, Members: membersOf(regions)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// afterRebalance removes the moved shards and allocates them again, in ID order, with
// the strategy, as the coordinator does.
func afterRebalance(t *testing.T, s placement.AllocationStrategy, regions []placement.RegionInfo, moved []placement.ShardID) []placement.RegionInfo {
	t.Helper()
	out := make([]placement.RegionInfo, len(regions))
	for i, r := range regions {
		r.Shards = slices.DeleteFunc(slices.Clone(r.Shards), func(id placement.ShardID) bool { return slices.Contains(moved, id) })
		out[i] = r
	}
	for _, id := range slices.Sorted(slices.Values(moved)) {
		home, err := s.AllocateShard(placement.AllocationRequest{Shard: id, Regions: out})
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if out[i].Region == home {
				out[i].Shards = append(out[i].Shards, id)
			}
		}
	}
	return out
}

func counts(regions []placement.RegionInfo) []int {
	var out []int
	for _, r := range regions {
		out = append(out, len(r.Shards))
	}
	return out
}

func sortedCounts(regions []placement.RegionInfo) []int {
	return slices.Sorted(slices.Values(counts(regions)))
}

func TestLeastShardWorkedCases(t *testing.T) {
	type round struct {
		moved  []placement.ShardID
		counts []int // after the round, per region (nil: not checked)
		sorted []int // after the round, sorted (nil: not checked)
	}
	cases := []struct {
		name   string
		cfg    LeastShardSettings
		start  []placement.RegionInfo
		rounds []round
	}{
		{"[1,2,0]", unlimited, threeRegions(1, 2, 0), []round{{moved: shardIDs(2, 2), counts: []int{1, 1, 1}}}},
		{"[2,0,0]", unlimited, threeRegions(2, 0, 0), []round{{moved: shardIDs(1, 1), counts: []int{1, 1, 0}}}},
		{"[1,1,0] stays", unlimited, threeRegions(1, 1, 0), []round{{moved: nil, counts: []int{1, 1, 0}}}},
		{"[3,0,0]", unlimited, threeRegions(3, 0, 0), []round{{moved: shardIDs(1, 2), counts: []int{1, 1, 1}}}},
		{"[4,4,0]", unlimited, threeRegions(4, 4, 0), []round{{moved: []placement.ShardID{"001", "005"}, counts: []int{3, 3, 2}}}},
		{"[4,4,2] phase 2", unlimited, threeRegions(4, 4, 2), []round{{moved: []placement.ShardID{"001"}, counts: []int{3, 4, 3}}}},
		{"[5,5,0] two rounds", unlimited, threeRegions(5, 5, 0), []round{
			{moved: []placement.ShardID{"001", "006"}, counts: []int{4, 4, 2}},
			{moved: []placement.ShardID{"002"}, counts: []int{3, 4, 3}},
		}},
		{"[50,0,50] two rounds", unlimited, func() []placement.RegionInfo {
			r := threeRegions(50, 0, 50)
			// createAllocations(aCount = 50, cCount = 50): C holds 051..100.
			r[2].Shards = shardIDs(51, 100)
			return r
		}(), []round{
			{moved: append(shardIDs(1, 16), shardIDs(51, 66)...), sorted: []int{32, 34, 34}},
			{moved: []placement.ShardID{"017"}, sorted: []int{33, 33, 34}},
		}},
		{"absolute limit 3 on [1,9,0]", LeastShardSettings{RebalanceAbsoluteLimit: 3, RebalanceRelativeLimit: 1.0},
			threeRegions(1, 9, 0), []round{{moved: shardIDs(2, 4), counts: []int{2, 6, 2}}}},
		{"relative limit 0.3 on [1,9,0]", LeastShardSettings{RebalanceAbsoluteLimit: 5, RebalanceRelativeLimit: 0.3},
			threeRegions(1, 9, 0), []round{{moved: shardIDs(2, 4), counts: []int{2, 6, 2}}}},
		{"most unbalanced region first, limit 1", LeastShardSettings{RebalanceAbsoluteLimit: 1, RebalanceRelativeLimit: 1.0},
			nRegions(0, 1, 3, 4), []round{
				{moved: []placement.ShardID{"005"}, sorted: []int{1, 1, 3, 3}},
				{moved: []placement.ShardID{"006"}, sorted: []int{1, 2, 2, 3}},
				{moved: []placement.ShardID{"002"}, sorted: []int{2, 2, 2, 2}},
			}},
		{"five regions, limit 1 takes from the largest", LeastShardSettings{RebalanceAbsoluteLimit: 1, RebalanceRelativeLimit: 1.0},
			nRegions(0, 1, 2, 5, 7), []round{{moved: []placement.ShardID{"009"}, sorted: []int{1, 1, 2, 5, 6}}}},
		{"limit 3 all from the largest", LeastShardSettings{RebalanceAbsoluteLimit: 3, RebalanceRelativeLimit: 1.0},
			nRegions(0, 0, 3, 5), []round{{moved: []placement.ShardID{"004", "005", "006"}, sorted: []int{1, 2, 2, 3}}}},
		{"default relative limit 0.1 moves at least one", LeastShardSettings{RebalanceAbsoluteLimit: 100},
			threeRegions(3, 0, 0), []round{{moved: []placement.ShardID{"001"}, counts: []int{2, 1, 0}}}},
		{"default relative limit 0.1 of 40 shards", LeastShardSettings{RebalanceAbsoluteLimit: 100},
			threeRegions(40, 0, 0), []round{{moved: shardIDs(1, 4), counts: []int{36, 2, 2}}}},

		// Classic algorithm.
		{"classic T1 [3,0,0]", LeastShardSettings{}, threeRegions(3, 0, 0), []round{{moved: shardIDs(1, 1), counts: []int{2, 1, 0}}}},
		{"classic T1 [2,1,0]", LeastShardSettings{}, threeRegions(2, 1, 0), []round{{moved: shardIDs(1, 1), counts: []int{1, 1, 1}}}},
		{"classic T1 [1,1,0] stays", LeastShardSettings{}, threeRegions(1, 1, 0), []round{{moved: nil}}},
		{"classic T2 [10,0,0]", LeastShardSettings{RebalanceThreshold: 2, MaxSimultaneousRebalance: 10},
			threeRegions(10, 0, 0), []round{{moved: shardIDs(1, 2), counts: []int{8, 1, 1}}}},
		{"classic T3 [10,0,0]", LeastShardSettings{RebalanceThreshold: 3, MaxSimultaneousRebalance: 10},
			threeRegions(10, 0, 0), []round{{moved: shardIDs(1, 3), counts: []int{7, 2, 1}}}},
		{"classic T3 M2 [10,0,0] capped by max simultaneous", LeastShardSettings{RebalanceThreshold: 3, MaxSimultaneousRebalance: 2},
			threeRegions(10, 0, 0), []round{{moved: shardIDs(1, 2), counts: []int{8, 1, 1}}}},
		{"classic T2 diff 3 moves 1", LeastShardSettings{RebalanceThreshold: 2, MaxSimultaneousRebalance: 10},
			threeRegions(4, 1, 1), []round{{moved: shardIDs(1, 1)}}},
		{"classic ties take the first region in order", LeastShardSettings{}, threeRegions(3, 3, 0),
			[]round{{moved: shardIDs(1, 1), counts: []int{2, 3, 1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustStrategy(t, tc.cfg)
			regions := tc.start
			for i, r := range tc.rounds {
				got := rebalance(t, s, regions)
				if !slices.Equal(got, r.moved) {
					t.Fatalf("round %d: moved %v, want %v", i+1, got, r.moved)
				}
				regions = afterRebalance(t, s, regions, got)
				if r.counts != nil && !slices.Equal(counts(regions), r.counts) {
					t.Fatalf("round %d: counts %v, want %v", i+1, counts(regions), r.counts)
				}
				if r.sorted != nil && !slices.Equal(sortedCounts(regions), r.sorted) {
					t.Fatalf("round %d: sorted counts %v, want %v", i+1, sortedCounts(regions), r.sorted)
				}
			}
		})
	}
}

func TestLeastShardAllocateToFewestShards(t *testing.T) {
	s := mustStrategy(t, unlimited)
	regions := threeRegions(1, 1, 0)
	got, err := s.AllocateShard(placement.AllocationRequest{Requester: regions[0].Region, Shard: "003", Regions: regions})
	if err != nil || got != regions[2].Region {
		t.Fatalf("got %q, %v; want the third region", got, err)
	}
}

func TestLeastShardInProgress(t *testing.T) {
	newer := mustStrategy(t, unlimited)
	if got := rebalance(t, newer, threeRegions(10, 0, 0), "002", "003"); got != nil {
		t.Fatalf("newer algorithm moved %v while a rebalance is in progress", got)
	}

	classic := mustStrategy(t, LeastShardSettings{RebalanceThreshold: 3, MaxSimultaneousRebalance: 3})
	cases := []struct {
		inProgress []placement.ShardID
		want       []placement.ShardID
	}{
		{nil, shardIDs(1, 3)},
		{[]placement.ShardID{"009"}, shardIDs(1, 2)},
		{[]placement.ShardID{"009", "010"}, shardIDs(1, 1)},
		{[]placement.ShardID{"008", "009", "010"}, nil},
		// Shards in hand-off do not count for the region with the most shards: 10 - 2
		// free against 0 is a difference of 8, so min(5, 3, 1) = 1 shard, the lowest free.
		{[]placement.ShardID{"001", "002"}, shardIDs(3, 3)},
	}
	for _, tc := range cases {
		if got := rebalance(t, classic, threeRegions(10, 0, 0), tc.inProgress...); !slices.Equal(got, tc.want) {
			t.Errorf("in progress %v: moved %v, want %v", tc.inProgress, got, tc.want)
		}
	}
}

func TestLeastShardNoRebalanceWhenNotAGoodTime(t *testing.T) {
	for _, cfg := range []LeastShardSettings{unlimited, {}} {
		s := mustStrategy(t, cfg)
		name := fmt.Sprintf("abs=%d", cfg.RebalanceAbsoluteLimit)
		base := threeRegions(5, 5, 0)
		check := func(what string, req placement.RebalanceRequest) {
			t.Helper()
			got, err := s.Rebalance(req)
			if err != nil || got != nil {
				t.Errorf("%s, %s: moved %v (%v), want nothing", name, what, got, err)
			}
		}
		check("no regions", placement.RebalanceRequest{})

		versions := threeRegions(5, 5, 0)
		versions[1].Node.AppVersion = "1.0.1"
		check("app versions differ", placement.RebalanceRequest{Regions: versions, Members: membersOf(versions)})

		unreachable := membersOf(base)
		unreachable[1].Unreachable = true
		check("member unreachable", placement.RebalanceRequest{Regions: base, Members: unreachable})

		regionUnreachable := threeRegions(5, 5, 0)
		regionUnreachable[2].Node.Unreachable = true
		check("region node unreachable", placement.RebalanceRequest{Regions: regionUnreachable})

		joining := append(membersOf(base), placement.NodeInfo{Address: member.UniqueAddress{Addr: "troupe://sys@127.0.0.9:2552", UID: 1}, Status: member.Joining})
		check("member joining", placement.RebalanceRequest{Regions: base, Members: joining})

		unknown := threeRegions(5, 5, 0)
		for i := range unknown {
			unknown[i].Node.Status = 0
		}
		check("all members unknown", placement.RebalanceRequest{Regions: unknown})

		// Sanity: the same layout does move shards when all is well.
		if got, _ := s.Rebalance(placement.RebalanceRequest{Regions: base, Members: membersOf(base)}); len(got) == 0 {
			t.Errorf("%s: healthy [5,5,0] moved nothing", name)
		}
	}
}

func TestLeastShardRegionOrder(t *testing.T) {
	// Akka's "prefer least shards, latest version, non downed, leaving or exiting nodes".
	old := upNode(1, 1, "1.0.0")
	leaving := upNode(2, 1, "1.0.0")
	leaving.Status = member.Leaving
	new1, new2, new3 := upNode(3, 1, "1.0.1"), upNode(4, 1, "1.0.1"), upNode(5, 1, "1.0.1")
	regions := []placement.RegionInfo{
		{Region: "fewest", Node: new1},
		{Region: "leaving", Node: leaving},
		{Region: "most", Node: new3, Shards: []placement.ShardID{"s2", "s3"}},
		{Region: "oldapp", Node: old},
		{Region: "oneshard", Node: new2, Shards: []placement.ShardID{"s1"}},
	}
	var got []placement.RegionID
	for _, r := range sortRegions(regions) {
		got = append(got, r.Region)
	}
	want := []placement.RegionID{"fewest", "oneshard", "most", "oldapp", "leaving"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestLeastShardAllocationTies(t *testing.T) {
	s := mustStrategy(t, LeastShardSettings{})
	exiting, down := upNode(5, 1, "1.0.0"), upNode(6, 1, "1.0.0")
	exiting.Status, down.Status = member.Exiting, member.Down
	notUp := upNode(7, 0, "1.0.0")
	cases := []struct {
		name    string
		regions []placement.RegionInfo
		want    placement.RegionID
	}{
		{"older member wins", []placement.RegionInfo{
			{Region: "young", Node: upNode(1, 9, "1")}, {Region: "old", Node: upNode(2, 3, "1")},
		}, "old"},
		{"same age: lower address wins", []placement.RegionInfo{
			{Region: "b", Node: upNode(2, 3, "1")}, {Region: "a", Node: upNode(1, 3, "1")},
		}, "a"},
		{"a member with an age beats one without", []placement.RegionInfo{
			{Region: "noage", Node: notUp}, {Region: "aged", Node: upNode(9, 100, "1")},
		}, "aged"},
		{"numeric address ports compare numerically", []placement.RegionInfo{
			{Region: "p10000", Node: placement.NodeInfo{Address: member.UniqueAddress{Addr: "troupe://s@h:10000"}, Status: member.Up, UpNumber: 1}},
			{Region: "p9000", Node: placement.NodeInfo{Address: member.UniqueAddress{Addr: "troupe://s@h:9000"}, Status: member.Up, UpNumber: 1}},
		}, "p9000"},
		{"fewer shards beat age", []placement.RegionInfo{
			{Region: "old", Node: upNode(1, 1, "1"), Shards: []placement.ShardID{"x"}}, {Region: "young", Node: upNode(2, 5, "1")},
		}, "young"},
		{"leaving, exiting and down regions are skipped while another can host", []placement.RegionInfo{
			{Region: "leaving", Node: func() placement.NodeInfo { n := upNode(1, 1, "1"); n.Status = member.Leaving; return n }()},
			{Region: "exiting", Node: exiting}, {Region: "down", Node: down},
			{Region: "busy", Node: upNode(4, 9, "1"), Shards: shardIDs(1, 50)},
		}, "busy"},
		{"newer app version beats fewer shards", []placement.RegionInfo{
			{Region: "v1", Node: upNode(1, 1, "1.9.0")},
			{Region: "v2", Node: upNode(2, 1, "1.10.0"), Shards: shardIDs(1, 5)},
		}, "v2"},
		{"shutting down is never a candidate", []placement.RegionInfo{
			{Region: "closing", Node: upNode(1, 1, "1"), ShuttingDown: true},
			{Region: "busy", Node: upNode(2, 1, "1"), Shards: shardIDs(1, 5)},
		}, "busy"},
		{"unknown member is skipped", []placement.RegionInfo{
			{Region: "unknown"}, {Region: "known", Node: upNode(2, 1, "1"), Shards: shardIDs(1, 5)},
		}, "known"},
		{"no member known: fewest shards", []placement.RegionInfo{
			{Region: "b", Shards: shardIDs(1, 2)}, {Region: "a", Shards: shardIDs(3, 3)}, {Region: "c", Shards: shardIDs(4, 4)},
		}, "a"},
	}
	for _, tc := range cases {
		got, err := s.AllocateShard(placement.AllocationRequest{Shard: "x", Regions: tc.regions})
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// No member known: the requester, when it can host.
	got, err := s.AllocateShard(placement.AllocationRequest{Requester: "c", Shard: "x", Regions: []placement.RegionInfo{{Region: "a"}, {Region: "c", Shards: shardIDs(1, 9)}}})
	if err != nil || got != "c" {
		t.Errorf("requester fallback: got %q, %v", got, err)
	}
	// Nothing can host.
	_, err = s.AllocateShard(placement.AllocationRequest{Shard: "x", Regions: []placement.RegionInfo{{Region: "a", ShuttingDown: true}}})
	if !errors.Is(err, placement.ErrNoRegion) {
		t.Errorf("all shutting down: err %v, want ErrNoRegion", err)
	}
	if _, err = s.AllocateShard(placement.AllocationRequest{Shard: "x"}); !errors.Is(err, placement.ErrNoRegion) {
		t.Errorf("no regions: err %v, want ErrNoRegion", err)
	}
}

func TestLeastShardRebalanceSkipsShuttingDownAndUnknown(t *testing.T) {
	s := mustStrategy(t, LeastShardSettings{})
	regions := threeRegions(10, 0, 0)
	regions[1].ShuttingDown = true
	regions[2].Node.Status = 0
	if got := rebalance(t, s, regions); got != nil {
		t.Fatalf("moved %v to a region that is shutting down or unknown", got)
	}
	regions = append(regions, placement.RegionInfo{Region: "fresh", Node: upNode(9, 5, "1.0.0")})
	if got := rebalance(t, s, regions); !slices.Equal(got, shardIDs(1, 1)) {
		t.Fatalf("moved %v, want [001]", got)
	}
}

// The zero settings are the defaults: the classic algorithm, threshold 1, at most 3
// hand-offs at once, and 0.1 for the newer algorithm's relative limit.
func TestLeastShardDefaults(t *testing.T) {
	s := mustStrategy(t, LeastShardSettings{})
	if s.cfg.RebalanceRelativeLimit != 0.1 || s.cfg.RebalanceThreshold != 1 || s.cfg.MaxSimultaneousRebalance != 3 {
		t.Fatalf("defaults not applied: %+v", s.cfg)
	}
}

func TestCompareAppVersion(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0},
		{"1.0", "1.0.0", 0},
		{"", "0", 0},
		{"1.9.0", "1.10.0", -1},
		{"2", "1.99", 1},
		{"1.2.3-RC1", "1.2.3", -1},
		{"1.2.3-RC1", "1.2.3-RC2", -1},
		{"1.2.3+build", "1.2.3", -1},
		{"1.a", "1.1", 1},
		{"1.a", "1.b", -1},
	}
	for _, tc := range cases {
		if got := compareAppVersion(tc.a, tc.b); got != tc.want {
			t.Errorf("compare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := compareAppVersion(tc.b, tc.a); got != -tc.want {
			t.Errorf("compare(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestNodeAddress(t *testing.T) {
	cases := map[placement.RegionID]string{
		"troupe://sys@10.0.0.5:2552/system/sharding/cart#42": "troupe://sys@10.0.0.5:2552",
		"troupe://sys@10.0.0.5:2552#7":                       "troupe://sys@10.0.0.5:2552",
		"troupe://sys":                                       "troupe://sys",
		"/system/sharding/cart":                              "",
		"r1":                                                 "",
	}
	for in, want := range cases {
		if got := NodeAddress(in); got != want {
			t.Errorf("nodeAddress(%q) = %q, want %q", in, got, want)
		}
	}
}
