package management

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/sharding"
)

func ua(port string, uid uint64) cluster.UniqueAddress {
	return cluster.UniqueAddress{Addr: "troupe://shop@10.0.0.1:" + port, UID: uid}
}

func TestMembersView(t *testing.T) {
	a, b, c := ua("1", 1), ua("2", 2), ua("3", 3)
	ma := cluster.Member{Unique: a, Status: cluster.Up, Roles: []string{"web"}, UpNumber: 20}
	mb := cluster.Member{Unique: b, Status: cluster.Up, UpNumber: 10}
	mc := cluster.Member{Unique: c, Status: cluster.Joining}
	st := cluster.CurrentClusterState{
		Members: []cluster.Member{ma, mb, mc}, Unreachable: []cluster.Member{mb},
		Oldest: &mb, OldestByRole: map[string]cluster.Member{"web": ma},
	}
	obs := []cluster.Observation{{Observer: c, Subject: b}, {Observer: a, Subject: b}, {Observer: a, Subject: c}}
	v := membersView(a, st, obs)
	if v.SelfNode != a.Addr || v.Oldest != b.Addr || v.OldestPerRole["web"] != a.Addr {
		t.Fatalf("view %+v", v)
	}
	if len(v.Members) != 3 || v.Members[0].AgeOrder != 2 || v.Members[1].AgeOrder != 1 || v.Members[2].AgeOrder != 0 {
		t.Fatalf("members %+v", v.Members)
	}
	if v.Members[0].NodeUID != "1" || v.Members[2].Status != "Joining" || v.Members[2].Roles == nil {
		t.Fatalf("members %+v", v.Members)
	}
	if len(v.Unreachable) != 1 || v.Unreachable[0].Node != b.Addr || !slices.Equal(v.Unreachable[0].ObservedBy, []string{a.Addr, c.Addr}) {
		t.Fatalf("unreachable %+v", v.Unreachable)
	}
}

func TestParseMemberAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"troupe://shop@10.0.0.1:2552", "troupe://shop@10.0.0.1:2552"},
		{"shop@10.0.0.1:2552", "troupe://shop@10.0.0.1:2552"},
		{"", ""},
		{"shop", ""},
		{"shop@10.0.0.1", ""},
		{"troupe://shop@10.0.0.1:0", ""},
		{"troupe://shop@10.0.0.1:port", ""},
		{"http://shop@10.0.0.1:2552", ""},
		{"@:", ""},
		{"shop@[::1]:2552", "troupe://shop@[::1]:2552"},
	} {
		a, err := parseMemberAddress(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: parsed as %v, want an error", tc.in, a)
		case tc.want != "" && (err != nil || a.String() != tc.want):
			t.Errorf("%q: %v, %v; want %s", tc.in, a, err, tc.want)
		}
	}
}

func TestParseTypes(t *testing.T) {
	got, err := parseTypes([]string{"member-up, member-removed", "shard-allocated", ""})
	if err != nil || len(got) != 3 || !got[EventMemberUp] || !got[EventMemberRemoved] || !got[EventShardAllocated] {
		t.Fatalf("%v, %v", got, err)
	}
	if got, err := parseTypes(nil); got != nil || err != nil {
		t.Fatalf("no filter: %v, %v", got, err)
	}
	if _, err := parseTypes([]string{"member-up,explosion"}); err == nil {
		t.Fatal("an unknown type was accepted")
	}
}

func TestHubClosesAFullStreamAndNeverWaits(t *testing.T) {
	h := newHub(2, 1)
	slow, err := h.open(nil)
	if err != nil {
		t.Fatal(err)
	}
	filtered, _ := h.open(map[string]bool{EventMemberUp: true})
	if _, err := h.open(nil); !errors.Is(err, errTooManyStreams) {
		t.Fatalf("a third stream: %v", err)
	}
	h.publish(Event{Type: EventShardAllocated})
	h.publish(Event{Type: EventShardAllocated}) // slow's buffer (1) is full
	select {
	case <-slow.gone:
	default:
		t.Fatal("the full stream was not closed")
	}
	select {
	case <-filtered.gone:
		t.Fatal("the stream that filters the events out was closed")
	default:
	}
	if st := h.stats(); st.EventStreams != 1 || st.EventsDropped != 1 || st.SlowStreamsClosed != 1 || st.StreamsRefused != 1 {
		t.Fatalf("stats %+v", st)
	}
	if frame := string(<-slow.ch); frame != "id: 1\nevent: shard-allocated\ndata: {\"type\":\"shard-allocated\",\"time\":\"0001-01-01T00:00:00Z\"}\n\n" {
		t.Fatalf("frame %q", frame)
	}
	h.shutdown()
	select {
	case <-filtered.gone:
	default:
		t.Fatal("shutdown left a stream open")
	}
	if _, err := h.open(nil); !errors.Is(err, errHubClosed) {
		t.Fatalf("open after shutdown: %v", err)
	}
}

func TestViewsOfShardsAndEvents(t *testing.T) {
	rv := regionView("self", "Counter", sharding.ShardRegionState{Shards: []sharding.ShardState{{Shard: "1", Entities: []sharding.EntityID{"a", "b"}}}})
	if len(rv.Shards) != 1 || rv.Shards[0].EntityCount != 2 || rv.Failed == nil {
		t.Fatalf("region view %+v", rv)
	}
	cv := clusterShardsView("Counter", sharding.ClusterShardingStats{Regions: map[string]sharding.ShardRegionStats{
		"b": {Shards: map[sharding.ShardID]int{"2": 1, "1": 3}}, "a": {},
	}, Failed: []string{"c"}})
	if len(cv.Regions) != 2 || cv.Regions[0].Node != "a" || cv.Regions[1].Shards[0].ShardID != "1" || cv.Regions[1].Shards[0].EntityCount != 3 {
		t.Fatalf("cluster view %+v", cv)
	}
	m := cluster.Member{Unique: ua("1", 1), Status: cluster.Removed}
	ev, ok := clusterEvent(cluster.MemberRemoved{Member: m, PreviousStatus: cluster.Down}, time.Time{})
	if !ok || ev.Type != EventMemberRemoved || ev.PreviousStatus != "Down" || ev.Member.Node != m.Unique.Addr {
		t.Fatalf("event %+v", ev)
	}
	d := cluster.DowningDecision{Strategy: "keep-majority", Action: "down-unreachable", Down: []cluster.UniqueAddress{ua("2", 7)}}
	if ev, ok := clusterEvent(d, time.Time{}); !ok || ev.Type != EventDowningDecision || ev.Downing.Strategy != "keep-majority" ||
		ev.Downing.Action != "down-unreachable" || len(ev.Downing.Down) != 1 || ev.Downing.Down[0] != ua("2", 7).String() {
		t.Fatalf("downing decision event %+v", ev)
	}
	if _, ok := clusterEvent("not an event", time.Time{}); ok {
		t.Fatal("a string became an event")
	}
	if ev, ok := shardEvent(sharding.ShardHandOffStarted{TypeName: "Counter", Shard: "3", Rebalance: true}, time.Time{}); !ok ||
		ev.Type != EventShardHandOffStarted || !ev.Shard.Rebalance || ev.Shard.From != "" {
		t.Fatalf("shard event %+v", ev)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Address: "no-port"},
		{EnableWrites: true},
		{EnableWrites: true, Token: "short"},
		{ReadTimeout: -1},
		{MaxBodyBytes: -1},
		{MaxEventStreams: -1},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (Config{EnableWrites: true, Token: "0123456789abcdef"}).Validate(); err != nil {
		t.Fatal(err)
	}
}
