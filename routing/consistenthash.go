package routing

import (
	"slices"

	"github.com/troupe-go/troupe/actor"
)

// Keyed is implemented by messages that carry their own consistent-hashing key: a
// consistent-hashing router sends messages with the same key to the same routee, as
// long as the routees do not change.
type Keyed interface {
	RoutingKey() string
}

// DefaultVirtualNodes is how many points each routee gets on a consistent-hashing ring
// when ConsistentHashingConfig.VirtualNodes is zero.
const DefaultVirtualNodes = 10

// ConsistentHashingConfig configures ConsistentHashing.
type ConsistentHashingConfig struct {
	// VirtualNodes is how many points each routee has on the hash ring; more points
	// spread the keys more evenly over the routees, at the cost of a larger ring.
	// Zero or less means DefaultVirtualNodes.
	VirtualNodes int
	// Key, when set, gives a message's key; it is asked first, and a message it
	// returns false for falls back to Keyed. It is called by every sender at once.
	Key func(msg any) (key string, ok bool)
}

// ConsistentHashing returns the logic that sends messages with the same key to the
// same routee. The key comes from cfg.Key or from the message's RoutingKey method
// (Keyed); a message with neither cannot be routed (ErrNoKey).
//
// Each routee is placed on a ring of 64-bit hashes at VirtualNodes points derived from
// its address and path (not its incarnation uid, so a routee restarted at the same
// path keeps its keys, and routers on different nodes with the same routees agree); a
// key goes to the routee of the first point at or after the key's hash. When a routee
// joins, only the keys that now fall on its points move, all to it; when one leaves,
// only its keys move. The hash is fixed, so placements are the same in every process
// and every run.
func ConsistentHashing(cfg ConsistentHashingConfig) Logic {
	if cfg.VirtualNodes <= 0 {
		cfg.VirtualNodes = DefaultVirtualNodes
	}
	return consistentHashing{cfg: cfg}
}

type consistentHashing struct{ cfg ConsistentHashingConfig }

func (l consistentHashing) Prepare(routees []actor.Ref) Selector {
	r := &ring{key: l.cfg.Key}
	vn := l.cfg.VirtualNodes
	r.points = make([]point, 0, len(routees)*vn)
	for i, ref := range routees {
		base := hashString(routeeIdentity(ref))
		for v := range vn {
			r.points = append(r.points, point{hash: mix64(base + uint64(v)*0x9e3779b97f4a7c15), routee: int32(i)})
		}
	}
	slices.SortFunc(r.points, func(a, b point) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return int(a.routee - b.routee) // equal hashes: a stable order, whatever routees' order
	})
	r.hashes = make([]uint64, len(r.points))
	for i, p := range r.points {
		r.hashes[i] = p.hash
	}
	r.routees = routees
	bb := bucketBits(len(r.points))
	r.shift = 64 - bb
	r.start = make([]int32, 1<<bb)
	p := 0
	for b := range r.start {
		low := uint64(b) << r.shift
		for p < len(r.hashes) && r.hashes[p] < low {
			p++
		}
		r.start[b] = int32(p)
	}
	return r
}

// routeeIdentity is what places a routee on the ring: its system's address and its
// path, the same on every node.
func routeeIdentity(ref actor.Ref) string {
	return ref.Address().String() + ref.Path()
}

type point struct {
	hash   uint64
	routee int32
}

// ring is a consistent-hashing Selector: the points sorted by hash, their hashes
// alone for the binary search, and the routees they stand for.
type ring struct {
	key     func(any) (string, bool)
	points  []point
	hashes  []uint64
	routees []actor.Ref
	// start[b] is the index of the first point whose hash is at or after bucket b's
	// lowest hash (the top bucketBits bits of a hash are its bucket), so a lookup is one
	// table read and a step or two instead of a binary search.
	start []int32
	shift uint
}

// bucketBits sets the size of a ring's bucket table relative to its points: about
// four buckets per point, so most buckets hold no point and a lookup takes no step.
func bucketBits(points int) uint {
	b := uint(4)
	for b < 20 && 1<<b < 4*points {
		b++
	}
	return b
}

func (r *ring) Select(msg any) ([]actor.Ref, error) {
	if len(r.routees) == 0 {
		return nil, ErrNoRoutees
	}
	i, ok := r.index(msg)
	if !ok {
		return nil, ErrNoKey
	}
	return r.routees[i : i+1], nil
}

// index returns the index of msg's routee, or false when msg has no key. The ring must
// have routees.
func (r *ring) index(msg any) (int, bool) {
	key, ok := messageKey(r.key, msg)
	if !ok {
		return 0, false
	}
	return r.owner(hashString(key)), true
}

// owner returns the index of the routee whose point is the first at or after h.
func (r *ring) owner(h uint64) int {
	i := int(r.start[h>>r.shift])
	for i < len(r.hashes) && r.hashes[i] < h {
		i++
	}
	if i == len(r.hashes) {
		i = 0
	}
	return int(r.points[i].routee)
}

func messageKey(key func(any) (string, bool), msg any) (string, bool) {
	if key != nil {
		if k, ok := key(msg); ok {
			return k, true
		}
	}
	if k, ok := msg.(Keyed); ok {
		return k.RoutingKey(), true
	}
	return "", false
}

// hashString hashes s eight bytes at a time (a multiply-xor per word, in the manner of
// FNV, then mix64), without allocating. It is fixed: the same in every process.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037) ^ uint64(len(s))
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = (h ^ w) * 0x9e3779b97f4a7c15
		h ^= h >> 29
		s = s[8:]
	}
	if len(s) > 0 {
		var w uint64
		for i := 0; i < len(s); i++ {
			w |= uint64(s[i]) << (8 * i)
		}
		h = (h ^ w) * 0x9e3779b97f4a7c15
	}
	return mix64(h)
}

// mix64 is the finaliser of splitmix64: FNV-1a alone spreads keys that differ in
// their last bytes ("k1", "k2") poorly over the high bits.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
