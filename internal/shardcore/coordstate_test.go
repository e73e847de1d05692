package shardcore

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding/placement"
	"github.com/vmihailenco/msgpack/v5"
)

func TestCoordStateEvents(t *testing.T) {
	type step struct {
		ev      CoordEvent
		wantErr bool
	}
	cases := []struct {
		name     string
		remember bool
		steps    []step
		regions  map[placement.RegionID][]placement.ShardID
		proxies  []placement.RegionID
		unalloc  []placement.ShardID
	}{
		{
			name: "register, allocate, deallocate",
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "2", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "3", Region: "b"}},
				{ev: ShardHomeDeallocated{Shard: "1"}},
				{ev: CoordinatorInitialized{}},
			},
			regions: map[placement.RegionID][]placement.ShardID{"a": {"2"}, "b": {"3"}},
		},
		{
			name: "invalid transitions are rejected and change nothing",
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: RegionRegistered{Region: "a"}, wantErr: true},
				{ev: RegionRegistered{Region: ""}, wantErr: true},
				{ev: ShardHomeAllocated{Shard: "1", Region: "nope"}, wantErr: true},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}, wantErr: true},
				{ev: ShardHomeAllocated{Shard: "", Region: "a"}, wantErr: true},
				{ev: ShardHomeDeallocated{Shard: "9"}, wantErr: true},
				{ev: RegionTerminated{Region: "zz"}, wantErr: true},
				{ev: RegionProxyTerminated{Proxy: "p"}, wantErr: true},
				{ev: RegionProxyRegistered{Proxy: "p"}},
				{ev: RegionProxyRegistered{Proxy: "p"}, wantErr: true},
				{ev: RegionProxyRegistered{Proxy: ""}, wantErr: true},
			},
			regions: map[placement.RegionID][]placement.ShardID{"a": {"1"}},
			proxies: []placement.RegionID{"p"},
		},
		{
			name: "terminated region takes its shards",
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "2", Region: "b"}},
				{ev: RegionTerminated{Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}, wantErr: true},
				{ev: ShardHomeAllocated{Shard: "1", Region: "b"}},
				{ev: RegionProxyRegistered{Proxy: "p"}},
				{ev: RegionProxyTerminated{Proxy: "p"}},
			},
			regions: map[placement.RegionID][]placement.ShardID{"b": {"2", "1"}},
		},
		{
			name: "a batch of allocations",
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "b", Shards: []placement.ShardID{"3", "2"}}, {Region: "a", Shards: []placement.ShardID{"4"}}}}},
				{ev: ShardHomeAllocated{Shard: "5", Region: "b"}},
			},
			regions: map[placement.RegionID][]placement.ShardID{"a": {"1", "4"}, "b": {"3", "2", "5"}},
		},
		{
			name: "a batch that does not apply as a whole changes nothing",
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomesAllocated{}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2"}}, {Region: "b", Shards: []placement.ShardID{"1"}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2"}}, {Region: "nope", Shards: []placement.ShardID{"3"}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2"}}, {Region: "b", Shards: []placement.ShardID{"2"}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2", "2"}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2"}}, {Region: "a", Shards: []placement.ShardID{"3"}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2", ""}}}}, wantErr: true},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"2"}}, {Region: "b"}}}, wantErr: true},
			},
			regions: map[placement.RegionID][]placement.ShardID{"a": {"1"}, "b": nil},
		},
		{
			name:     "a batch takes its shards out of the unallocated ones",
			remember: true,
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"1", "2", "3"}}}}},
				{ev: RegionTerminated{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomesAllocated{Homes: []RegionShards{{Region: "b", Shards: []placement.ShardID{"3", "1"}}}}},
			},
			regions: map[placement.RegionID][]placement.ShardID{"b": {"3", "1"}},
			unalloc: []placement.ShardID{"2"},
		},
		{
			name:     "remember-entities keeps shards without a home",
			remember: true,
			steps: []step{
				{ev: RegionRegistered{Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "1", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "2", Region: "a"}},
				{ev: ShardHomeAllocated{Shard: "3", Region: "a"}},
				{ev: ShardHomeDeallocated{Shard: "3"}},
				{ev: RegionTerminated{Region: "a"}},
				{ev: RegionRegistered{Region: "b"}},
				{ev: ShardHomeAllocated{Shard: "2", Region: "b"}},
			},
			regions: map[placement.RegionID][]placement.ShardID{"b": {"2"}},
			unalloc: []placement.ShardID{"1", "3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewCoordState(tc.remember)
			for i, st := range tc.steps {
				before := s.Clone()
				err := s.Apply(st.ev)
				if st.wantErr {
					if !errors.Is(err, ErrInvalidEvent) {
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
			want := NewCoordState(tc.remember)
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
	s := NewCoordState(true)
	s.addUnallocated([]placement.ShardID{"1", "2"})
	if len(s.unallocated) != 2 {
		t.Fatal("addUnallocated ignored")
	}
	s.withRememberEntities(false)
	if len(s.unallocated) != 0 || s.remember {
		t.Fatal("turning remember-entities off keeps unallocated shards")
	}
	s.addUnallocated([]placement.ShardID{"3"})
	if len(s.unallocated) != 0 {
		t.Fatal("addUnallocated without remember-entities")
	}
}

func sampleState() *CoordState {
	s := NewCoordState(true)
	for _, e := range []CoordEvent{
		RegionRegistered{Region: "troupe://s@h:2/r#1"},
		RegionRegistered{Region: "troupe://s@h:1/r#1"},
		RegionRegistered{Region: "troupe://s@h:3/r#1"},
		RegionProxyRegistered{Proxy: "troupe://s@h:9/p#1"},
		RegionProxyRegistered{Proxy: "troupe://s@h:8/p#1"},
		ShardHomeAllocated{Shard: "z", Region: "troupe://s@h:1/r#1"},
		ShardHomeAllocated{Shard: "a", Region: "troupe://s@h:1/r#1"},
		ShardHomeAllocated{Shard: "m", Region: "troupe://s@h:2/r#1"},
	} {
		if err := s.Apply(e); err != nil {
			panic(err)
		}
	}
	s.addUnallocated([]placement.ShardID{"q", "b"})
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
		_, b2, err := reg.Marshal(sampleState().Clone())
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
	got, ok := v.(*CoordState)
	if !ok || !got.equal(s) {
		t.Fatalf("round trip: %T %+v, want %+v", v, v, s)
	}
	// Allocation order is part of the state.
	if !slices.Equal(got.regions["troupe://s@h:1/r#1"], []placement.ShardID{"z", "a"}) {
		t.Fatalf("allocation order lost: %v", got.regions)
	}

	empty := NewCoordState(false)
	_, b, err := reg.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	v, err = reg.Unmarshal(man, b)
	if err != nil || !v.(*CoordState).equal(empty) || !v.(*CoordState).isEmpty() {
		t.Fatalf("empty state round trip: %v %+v", err, v)
	}
}

func TestCoordEventsRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry()
	events := []CoordEvent{
		RegionRegistered{Region: "a"}, RegionProxyRegistered{Proxy: "p"},
		RegionTerminated{Region: "a"}, RegionProxyTerminated{Proxy: "p"},
		ShardHomeAllocated{Shard: "1", Region: "a"}, ShardHomeDeallocated{Shard: "1"},
		CoordinatorInitialized{},
		ShardHomesAllocated{Homes: []RegionShards{{Region: "b", Shards: []placement.ShardID{"9", "3"}}, {Region: "a", Shards: []placement.ShardID{"1"}}}},
	}
	manifests := map[string]bool{}
	for _, e := range events {
		man, b, err := reg.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if manifests[man] {
			t.Fatalf("%T shares manifest %q", e, man)
		}
		manifests[man] = true
		v, err := reg.Unmarshal(man, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, any(e)) {
			t.Fatalf("%T round trip: %+v, want %+v", e, v, e)
		}
	}
	if man, _, _ := reg.Marshal(ShardHomesAllocated{}); man != manifestShardHomesAllocated {
		t.Fatalf("batch manifest %q", man)
	}
}

// A batch decodes only from its own shape; what it says is for CoordState.check.
func TestShardHomesAllocatedDecodeRejectsMalformedInput(t *testing.T) {
	reg := serialization.NewRegistry()
	_, good, err := reg.Marshal(ShardHomesAllocated{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"1", "2"}}}})
	if err != nil {
		t.Fatal(err)
	}
	wrong := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string][]byte{
		"garbage":               {0xc1},
		"empty":                 {},
		"truncated":             good[:len(good)-1],
		"homes not a list":      wrong(map[string]any{"homes": "a"}),
		"a home not a map":      wrong(map[string]any{"homes": []any{7}}),
		"shards not a list":     wrong(map[string]any{"homes": []any{map[string]any{"region": "a", "shards": 3}}}),
		"shard not a string":    wrong(map[string]any{"homes": []any{map[string]any{"region": "a", "shards": []any{1.5}}}}),
		"region not a string":   wrong(map[string]any{"homes": []any{map[string]any{"region": []any{}, "shards": []any{"1"}}}}),
		"not a map":             wrong([]any{"homes"}),
		"list length too large": {0x81, 0xa5, 'h', 'o', 'm', 'e', 's', 0xdd, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range cases {
		if _, err := reg.Unmarshal(manifestShardHomesAllocated, b); !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("%s: err %v, want ErrDecode", name, err)
		}
	}
	// Content that contradicts itself decodes, and the state refuses it.
	v, err := reg.Unmarshal(manifestShardHomesAllocated, wrong(map[string]any{"homes": []any{map[string]any{"region": "a", "shards": []any{"1", "1"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	st := NewCoordState(false)
	_ = st.Apply(RegionRegistered{Region: "a"})
	if err := st.Apply(v.(CoordEvent)); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a batch naming a shard twice applied: %v", err)
	}
}

func TestCoordStateDecodeRejectsCorruptState(t *testing.T) {
	reg := serialization.NewRegistry()
	cases := map[string]coordStateWire{
		"shard in two regions": {Regions: []coordRegionWire{{Region: "a", Shards: []placement.ShardID{"1"}}, {Region: "b", Shards: []placement.ShardID{"1"}}}},
		"shard twice in one":   {Regions: []coordRegionWire{{Region: "a", Shards: []placement.ShardID{"1", "1"}}}},
		"region twice":         {Regions: []coordRegionWire{{Region: "a"}, {Region: "a"}}},
		"empty region":         {Regions: []coordRegionWire{{Region: ""}}},
		"empty shard":          {Regions: []coordRegionWire{{Region: "a", Shards: []placement.ShardID{""}}}},
		"proxy twice":          {Proxies: []placement.RegionID{"p", "p"}},
		"unallocated and allocated": {Remember: true, Unallocated: []placement.ShardID{"1"},
			Regions: []coordRegionWire{{Region: "a", Shards: []placement.ShardID{"1"}}}},
	}
	for name, w := range cases {
		b, err := msgpack.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Unmarshal(manifestCoordState, b); !errors.Is(err, serialization.ErrDecode) || !strings.Contains(err.Error(), ErrCorruptState.Error()) {
			// The registry keeps the decoder's message but wraps only ErrDecode.
			t.Errorf("%s: err %v, want ErrDecode naming errCorruptState", name, err)
		}
	}
	if _, err := reg.Unmarshal(manifestCoordState, []byte{0xc1}); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("garbage: err %v", err)
	}
}

// FuzzShardHomesAllocatedDecode feeds arbitrary bytes to the batch event's decoder. It
// must never panic and fail only with ErrDecode; whatever decodes must encode and
// decode to the same event, and apply to a state wholly or not at all.
func FuzzShardHomesAllocatedDecode(f *testing.F) {
	reg := serialization.NewRegistry()
	for _, e := range []ShardHomesAllocated{
		{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"1", "2"}}, {Region: "b", Shards: []placement.ShardID{"3"}}}},
		{Homes: []RegionShards{{Region: "a", Shards: []placement.ShardID{"1", "1"}}}},
		{Homes: []RegionShards{{Region: "", Shards: []placement.ShardID{""}}}},
		{},
	} {
		_, b, err := reg.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x81, 0xa5, 'h', 'o', 'm', 'e', 's', 0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc0})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := reg.Unmarshal(manifestShardHomesAllocated, data)
		if err != nil {
			if !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("%v does not wrap ErrDecode", err)
			}
			return
		}
		e, ok := v.(ShardHomesAllocated)
		if !ok {
			t.Fatalf("decoded %T", v)
		}
		_, b, err := reg.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := reg.Unmarshal(manifestShardHomesAllocated, b)
		if err != nil || !reflect.DeepEqual(normalHomes(again.(ShardHomesAllocated)), normalHomes(e)) {
			t.Fatalf("re-decoding %+v: %+v, %v", e, again, err)
		}
		st := NewCoordState(true)
		_ = st.Apply(RegionRegistered{Region: "a"})
		_ = st.Apply(ShardHomeAllocated{Shard: "1", Region: "a"})
		before := st.Clone()
		if err := st.Apply(e); err != nil {
			if !errors.Is(err, ErrInvalidEvent) || !st.equal(before) {
				t.Fatalf("a rejected batch: %v, state changed %v", err, !st.equal(before))
			}
			return
		}
		if err := st.checkInvariants(); err != nil {
			t.Fatalf("applied %+v: %v", e, err)
		}
		if len(st.shards) != len(before.shards)+len(e.Singles()) {
			t.Fatalf("applied %+v: %d shards, had %d", e, len(st.shards), len(before.shards))
		}
	})
}

// normalHomes makes empty shard lists nil, as a round trip may turn one into the other.
func normalHomes(e ShardHomesAllocated) ShardHomesAllocated {
	if len(e.Homes) == 0 {
		return ShardHomesAllocated{}
	}
	out := ShardHomesAllocated{Homes: make([]RegionShards, len(e.Homes))}
	for i, h := range e.Homes {
		out.Homes[i] = RegionShards{Region: h.Region}
		if len(h.Shards) > 0 {
			out.Homes[i].Shards = h.Shards
		}
	}
	return out
}
