package shardcore

import (
	"fmt"
	"maps"
	"slices"

	"github.com/troupe-go/troupe/sharding/placement"
)

// CoordState is the coordinator's durable state: where every shard lives. It is stored
// whole in a distributed-data register (ddata mode) or rebuilt from its events
// (persistence mode), and survives the coordinator moving to another node.
//
// Invariants, kept by apply and checked by decoding: a shard is in shards exactly when
// it is in the list of its region in regions, at most once; every region in shards is
// a key of regions; unallocated holds no allocated shard.
type CoordState struct {
	shards      map[placement.ShardID]placement.RegionID   // shard -> its region
	regions     map[placement.RegionID][]placement.ShardID // region -> its shards, in allocation order
	proxies     map[placement.RegionID]struct{}            // registered proxy-only regions
	unallocated map[placement.ShardID]struct{}             // shards to re-home at once (remember-entities only)
	remember    bool                                       // remember-entities: keep shards of dead regions in unallocated
}

// NewCoordState returns the empty state.
func NewCoordState(rememberEntities bool) *CoordState {
	return &CoordState{
		shards:      map[placement.ShardID]placement.RegionID{},
		regions:     map[placement.RegionID][]placement.ShardID{},
		proxies:     map[placement.RegionID]struct{}{},
		unallocated: map[placement.ShardID]struct{}{},
		remember:    rememberEntities,
	}
}

// withRememberEntities sets the remember-entities flag from the running configuration
// (a state may have been stored by a coordinator configured otherwise); turning it off
// forgets the unallocated shards.
func (s *CoordState) withRememberEntities(on bool) {
	s.remember = on
	if !on {
		clear(s.unallocated)
	}
}

// isEmpty reports whether no region, proxy or shard is known.
func (s *CoordState) isEmpty() bool {
	return len(s.shards) == 0 && len(s.regions) == 0 && len(s.proxies) == 0
}

// clone returns a deep copy.
func (s *CoordState) Clone() *CoordState {
	c := &CoordState{
		shards:      maps.Clone(s.shards),
		regions:     make(map[placement.RegionID][]placement.ShardID, len(s.regions)),
		proxies:     maps.Clone(s.proxies),
		unallocated: maps.Clone(s.unallocated),
		remember:    s.remember,
	}
	for r, ids := range s.regions {
		c.regions[r] = slices.Clone(ids)
	}
	return c
}

// CoordEvent is a change of the coordinator state. The events are stored as they are
// (persistence mode), so their fields and msgpack names are a storage format.
type CoordEvent interface {
	isCoordEvent()
}

// RegionRegistered: a region joined. It hosts no shard yet.
type RegionRegistered struct {
	Region placement.RegionID `msgpack:"region"`
}

// RegionProxyRegistered: a proxy-only region joined.
type RegionProxyRegistered struct {
	Proxy placement.RegionID `msgpack:"proxy"`
}

// RegionTerminated: a region is gone with all its shards (which become unallocated
// with remember-entities).
type RegionTerminated struct {
	Region placement.RegionID `msgpack:"region"`
}

// RegionProxyTerminated: a proxy is gone.
type RegionProxyTerminated struct {
	Proxy placement.RegionID `msgpack:"proxy"`
}

// ShardHomeAllocated: a shard without a home now lives in a registered region.
type ShardHomeAllocated struct {
	Shard  placement.ShardID  `msgpack:"shard"`
	Region placement.RegionID `msgpack:"region"`
}

// ShardHomesAllocated: shards without a home now live in registered regions, all at
// once: the coordinator allocates the home requests that queued up behind a write in
// one write (see coordinator.getShardHome). It stands for the ShardHomeAllocated
// events of its shards, region by region, each region's shards in the order they were
// allocated (the order across regions does not matter: a region's shard list depends
// on its own allocations only). As one event it applies whole or not at all; a
// recovering coordinator that finds it does not apply replays it as those single
// events instead (see Singles), so that a damaged journal loses no more than the
// single events would have.
type ShardHomesAllocated struct {
	Homes []RegionShards `msgpack:"homes"`
}

// RegionShards is one region with shards allocated to it, in allocation order.
type RegionShards struct {
	Region placement.RegionID  `msgpack:"region"`
	Shards []placement.ShardID `msgpack:"shards"`
}

// Singles returns the ShardHomeAllocated events e stands for, in order.
func (e ShardHomesAllocated) Singles() []ShardHomeAllocated {
	var out []ShardHomeAllocated
	for _, h := range e.Homes {
		for _, s := range h.Shards {
			out = append(out, ShardHomeAllocated{Shard: s, Region: h.Region})
		}
	}
	return out
}

// ShardHomeDeallocated: a shard was handed off and has no home (it becomes
// unallocated with remember-entities).
type ShardHomeDeallocated struct {
	Shard placement.ShardID `msgpack:"shard"`
}

// CoordinatorInitialized changes nothing; it exists so that journals written by
// coordinators that record their start can be read.
type CoordinatorInitialized struct{}

func (RegionRegistered) isCoordEvent()       {}
func (RegionProxyRegistered) isCoordEvent()  {}
func (RegionTerminated) isCoordEvent()       {}
func (RegionProxyTerminated) isCoordEvent()  {}
func (ShardHomeAllocated) isCoordEvent()     {}
func (ShardHomesAllocated) isCoordEvent()    {}
func (ShardHomeDeallocated) isCoordEvent()   {}
func (CoordinatorInitialized) isCoordEvent() {}

// check reports whether e applies to s, without changing s. The error wraps
// ErrInvalidEvent.
func (s *CoordState) check(e CoordEvent) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %T: "+format, append([]any{ErrInvalidEvent, e}, args...)...)
	}
	switch e := e.(type) {
	case RegionRegistered:
		if e.Region == "" {
			return bad("empty region")
		}
		if _, ok := s.regions[e.Region]; ok {
			return bad("region %q is already registered", e.Region)
		}
	case RegionProxyRegistered:
		if e.Proxy == "" {
			return bad("empty proxy")
		}
		if _, ok := s.proxies[e.Proxy]; ok {
			return bad("proxy %q is already registered", e.Proxy)
		}
	case RegionTerminated:
		if _, ok := s.regions[e.Region]; !ok {
			return bad("region %q is not registered", e.Region)
		}
	case RegionProxyTerminated:
		if _, ok := s.proxies[e.Proxy]; !ok {
			return bad("proxy %q is not registered", e.Proxy)
		}
	case ShardHomeAllocated:
		if e.Shard == "" {
			return bad("empty shard")
		}
		if _, ok := s.regions[e.Region]; !ok {
			return bad("region %q is not registered", e.Region)
		}
		if r, ok := s.shards[e.Shard]; ok {
			return bad("shard %q is already allocated to %q", e.Shard, r)
		}
	case ShardHomesAllocated:
		return s.checkHomes(e, bad)
	case ShardHomeDeallocated:
		if _, ok := s.shards[e.Shard]; !ok {
			return bad("shard %q is not allocated", e.Shard)
		}
	case CoordinatorInitialized:
	default:
		return bad("unknown event")
	}
	return nil
}

// checkHomes checks a batch of allocations: each must be valid as a single allocation
// (a non-empty shard without a home, a registered region), no shard and no region may
// appear twice, and the batch may not be empty.
func (s *CoordState) checkHomes(e ShardHomesAllocated, bad func(string, ...any) error) error {
	if len(e.Homes) == 0 {
		return bad("no shard")
	}
	regions := make(map[placement.RegionID]bool, len(e.Homes))
	batch := map[placement.ShardID]bool{}
	for _, h := range e.Homes {
		if _, ok := s.regions[h.Region]; !ok {
			return bad("region %q is not registered", h.Region)
		}
		if regions[h.Region] {
			return bad("region %q twice", h.Region)
		}
		regions[h.Region] = true
		if len(h.Shards) == 0 {
			return bad("no shard for region %q", h.Region)
		}
		for _, id := range h.Shards {
			if id == "" {
				return bad("empty shard")
			}
			if r, ok := s.shards[id]; ok {
				return bad("shard %q is already allocated to %q", id, r)
			}
			if batch[id] {
				return bad("shard %q twice", id)
			}
			batch[id] = true
		}
	}
	return nil
}

// apply changes s by e, or returns an error wrapping ErrInvalidEvent and leaves s as it
// was. It is the one place the state changes, for live events and for replay alike.
func (s *CoordState) Apply(e CoordEvent) error {
	if err := s.check(e); err != nil {
		return err
	}
	switch e := e.(type) {
	case RegionRegistered:
		s.regions[e.Region] = nil
	case RegionProxyRegistered:
		s.proxies[e.Proxy] = struct{}{}
	case RegionTerminated:
		for _, id := range s.regions[e.Region] {
			delete(s.shards, id)
			if s.remember {
				s.unallocated[id] = struct{}{}
			}
		}
		delete(s.regions, e.Region)
	case RegionProxyTerminated:
		delete(s.proxies, e.Proxy)
	case ShardHomeAllocated:
		s.shards[e.Shard] = e.Region
		s.regions[e.Region] = append(s.regions[e.Region], e.Shard)
		delete(s.unallocated, e.Shard)
	case ShardHomesAllocated:
		for _, h := range e.Homes {
			s.regions[h.Region] = append(s.regions[h.Region], h.Shards...)
			for _, id := range h.Shards {
				s.shards[id] = h.Region
				delete(s.unallocated, id)
			}
		}
	case ShardHomeDeallocated:
		r := s.shards[e.Shard]
		delete(s.shards, e.Shard)
		s.regions[r] = slices.DeleteFunc(s.regions[r], func(id placement.ShardID) bool { return id == e.Shard })
		if s.remember {
			s.unallocated[e.Shard] = struct{}{}
		}
	}
	return nil
}

// addUnallocated adds remembered shards that have no home to the unallocated set (only
// with remember-entities); allocated ones are ignored.
func (s *CoordState) addUnallocated(ids []placement.ShardID) {
	if !s.remember {
		return
	}
	for _, id := range ids {
		if _, ok := s.shards[id]; !ok && id != "" {
			s.unallocated[id] = struct{}{}
		}
	}
}

// SortedRegions returns the registered regions in ID order.
func (s *CoordState) SortedRegions() []placement.RegionID {
	return slices.Sorted(maps.Keys(s.regions))
}

// sortedProxies returns the registered proxies in ID order.
func (s *CoordState) sortedProxies() []placement.RegionID {
	return slices.Sorted(maps.Keys(s.proxies))
}

// sortedUnallocated returns the unallocated shards in ID order.
func (s *CoordState) sortedUnallocated() []placement.ShardID {
	return slices.Sorted(maps.Keys(s.unallocated))
}

// sortedShards returns the allocated shards in ID order.
func (s *CoordState) sortedShards() []placement.ShardID {
	return slices.Sorted(maps.Keys(s.shards))
}

// equal reports whether two states hold the same data, allocation order included.
func (s *CoordState) equal(o *CoordState) bool {
	if s.remember != o.remember || !maps.Equal(s.shards, o.shards) || !maps.Equal(s.proxies, o.proxies) ||
		!maps.Equal(s.unallocated, o.unallocated) || len(s.regions) != len(o.regions) {
		return false
	}
	for r, ids := range s.regions {
		oids, ok := o.regions[r]
		if !ok || !slices.Equal(ids, oids) {
			return false
		}
	}
	return true
}

// checkInvariants returns an error wrapping ErrCorruptState when the state contradicts
// itself (see CoordState).
func (s *CoordState) checkInvariants() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCorruptState}, args...)...)
	}
	n := 0
	for r, ids := range s.regions {
		if r == "" {
			return bad("empty region id")
		}
		seen := make(map[placement.ShardID]struct{}, len(ids))
		for _, id := range ids {
			if id == "" {
				return bad("empty shard id in region %q", r)
			}
			if _, dup := seen[id]; dup {
				return bad("shard %q twice in region %q", id, r)
			}
			seen[id] = struct{}{}
			if home, ok := s.shards[id]; !ok || home != r {
				return bad("shard %q listed in region %q but homed at %q", id, r, home)
			}
		}
		n += len(ids)
	}
	if n != len(s.shards) {
		return bad("%d shards homed, %d listed in regions", len(s.shards), n)
	}
	for id := range s.unallocated {
		if _, ok := s.shards[id]; ok {
			return bad("shard %q is both allocated and unallocated", id)
		}
		if id == "" {
			return bad("empty unallocated shard id")
		}
	}
	for p := range s.proxies {
		if p == "" {
			return bad("empty proxy id")
		}
	}
	return nil
}
