package ddata

import (
	"iter"
	"maps"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// GSet is a grow-only set: elements are added, never removed, and a merge is the
// union. Use it for facts that stay true once known (ids seen, nodes that ever
// joined); use ORSet when elements are also removed.
//
// E must be a value type whose msgpack encoding is a function of its value (see
// the package documentation on element types). The zero value is an empty set,
// ready to use.
type GSet[E comparable] struct {
	elems map[E]struct{}
	delta map[E]struct{} // elements added since the last TakeDelta
}

// NewGSet returns an empty set.
func NewGSet[E comparable]() *GSet[E] { return &GSet[E]{} }

// Add adds e.
func (s *GSet[E]) Add(e E) {
	if _, ok := s.elems[e]; ok {
		return
	}
	if s.elems == nil {
		s.elems = make(map[E]struct{})
	}
	s.elems[e] = struct{}{}
	if s.delta == nil {
		s.delta = make(map[E]struct{})
	}
	s.delta[e] = struct{}{}
}

// Contains reports whether e is in the set.
func (s *GSet[E]) Contains(e E) bool {
	_, ok := s.elems[e]
	return ok
}

// Len returns the number of elements.
func (s *GSet[E]) Len() int { return len(s.elems) }

// All iterates over the elements in no particular order. The set must not change
// during the iteration.
func (s *GSet[E]) All() iter.Seq[E] { return maps.Keys(s.elems) }

// Elements returns the elements in a new slice, in no particular order.
func (s *GSet[E]) Elements() []E { return slices.Collect(maps.Keys(s.elems)) }

// Merge adds o's elements.
func (s *GSet[E]) Merge(o *GSet[E]) { s.union(o.elems) }

func (s *GSet[E]) union(m map[E]struct{}) {
	for e := range m {
		if s.elems == nil {
			s.elems = make(map[E]struct{}, len(m))
		}
		s.elems[e] = struct{}{}
	}
}

// Clone returns a copy of the elements without the pending delta.
func (s *GSet[E]) Clone() *GSet[E] { return &GSet[E]{elems: maps.Clone(s.elems)} }

// MergeData merges a *GSet[E].
func (s *GSet[E]) MergeData(other ReplicatedData) error {
	o, ok := other.(*GSet[E])
	if !ok || o == nil {
		return mismatch("*GSet", other)
	}
	s.Merge(o)
	return nil
}

// CloneData returns Clone.
func (s *GSet[E]) CloneData() ReplicatedData { return s.Clone() }

// TakeDelta returns the elements added since the last call.
func (s *GSet[E]) TakeDelta() (Delta, bool) {
	if len(s.delta) == 0 {
		return nil, false
	}
	d := &GSetDelta[E]{elems: s.delta}
	s.delta = nil
	return d, true
}

// MergeDelta applies a *GSetDelta[E].
func (s *GSet[E]) MergeDelta(d Delta) error {
	gd, ok := d.(*GSetDelta[E])
	if !ok || gd == nil {
		return mismatch("*GSetDelta", d)
	}
	s.union(gd.elems)
	return nil
}

// NewDelta returns an empty *GSetDelta[E].
func (s *GSet[E]) NewDelta() Delta { return &GSetDelta[E]{} }

// EncodeMsgpack writes the elements as an array, sorted by their encodings.
func (s *GSet[E]) EncodeMsgpack(enc *msgpack.Encoder) error { return encodeElemSet(enc, s.elems) }

// DecodeMsgpack reads what EncodeMsgpack wrote; duplicates are refused.
func (s *GSet[E]) DecodeMsgpack(dec *msgpack.Decoder) error {
	m, err := decodeElemSet[E](dec)
	if err != nil {
		return err
	}
	*s = GSet[E]{elems: m}
	return nil
}

func encodeElemSet[E comparable](enc *msgpack.Encoder, m map[E]struct{}) error {
	elems := slices.Collect(maps.Keys(m))
	order, encs, err := sortedByEncoding(elems)
	if err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(len(elems)); err != nil {
		return err
	}
	w := enc.Writer()
	for _, i := range order {
		if _, err := w.Write(encs[i]); err != nil {
			return err
		}
	}
	return nil
}

func decodeElemSet[E comparable](dec *msgpack.Decoder) (map[E]struct{}, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("nil element set")
	}
	var m map[E]struct{}
	if n > 0 {
		m = make(map[E]struct{}, n)
	}
	for range n {
		var e E
		if err := dec.Decode(&e); err != nil {
			return nil, err
		}
		m[e] = struct{}{}
	}
	if len(m) != n {
		return nil, invalid("duplicate elements")
	}
	return m, nil
}

// GSetDelta is the delta of a GSet: the elements added. It is not causal.
type GSetDelta[E comparable] struct {
	elems map[E]struct{}
}

// Compose returns the union.
func (d *GSetDelta[E]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*GSetDelta[E])
	if !ok || l == nil {
		return nil, mismatch("*GSetDelta", later)
	}
	m := make(map[E]struct{}, len(d.elems)+len(l.elems))
	for e := range d.elems {
		m[e] = struct{}{}
	}
	for e := range l.elems {
		m[e] = struct{}{}
	}
	return &GSetDelta[E]{elems: m}, nil
}

// NewData returns a new GSet.
func (d *GSetDelta[E]) NewData() DeltaData { return NewGSet[E]() }

// Causal returns false.
func (d *GSetDelta[E]) Causal() bool { return false }

// Size returns the number of elements.
func (d *GSetDelta[E]) Size() int { return len(d.elems) }

// EncodeMsgpack writes the elements like a GSet.
func (d *GSetDelta[E]) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeElemSet(enc, d.elems)
}

// DecodeMsgpack reads what EncodeMsgpack wrote.
func (d *GSetDelta[E]) DecodeMsgpack(dec *msgpack.Decoder) error {
	m, err := decodeElemSet[E](dec)
	if err != nil {
		return err
	}
	d.elems = m
	return nil
}
