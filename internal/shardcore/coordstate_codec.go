package shardcore

import (
	"fmt"

	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/sharding/placement"
	"github.com/vmihailenco/msgpack/v5"
)

// Manifests of the coordinator's stored types. They are a storage format: never rename
// one; a change that old readers would misread gets a new version suffix.
const (
	manifestCoordState            = "troupe.sharding.CoordinatorState.v1"
	manifestRegionRegistered      = "troupe.sharding.RegionRegistered.v1"
	manifestRegionProxyRegistered = "troupe.sharding.RegionProxyRegistered.v1"
	manifestRegionTerminated      = "troupe.sharding.RegionTerminated.v1"
	manifestRegionProxyTerminated = "troupe.sharding.RegionProxyTerminated.v1"
	manifestShardHomeAllocated    = "troupe.sharding.ShardHomeAllocated.v1"
	manifestShardHomesAllocated   = "troupe.sharding.ShardHomesAllocated.v1"
	manifestShardHomeDeallocated  = "troupe.sharding.ShardHomeDeallocated.v1"
	manifestCoordInitialized      = "troupe.sharding.CoordinatorInitialized.v1"
)

// The coordinator's state (decoded as *CoordState) and its events (as values) are
// Troupe's own wire types: every registry knows them, so a distributed-data register
// or a journal stores them without the application registering them.
//
// An event decodes when its bytes have the event's shape; whether it fits the state is
// for CoordState.check to say. A recovering coordinator skips (and logs) an event that
// does not apply, where an event that does not decode would stop its recovery: so the
// decoders do not judge the content (an ShardHomesAllocated naming a shard twice
// decodes, and is replayed as its single allocations, the second of which is skipped).
func init() {
	wiretypes.MustRegister[*CoordState](manifestCoordState)
	wiretypes.MustRegister[RegionRegistered](manifestRegionRegistered)
	wiretypes.MustRegister[RegionProxyRegistered](manifestRegionProxyRegistered)
	wiretypes.MustRegister[RegionTerminated](manifestRegionTerminated)
	wiretypes.MustRegister[RegionProxyTerminated](manifestRegionProxyTerminated)
	wiretypes.MustRegister[ShardHomeAllocated](manifestShardHomeAllocated)
	wiretypes.MustRegister[ShardHomesAllocated](manifestShardHomesAllocated)
	wiretypes.MustRegister[ShardHomeDeallocated](manifestShardHomeDeallocated)
	wiretypes.MustRegister[CoordinatorInitialized](manifestCoordInitialized)
}

// coordStateWire is the stored form of CoordState: sorted slices instead of maps, so
// that one state always encodes to the same bytes.
type coordStateWire struct {
	Regions     []coordRegionWire    `msgpack:"regions"`     // by region ID
	Proxies     []placement.RegionID `msgpack:"proxies"`     // sorted
	Unallocated []placement.ShardID  `msgpack:"unallocated"` // sorted
	Remember    bool                 `msgpack:"remember"`
}

// coordRegionWire is one region with its shards in allocation order.
type coordRegionWire struct {
	Region placement.RegionID  `msgpack:"region"`
	Shards []placement.ShardID `msgpack:"shards"`
}

// EncodeMsgpack writes the state in its stored form; equal states give equal bytes.
func (s CoordState) EncodeMsgpack(enc *msgpack.Encoder) error {
	w := coordStateWire{
		Proxies:     s.sortedProxies(),
		Unallocated: s.sortedUnallocated(),
		Remember:    s.remember,
	}
	for _, r := range s.SortedRegions() {
		w.Regions = append(w.Regions, coordRegionWire{Region: r, Shards: s.regions[r]})
	}
	return enc.Encode(&w)
}

// DecodeMsgpack reads the stored form and rejects a state that contradicts itself
// (a shard in two regions, duplicates, empty IDs) with an error wrapping
// ErrCorruptState.
func (s *CoordState) DecodeMsgpack(dec *msgpack.Decoder) error {
	var w coordStateWire
	if err := dec.Decode(&w); err != nil {
		return err
	}
	n := NewCoordState(w.Remember)
	for _, rw := range w.Regions {
		if _, dup := n.regions[rw.Region]; dup {
			return fmt.Errorf("%w: region %q twice", ErrCorruptState, rw.Region)
		}
		n.regions[rw.Region] = rw.Shards
		for _, id := range rw.Shards {
			if home, dup := n.shards[id]; dup {
				return fmt.Errorf("%w: shard %q in regions %q and %q", ErrCorruptState, id, home, rw.Region)
			}
			n.shards[id] = rw.Region
		}
	}
	for _, p := range w.Proxies {
		if _, dup := n.proxies[p]; dup {
			return fmt.Errorf("%w: proxy %q twice", ErrCorruptState, p)
		}
		n.proxies[p] = struct{}{}
	}
	for _, id := range w.Unallocated {
		n.unallocated[id] = struct{}{}
	}
	if err := n.checkInvariants(); err != nil {
		return err
	}
	*s = *n
	return nil
}
