package sharding

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

func TestCoordStateEvents(t *testing.T) {
	type step struct {
		ev      coordEvent
		wantErr bool
	}
	cases := []struct {
		name     string
		remember bool
		steps    []step
		regions  map[RegionID][]ShardID
		proxies  []RegionID
		unalloc  []ShardID
	}{
		{
			name: "register, allocate, deallocate",
			steps: []step{
				{ev: evRegionRegistered{Region: "a"}},
				{ev: evRegionRegistered{Region: "b"}},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "2", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "3", Region: "b"}},
				{ev: evShardHomeDeallocated{Shard: "1"}},
				{ev: evCoordinatorInitialized{}},
			},
			regions: map[RegionID][]ShardID{"a": {"2"}, "b": {"3"}},
		},
		{
			name: "invalid transitions are rejected and change nothing",
			steps: []step{
				{ev: evRegionRegistered{Region: "a"}},
				{ev: evRegionRegistered{Region: "a"}, wantErr: true},
				{ev: evRegionRegistered{Region: ""}, wantErr: true},
				{ev: evShardHomeAllocated{Shard: "1", Region: "nope"}, wantErr: true},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}, wantErr: true},
				{ev: evShardHomeAllocated{Shard: "", Region: "a"}, wantErr: true},
				{ev: evShardHomeDeallocated{Shard: "9"}, wantErr: true},
				{ev: evRegionTerminated{Region: "zz"}, wantErr: true},
				{ev: evRegionProxyTerminated{Proxy: "p"}, wantErr: true},
				{ev: evRegionProxyRegistered{Proxy: "p"}},
				{ev: evRegionProxyRegistered{Proxy: "p"}, wantErr: true},
				{ev: evRegionProxyRegistered{Proxy: ""}, wantErr: true},
			},
			regions: map[RegionID][]ShardID{"a": {"1"}},
			proxies: []RegionID{"p"},
		},
		{
			name: "terminated region takes its shards",
			steps: []step{
				{ev: evRegionRegistered{Region: "a"}},
				{ev: evRegionRegistered{Region: "b"}},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "2", Region: "b"}},
				{ev: evRegionTerminated{Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}, wantErr: true},
				{ev: evShardHomeAllocated{Shard: "1", Region: "b"}},
				{ev: evRegionProxyRegistered{Proxy: "p"}},
				{ev: evRegionProxyTerminated{Proxy: "p"}},
			},
			regions: map[RegionID][]ShardID{"b": {"2", "1"}},
		},
		{
			name:     "remember-entities keeps shards without a home",
			remember: true,
			steps: []step{
				{ev: evRegionRegistered{Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "2", Region: "a"}},
				{ev: evShardHomeAllocated{Shard: "3", Region: "a"}},
				{ev: evShardHomeDeallocated{Shard: "3"}},
				{ev: evRegionTerminated{Region: "a"}},
				{ev: evRegionRegistered{Region: "b"}},
				{ev: evShardHomeAllocated{Shard: "2", Region: "b"}},
			},
			regions: map[RegionID][]ShardID{"b": {"2"}},
			unalloc: []ShardID{"1", "3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newCoordState(tc.remember)
			for i, st := range tc.steps {
				before := s.clone()
				err := s.apply(st.ev)
				if st.wantErr {
					if !errors.Is(err, errInvalidEvent) {
						t.Fatalf("step %d %+v: err %v, want errInvalidEvent", i, st.ev, err)
					}
					if !s.equal(before) {
						t.Fatalf("step %d: a rejected event changed the state", i)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d %+v: %v", i, st.ev, err)
				}
				if err := s.checkInvariants(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			want := newCoordState(tc.remember)
			for r, ids := range tc.regions {
				want.regions[r] = ids
				for _, id := range ids {
					want.shards[id] = r
				}
			}
			for _, p := range tc.proxies {
				want.proxies[p] = struct{}{}
			}
			for _, id := range tc.unalloc {
				want.unallocated[id] = struct{}{}
			}
			if !s.equal(want) {
				t.Fatalf("state %+v, want %+v", s, want)
			}
		})
	}
}

func TestCoordStateWithRememberEntitiesOff(t *testing.T) {
	s := newCoordState(true)
	s.addUnallocated([]ShardID{"1", "2"})
	if len(s.unallocated) != 2 {
		t.Fatal("addUnallocated ignored")
	}
	s.withRememberEntities(false)
	if len(s.unallocated) != 0 || s.remember {
		t.Fatal("turning remember-entities off keeps unallocated shards")
	}
	s.addUnallocated([]ShardID{"3"})
	if len(s.unallocated) != 0 {
		t.Fatal("addUnallocated without remember-entities")
	}
}

func sampleState() *coordState {
	s := newCoordState(true)
	for _, e := range []coordEvent{
		evRegionRegistered{Region: "troupe://s@h:2/r#1"},
		evRegionRegistered{Region: "troupe://s@h:1/r#1"},
		evRegionRegistered{Region: "troupe://s@h:3/r#1"},
		evRegionProxyRegistered{Proxy: "troupe://s@h:9/p#1"},
		evRegionProxyRegistered{Proxy: "troupe://s@h:8/p#1"},
		evShardHomeAllocated{Shard: "z", Region: "troupe://s@h:1/r#1"},
		evShardHomeAllocated{Shard: "a", Region: "troupe://s@h:1/r#1"},
		evShardHomeAllocated{Shard: "m", Region: "troupe://s@h:2/r#1"},
	} {
		if err := s.apply(e); err != nil {
			panic(err)
		}
	}
	s.addUnallocated([]ShardID{"q", "b"})
	return s
}

func TestCoordStateRoundTripAndDeterminism(t *testing.T) {
	reg := serialization.NewRegistry() // knows them without registration
	s := sampleState()
	man, b1, err := reg.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if man != manifestCoordState {
		t.Fatalf("manifest %q", man)
	}
	// Same state built again (maps filled in another order): same bytes, every time.
	for range 20 {
		_, b2, err := reg.Marshal(sampleState().clone())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatal("equal states encode differently")
		}
	}
	// A value marshals like the pointer.
	if _, b3, err := reg.Marshal(*s); err != nil || !bytes.Equal(b1, b3) {
		t.Fatalf("value encoding differs: %v", err)
	}
	v, err := reg.Unmarshal(man, b1)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := v.(*coordState)
	if !ok || !got.equal(s) {
		t.Fatalf("round trip: %T %+v, want %+v", v, v, s)
	}
	// Allocation order is part of the state.
	if !slices.Equal(got.regions["troupe://s@h:1/r#1"], []ShardID{"z", "a"}) {
		t.Fatalf("allocation order lost: %v", got.regions)
	}

	empty := newCoordState(false)
	_, b, err := reg.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	v, err = reg.Unmarshal(man, b)
	if err != nil || !v.(*coordState).equal(empty) || !v.(*coordState).isEmpty() {
		t.Fatalf("empty state round trip: %v %+v", err, v)
	}
}

func TestCoordEventsRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry()
	events := []coordEvent{
		evRegionRegistered{Region: "a"}, evRegionProxyRegistered{Proxy: "p"},
		evRegionTerminated{Region: "a"}, evRegionProxyTerminated{Proxy: "p"},
		evShardHomeAllocated{Shard: "1", Region: "a"}, evShardHomeDeallocated{Shard: "1"},
		evCoordinatorInitialized{},
	}
	for _, e := range events {
		man, b, err := reg.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		v, err := reg.Unmarshal(man, b)
		if err != nil {
			t.Fatal(err)
		}
		if v != any(e) {
			t.Fatalf("%T round trip: %+v, want %+v", e, v, e)
		}
	}
}

func TestCoordStateDecodeRejectsCorruptState(t *testing.T) {
	reg := serialization.NewRegistry()
	cases := map[string]coordStateWire{
		"shard in two regions": {Regions: []coordRegionWire{{Region: "a", Shards: []ShardID{"1"}}, {Region: "b", Shards: []ShardID{"1"}}}},
		"shard twice in one":   {Regions: []coordRegionWire{{Region: "a", Shards: []ShardID{"1", "1"}}}},
		"region twice":         {Regions: []coordRegionWire{{Region: "a"}, {Region: "a"}}},
		"empty region":         {Regions: []coordRegionWire{{Region: ""}}},
		"empty shard":          {Regions: []coordRegionWire{{Region: "a", Shards: []ShardID{""}}}},
		"proxy twice":          {Proxies: []RegionID{"p", "p"}},
		"unallocated and allocated": {Remember: true, Unallocated: []ShardID{"1"},
			Regions: []coordRegionWire{{Region: "a", Shards: []ShardID{"1"}}}},
	}
	for name, w := range cases {
		b, err := msgpack.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Unmarshal(manifestCoordState, b); !errors.Is(err, serialization.ErrDecode) || !strings.Contains(err.Error(), errCorruptState.Error()) {
			// The registry keeps the decoder's message but wraps only ErrDecode.
			t.Errorf("%s: err %v, want ErrDecode naming errCorruptState", name, err)
		}
	}
	if _, err := reg.Unmarshal(manifestCoordState, []byte{0xc1}); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("garbage: err %v", err)
	}
}
