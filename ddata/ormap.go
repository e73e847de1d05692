package ddata

import (
	"fmt"
	"iter"
	"reflect"
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// ORMap maps keys to CRDT values: its keys are an ORSet (a concurrent update wins
// over a remove) and the values of a key are merged. Use it for a collection of
// independent replicated values under one replicator key (per-user counters, per-
// product registers); LWWMap, PNCounterMap and ORMultiMap are ready-made ORMaps.
//
// V is a pointer CRDT type (*GCounter, *ORSet[string], a user's type). When V is a
// DeltaData, an Update records V's own delta; otherwise the map's delta carries a
// copy of the changed value.
//
// As in Akka, a removed key's value is forgotten only where the remove is seen: if
// another replica updates the key concurrently, the key stays and its value merges
// what each side still holds, which may include state from before the remove. Merge
// is exactly a CRDT merge for the keys and for maps whose keys are not removed
// concurrently with updates.
//
// The zero value is an empty map, ready to use. The map owns its values: Get
// returns the map's own value, to read; change it only through Update.
type ORMap[K comparable, V ReplicatedData] struct {
	keys   ORSet[K]
	values map[K]V

	ops      []ormapOp[K, V] // the pending delta
	overflow bool
}

// NewORMap returns an empty map.
func NewORMap[K comparable, V ReplicatedData]() *ORMap[K, V] { return &ORMap[K, V]{} }

type mapOpKind uint8

const (
	mapPut    mapOpKind = iota // key added with a whole value
	mapUpdate                  // key added with the value's delta (nil: value unchanged)
	mapRemove                  // key removed
)

// ormapOp is one operation of an ORMap delta.
type ormapOp[K comparable, V ReplicatedData] struct {
	kind  mapOpKind
	key   orsetOp[K] // the keys' operation
	value V          // mapPut: a copy of the value, owned by the delta
	delta Delta      // mapUpdate: the value's delta, or nil
}

// Put merges value into key's value on behalf of node (the local node), or makes
// it key's value when the key is absent. The map takes ownership of value: do not
// use it afterwards. There is no replace in a CRDT map, since every replica merges
// what it is sent: to start a key afresh, Remove it first (see ORMap on concurrent
// updates). Put fails only when V's MergeData fails, which the types in this
// package never do.
func (m *ORMap[K, V]) Put(node cluster.UniqueAddress, key K, value V) error {
	if dd, ok := any(value).(DeltaData); ok {
		dd.TakeDelta() // the put carries the whole value
	}
	op := ormapOp[K, V]{kind: mapPut, value: cloneAs(value)}
	if cur, ok := m.values[key]; ok {
		if err := cur.MergeData(value); err != nil {
			return err
		}
	} else {
		if m.values == nil {
			m.values = make(map[K]V)
		}
		m.values[key] = value
	}
	op.key = m.keys.add(node, key)
	m.record(op)
	return nil
}

// Update changes key's value in place on behalf of node (the local node): modify
// gets the map's value, or init() when the key is absent (a nil init gives V's zero
// value, which suits every type in this package), and changes it. The map takes
// ownership of what init returns. modify must not keep the value.
func (m *ORMap[K, V]) Update(node cluster.UniqueAddress, key K, init func() V, modify func(V)) error {
	v, had := m.values[key]
	if !had {
		var err error
		if init != nil {
			v = init()
		} else if v, err = newZero[V](); err != nil {
			return err
		}
		if isNil(v) {
			return fmt.Errorf("%w: init returned a nil %T", ErrTypeMismatch, v)
		}
	}
	keyOp := m.keys.add(node, key)
	modify(v)
	if m.values == nil {
		m.values = make(map[K]V)
	}
	m.values[key] = v
	op := ormapOp[K, V]{kind: mapPut, key: keyOp}
	dd, isDelta := any(v).(DeltaData)
	switch {
	case !isDelta:
		op.value = cloneAs(v)
	case !had:
		dd.TakeDelta() // a new value travels whole
		op.value = cloneAs(v)
	default:
		d, changed := dd.TakeDelta()
		if d == nil && changed {
			op.value = cloneAs(v) // the value dropped its delta
		} else {
			op.kind, op.delta = mapUpdate, d
		}
	}
	m.record(op)
	return nil
}

// Remove removes key. Removing an absent key changes nothing.
func (m *ORMap[K, V]) Remove(key K) {
	keyOp, ok := m.keys.remove(key)
	if !ok {
		return
	}
	delete(m.values, key)
	m.record(ormapOp[K, V]{kind: mapRemove, key: keyOp})
}

func (m *ORMap[K, V]) record(op ormapOp[K, V]) {
	if m.overflow {
		return
	}
	if len(m.ops) >= maxPendingOps {
		m.ops, m.overflow = nil, true
		return
	}
	m.ops = append(m.ops, op)
}

// Get returns key's value, owned by the map: read it, or clone it to keep it.
func (m *ORMap[K, V]) Get(key K) (V, bool) {
	v, ok := m.values[key]
	return v, ok
}

// Contains reports whether key is in the map.
func (m *ORMap[K, V]) Contains(key K) bool { return m.keys.Contains(key) }

// Len returns the number of keys.
func (m *ORMap[K, V]) Len() int { return m.keys.Len() }

// Keys returns the keys in a new slice, in no particular order.
func (m *ORMap[K, V]) Keys() []K { return m.keys.Elements() }

// All iterates over the keys and the map's own values, in no particular order.
// The map must not change during the iteration.
func (m *ORMap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for k, v := range m.values {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Merge merges o's keys, and the values of the keys that remain. It fails only
// when a value's MergeData fails, which the types in this package never do; the
// map may then be partly merged.
func (m *ORMap[K, V]) Merge(o *ORMap[K, V]) error {
	m.keys.Merge(&o.keys)
	return m.mergeValues(o.values)
}

func (m *ORMap[K, V]) mergeValues(ov map[K]V) error {
	for k, v := range m.values {
		if !m.keys.Contains(k) {
			delete(m.values, k)
			continue
		}
		if o, ok := ov[k]; ok {
			if err := v.MergeData(o); err != nil {
				return err
			}
		}
	}
	for k, o := range ov {
		if _, ok := m.values[k]; ok || !m.keys.Contains(k) {
			continue
		}
		if m.values == nil {
			m.values = make(map[K]V, len(ov))
		}
		m.values[k] = cloneAs(o)
	}
	return nil
}

// Clone returns a deep copy of the state without the pending delta.
func (m *ORMap[K, V]) Clone() *ORMap[K, V] {
	c := &ORMap[K, V]{keys: *m.keys.Clone()}
	if m.values != nil {
		c.values = make(map[K]V, len(m.values))
		for k, v := range m.values {
			c.values[k] = cloneAs(v)
		}
	}
	return c
}

// cloneAs clones v, which CloneData must return as the same type.
func cloneAs[V ReplicatedData](v V) V {
	c, _ := v.CloneData().(V)
	return c
}

// MergeData merges an *ORMap[K, V].
func (m *ORMap[K, V]) MergeData(other ReplicatedData) error {
	o, ok := other.(*ORMap[K, V])
	if !ok || o == nil {
		return mismatch("*ORMap", other)
	}
	return m.Merge(o)
}

// CloneData returns Clone.
func (m *ORMap[K, V]) CloneData() ReplicatedData { return m.Clone() }

// TakeDelta returns the operations since the last call as an *ORMapDelta[K, V].
func (m *ORMap[K, V]) TakeDelta() (Delta, bool) {
	if m.overflow {
		m.overflow, m.ops = false, nil
		return nil, true
	}
	if len(m.ops) == 0 {
		return nil, false
	}
	d := &ORMapDelta[K, V]{ops: m.ops}
	m.ops = nil
	return d, true
}

// MergeDelta applies an *ORMapDelta[K, V].
func (m *ORMap[K, V]) MergeDelta(d Delta) error {
	md, ok := d.(*ORMapDelta[K, V])
	if !ok || md == nil {
		return mismatch("*ORMapDelta", d)
	}
	return m.applyOps(md.ops)
}

// NewDelta returns an empty *ORMapDelta[K, V].
func (m *ORMap[K, V]) NewDelta() Delta { return &ORMapDelta[K, V]{} }

func (m *ORMap[K, V]) applyOps(ops []ormapOp[K, V]) error {
	for i := range ops {
		op := &ops[i]
		key := op.key.elem
		m.keys.applyOp(&op.key)
		if !m.keys.Contains(key) {
			delete(m.values, key)
			continue
		}
		cur, has := m.values[key]
		switch op.kind {
		case mapRemove:
			continue // a concurrent add kept the key, and its value
		case mapPut:
			if has {
				if err := cur.MergeData(op.value); err != nil {
					return err
				}
				continue
			}
			cur = cloneAs(op.value)
		case mapUpdate:
			if !has {
				var err error
				if op.delta != nil {
					nd, ok := op.delta.NewData().(V)
					if !ok {
						return mismatch(reflect.TypeFor[V]().String(), op.delta.NewData())
					}
					cur = nd
				} else if cur, err = newZero[V](); err != nil {
					return err
				}
			}
			if op.delta != nil {
				dd, ok := any(cur).(DeltaData)
				if !ok {
					return mismatch("DeltaData", cur)
				}
				if err := dd.MergeDelta(op.delta); err != nil {
					return err
				}
			}
		}
		if m.values == nil {
			m.values = make(map[K]V)
		}
		m.values[key] = cur
	}
	return nil
}

// ModifiedByNodes returns the nodes in the keys and in prunable values, in order.
func (m *ORMap[K, V]) ModifiedByNodes() []cluster.UniqueAddress {
	seen := make(map[cluster.UniqueAddress]bool)
	for _, n := range m.keys.ModifiedByNodes() {
		seen[n] = true
	}
	for _, v := range m.values {
		if p, ok := any(v).(PrunableData); ok {
			for _, n := range p.ModifiedByNodes() {
				seen[n] = true
			}
		}
	}
	out := make([]cluster.UniqueAddress, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	return sortNodes(out)
}

// NeedPruningFrom reports whether removed holds state in the keys or a value.
func (m *ORMap[K, V]) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	if m.keys.NeedPruningFrom(removed) {
		return true
	}
	for _, v := range m.values {
		if p, ok := any(v).(PrunableData); ok && p.NeedPruningFrom(removed) {
			return true
		}
	}
	return false
}

// Prune prunes the keys and every prunable value.
func (m *ORMap[K, V]) Prune(removed, into cluster.UniqueAddress) {
	m.keys.Prune(removed, into)
	for _, v := range m.values {
		if p, ok := any(v).(PrunableData); ok {
			p.Prune(removed, into)
		}
	}
	m.dropOrphans()
}

// PruningCleanup cleans up the keys and every prunable value.
func (m *ORMap[K, V]) PruningCleanup(removed cluster.UniqueAddress) {
	m.keys.PruningCleanup(removed)
	for _, v := range m.values {
		if p, ok := any(v).(PrunableData); ok {
			p.PruningCleanup(removed)
		}
	}
	m.dropOrphans()
}

// dropOrphans drops the values whose key is gone.
func (m *ORMap[K, V]) dropOrphans() {
	for k := range m.values {
		if !m.keys.Contains(k) {
			delete(m.values, k)
		}
	}
}

// EncodeMsgpack writes [nodes, keys, values]: the keys as an ORSet does, then the
// values in the order of the keys.
func (m *ORMap[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(3); err != nil {
		return err
	}
	keys, err := m.keys.encodeBody(enc)
	if err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(len(keys)); err != nil {
		return err
	}
	for _, k := range keys {
		if err := writeCanonical(enc, m.values[k]); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it: the keys as an
// ORSet, and exactly one non-nil value per key.
func (m *ORMap[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error {
	if _, err := decodeLen(dec, "ORMap", 3, 3); err != nil {
		return err
	}
	var out ORMap[K, V]
	keys, err := out.keys.decodeBody(dec)
	if err != nil {
		return err
	}
	if _, err := decodeLen(dec, "ORMap values", len(keys), len(keys)); err != nil {
		return err
	}
	if len(keys) > 0 {
		out.values = make(map[K]V, len(keys))
	}
	for _, k := range keys {
		v, err := decodeValue[V](dec)
		if err != nil {
			return err
		}
		out.values[k] = v
	}
	*m = out
	return nil
}

// decodeValue decodes a non-nil V.
func decodeValue[V any](dec *msgpack.Decoder) (V, error) {
	var v V
	if err := dec.Decode(&v); err != nil {
		return v, err
	}
	if isNil(v) {
		return v, invalid("nil %v value", reflect.TypeFor[V]())
	}
	return v, nil
}

// isNil reports whether v is nil or a nil pointer, map, slice or interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// newZero returns a new zero value of the pointer type V.
func newZero[V any]() (V, error) {
	var zero V
	t := reflect.TypeFor[V]()
	if t.Kind() != reflect.Pointer {
		return zero, fmt.Errorf("%w: %v is not a pointer type, give Update an init", ErrTypeMismatch, t)
	}
	return reflect.New(t.Elem()).Interface().(V), nil
}

// ORMapDelta is the delta of an ORMap: key operations with the values or value
// deltas they carry. It is causal and immutable.
type ORMapDelta[K comparable, V ReplicatedData] struct {
	ops []ormapOp[K, V]
}

// Compose returns the operations of the receiver followed by later's.
func (d *ORMapDelta[K, V]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*ORMapDelta[K, V])
	if !ok || l == nil {
		return nil, mismatch("*ORMapDelta", later)
	}
	return &ORMapDelta[K, V]{ops: slices.Concat(d.ops, l.ops)}, nil
}

// NewData returns a new ORMap.
func (d *ORMapDelta[K, V]) NewData() DeltaData { return NewORMap[K, V]() }

// Causal returns true.
func (d *ORMapDelta[K, V]) Causal() bool { return true }

// Size returns the number of operations plus the sizes of the value deltas.
func (d *ORMapDelta[K, V]) Size() int {
	n := len(d.ops)
	for i := range d.ops {
		if d.ops[i].delta != nil {
			n += d.ops[i].delta.Size()
		}
	}
	return n
}

// EncodeMsgpack writes [nodes, ops]: the nodes the key operations name, then each
// operation as [0, keyOp, value] (put), [1, keyOp, valueDelta or nil] (update) or
// [2, keyOp] (remove), keyOp as in ORSetDelta.
func (d *ORMapDelta[K, V]) EncodeMsgpack(enc *msgpack.Encoder) error {
	var t deltaNodes
	for i := range d.ops {
		t.addOp(&d.ops[i].key)
	}
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := t.encode(enc); err != nil {
		return err
	}
	if err := enc.EncodeArrayLen(len(d.ops)); err != nil {
		return err
	}
	for i := range d.ops {
		op := &d.ops[i]
		n := 3
		if op.kind == mapRemove {
			n = 2
		}
		if err := enc.EncodeArrayLen(n); err != nil {
			return err
		}
		if err := enc.EncodeUint(uint64(op.kind)); err != nil {
			return err
		}
		if err := encodeORSetOp(enc, &t, &op.key); err != nil {
			return err
		}
		switch op.kind {
		case mapPut:
			if err := writeCanonical(enc, op.value); err != nil {
				return err
			}
		case mapUpdate:
			if op.delta == nil {
				if err := enc.EncodeNil(); err != nil {
					return err
				}
			} else if err := enc.Encode(op.delta); err != nil {
				return err
			}
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (d *ORMapDelta[K, V]) DecodeMsgpack(dec *msgpack.Decoder) error {
	if _, err := decodeLen(dec, "ORMapDelta", 2, 2); err != nil {
		return err
	}
	nodes, err := decodeDeltaNodes(dec)
	if err != nil {
		return err
	}
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 0 {
		return invalid("ORMapDelta without ops array")
	}
	ops := make([]ormapOp[K, V], 0, min(n, 1024))
	for range n {
		k, err := decodeLen(dec, "ORMap op", 2, 3)
		if err != nil {
			return err
		}
		kind, err := dec.DecodeUint8()
		if err != nil {
			return err
		}
		op := ormapOp[K, V]{kind: mapOpKind(kind)}
		wantKey, wantLen := int(opAdd), 3
		switch op.kind {
		case mapPut, mapUpdate:
		case mapRemove:
			wantKey, wantLen = int(opRemove), 2
		default:
			return invalid("ORMap op kind %d", kind)
		}
		if k != wantLen {
			return invalid("ORMap op of kind %d with %d fields", kind, k)
		}
		if op.key, err = decodeORSetOp[K](dec, nodes, wantKey); err != nil {
			return err
		}
		switch op.kind {
		case mapPut:
			if op.value, err = decodeValue[V](dec); err != nil {
				return err
			}
		case mapUpdate:
			if op.delta, err = decodeValueDelta[V](dec); err != nil {
				return err
			}
		}
		ops = append(ops, op)
	}
	d.ops = ops
	return nil
}

// decodeValueDelta decodes the delta of a V, or nil.
func decodeValueDelta[V any](dec *msgpack.Decoder) (Delta, error) {
	if c, err := dec.PeekCode(); err != nil {
		return nil, err
	} else if c == 0xc0 {
		return nil, dec.DecodeNil()
	}
	zero, err := newZero[V]()
	if err != nil {
		return nil, err
	}
	dd, ok := any(zero).(DeltaData)
	if !ok {
		return nil, invalid("a value delta for %v, which has none", reflect.TypeFor[V]())
	}
	d := dd.NewDelta()
	if err := dec.Decode(d); err != nil {
		return nil, err
	}
	return d, nil
}
