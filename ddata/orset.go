package ddata

import (
	"iter"
	"maps"
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// maxPendingOps bounds the operations a value records between two TakeDelta calls.
// Past it the value drops its delta and TakeDelta reports a change without one, to
// be sent as full state, so a value changed by someone who never takes its delta
// does not grow without bound.
const maxPendingOps = 1024

// ORSet is an observed-remove set: elements are added and removed, and when an add
// and a remove of the same element are concurrent, the add wins. Use it for sets
// that shrink as well as grow (a shopping cart, the members of a group).
//
// Each replica keeps a version vector (the changes it has seen, per node) and, per
// element, the dots (node, seq) of the adds that keep it alive; a remove drops the
// element's dots, and a merge drops a dot that one side has seen and no longer
// holds. There are no tombstones: a removed element costs nothing.
//
// Add and Remove cost O(1) and record a delta of one operation (the element and a
// dot or two), whatever the size of the set. Its deltas are causal: the replicator
// applies each node's deltas in order.
//
// E must be a value type whose msgpack encoding is a function of its value (see the
// package documentation on element types). The zero value is an empty set, ready to
// use.
type ORSet[E comparable] struct {
	nodes nodeTable
	vv    []uint64 // vv[i]: the latest change of nodes.nodes[i] seen; 0 when none (or pruned)
	elems map[E]dotSet

	ops      []orsetOp[E] // the pending delta
	overflow bool         // the pending delta was dropped
}

// NewORSet returns an empty set.
func NewORSet[E comparable]() *ORSet[E] { return &ORSet[E]{} }

// idx returns n's index in the table, growing the version vector to match.
func (s *ORSet[E]) idx(n cluster.UniqueAddress) uint32 {
	i := s.nodes.id(n)
	for int(i) >= len(s.vv) {
		s.vv = append(s.vv, 0)
	}
	return i
}

// Add adds e on behalf of node, the local node (the replicator's
// SelfUniqueAddress). Adding an element that is present renews its dot, so that it
// wins over removes concurrent with this add.
func (s *ORSet[E]) Add(node cluster.UniqueAddress, e E) { s.record(s.add(node, e)) }

// add adds e and returns the operation without recording it.
func (s *ORSet[E]) add(node cluster.UniqueAddress, e E) orsetOp[E] {
	i := s.idx(node)
	s.vv[i]++
	d := dot{node: i, seq: s.vv[i]}
	prev, had := s.elems[e]
	if s.elems == nil {
		s.elems = make(map[E]dotSet)
	}
	s.elems[e] = dotSet{first: d}
	op := orsetOp[E]{kind: opAdd, elem: e, add: nodeDot{node: node, seq: d.seq}}
	if had {
		op.ctx = s.addrDots(&prev)
	}
	return op
}

// Remove removes e. Removing an absent element changes nothing. The remove wins
// only over the adds this replica has seen; a concurrent add elsewhere keeps e.
func (s *ORSet[E]) Remove(e E) {
	if op, ok := s.remove(e); ok {
		s.record(op)
	}
}

// remove removes e and returns the operation without recording it; ok is false
// when e was absent.
func (s *ORSet[E]) remove(e E) (orsetOp[E], bool) {
	prev, ok := s.elems[e]
	if !ok {
		return orsetOp[E]{}, false
	}
	delete(s.elems, e)
	return orsetOp[E]{kind: opRemove, elem: e, ctx: s.addrDots(&prev)}, true
}

// Clear removes every element this replica has seen added.
func (s *ORSet[E]) Clear() {
	if len(s.elems) == 0 {
		return
	}
	clear(s.elems)
	var ctx []nodeDot
	for i, v := range s.vv {
		if v > 0 {
			ctx = append(ctx, nodeDot{node: s.nodes.nodes[i], seq: v})
		}
	}
	s.record(orsetOp[E]{kind: opClear, ctx: ctx})
}

// addrDots returns ds with node addresses instead of indices.
func (s *ORSet[E]) addrDots(ds *dotSet) []nodeDot {
	out := make([]nodeDot, ds.size())
	for i := range out {
		d := ds.at(i)
		out[i] = nodeDot{node: s.nodes.nodes[d.node], seq: d.seq}
	}
	return out
}

func (s *ORSet[E]) record(op orsetOp[E]) {
	if s.overflow {
		return
	}
	if len(s.ops) >= maxPendingOps {
		s.ops, s.overflow = nil, true
		return
	}
	s.ops = append(s.ops, op)
}

// Contains reports whether e is in the set.
func (s *ORSet[E]) Contains(e E) bool {
	_, ok := s.elems[e]
	return ok
}

// Len returns the number of elements.
func (s *ORSet[E]) Len() int { return len(s.elems) }

// All iterates over the elements in no particular order. The set must not change
// during the iteration.
func (s *ORSet[E]) All() iter.Seq[E] { return maps.Keys(s.elems) }

// Elements returns the elements in a new slice, in no particular order.
func (s *ORSet[E]) Elements() []E { return slices.Collect(maps.Keys(s.elems)) }

// Merge merges o into the receiver: an element stays if either side holds a dot
// for it that the other side has not seen removed.
func (s *ORSet[E]) Merge(o *ORSet[E]) {
	// Translate o's node indices into ours; ident means they already agree.
	xl := make([]uint32, len(o.nodes.nodes))
	ident := true
	for j, n := range o.nodes.nodes {
		if o.vv[j] == 0 {
			continue // no dot names this node
		}
		xl[j] = s.idx(n)
		ident = ident && xl[j] == uint32(j)
	}
	ovv := make([]uint64, len(s.vv)) // o's version vector, in our indices
	rev := make([]int32, len(s.vv))  // our index -> o's, or -1
	for i := range rev {
		rev[i] = -1
	}
	for j := range o.nodes.nodes {
		if o.vv[j] > 0 {
			ovv[xl[j]] = o.vv[j]
			rev[xl[j]] = int32(j)
		}
	}
	var buf []dot
	for e, ds := range s.elems {
		ods, inO := o.elems[e]
		if inO && ident && ds.equal(&ods) {
			continue
		}
		buf = buf[:0]
		for k := range ds.size() {
			d := ds.at(k)
			inBoth := inO && rev[d.node] >= 0 && ods.seqOf(uint32(rev[d.node])) == d.seq
			if inBoth || !d.coveredBy(ovv) {
				buf = append(buf, d)
			}
		}
		if inO {
			buf = s.appendUnseen(buf, &ods, xl)
		}
		if len(buf) == 0 {
			delete(s.elems, e)
		} else {
			s.elems[e] = packDots(buf)
		}
	}
	for e, ods := range o.elems {
		if _, ok := s.elems[e]; ok {
			continue
		}
		if ident {
			// Elements removed above reappear here only with unseen dots.
			if !ods.first.coveredBy(s.vv) && len(ods.more) == 0 {
				if s.elems == nil {
					s.elems = make(map[E]dotSet, len(o.elems))
				}
				s.elems[e] = ods // immutable, safe to share
				continue
			}
		}
		buf = s.appendUnseen(buf[:0], &ods, xl)
		if len(buf) > 0 {
			if s.elems == nil {
				s.elems = make(map[E]dotSet, len(o.elems))
			}
			s.elems[e] = packDots(buf)
		}
	}
	for i, v := range ovv {
		if v > s.vv[i] {
			s.vv[i] = v
		}
	}
}

// appendUnseen appends the dots of ods (in o's indices, translated by xl) that the
// receiver's version vector has not seen.
func (s *ORSet[E]) appendUnseen(buf []dot, ods *dotSet, xl []uint32) []dot {
	for k := range ods.size() {
		od := ods.at(k)
		d := dot{node: xl[od.node], seq: od.seq}
		if !d.coveredBy(s.vv) {
			buf = append(buf, d)
		}
	}
	return buf
}

// Clone returns a copy of the state without the pending delta.
func (s *ORSet[E]) Clone() *ORSet[E] {
	return &ORSet[E]{nodes: s.nodes.clone(), vv: slices.Clone(s.vv), elems: maps.Clone(s.elems)}
}

// MergeData merges an *ORSet[E].
func (s *ORSet[E]) MergeData(other ReplicatedData) error {
	o, ok := other.(*ORSet[E])
	if !ok || o == nil {
		return mismatch("*ORSet", other)
	}
	s.Merge(o)
	return nil
}

// CloneData returns Clone.
func (s *ORSet[E]) CloneData() ReplicatedData { return s.Clone() }

// TakeDelta returns the operations since the last call as an *ORSetDelta[E].
func (s *ORSet[E]) TakeDelta() (Delta, bool) {
	d, changed := s.takeDelta()
	if d == nil {
		return nil, changed
	}
	return d, true
}

func (s *ORSet[E]) takeDelta() (*ORSetDelta[E], bool) {
	if s.overflow {
		s.overflow, s.ops = false, nil
		return nil, true
	}
	if len(s.ops) == 0 {
		return nil, false
	}
	d := &ORSetDelta[E]{ops: s.ops}
	s.ops = nil
	return d, true
}

// MergeDelta applies an *ORSetDelta[E].
func (s *ORSet[E]) MergeDelta(d Delta) error {
	od, ok := d.(*ORSetDelta[E])
	if !ok || od == nil {
		return mismatch("*ORSetDelta", d)
	}
	for i := range od.ops {
		s.applyOp(&od.ops[i])
	}
	return nil
}

// NewDelta returns an empty *ORSetDelta[E].
func (s *ORSet[E]) NewDelta() Delta { return &ORSetDelta[E]{} }

// applyOp applies one operation of another replica's delta. It acts as a merge of
// that replica's state restricted to what the operation touched.
func (s *ORSet[E]) applyOp(op *orsetOp[E]) {
	switch op.kind {
	case opAdd, opRemove:
		ctx := s.localDots(op.ctx)
		var nd dot
		if op.kind == opAdd {
			nd = dot{node: s.idx(op.add.node), seq: op.add.seq}
			ctx = append(ctx, nd)
		}
		var buf [4]dot
		keep := buf[:0]
		if cur, ok := s.elems[op.elem]; ok {
			for k := range cur.size() {
				d := cur.at(k)
				if (op.kind == opAdd && d == nd) || !d.coveredByDots(ctx) {
					keep = append(keep, d)
				}
			}
		}
		if op.kind == opAdd {
			if !nd.coveredBy(s.vv) {
				keep = append(keep, nd)
			}
			s.vv[nd.node] = max(s.vv[nd.node], nd.seq)
		}
		if len(keep) == 0 {
			delete(s.elems, op.elem)
		} else {
			if s.elems == nil {
				s.elems = make(map[E]dotSet)
			}
			s.elems[op.elem] = packDots(keep)
		}
	case opClear:
		ovv := make([]uint64, len(s.vv))
		for _, c := range op.ctx {
			i := s.idx(c.node)
			for int(i) >= len(ovv) {
				ovv = append(ovv, 0)
			}
			ovv[i] = c.seq
		}
		s.dropSeen(ovv)
		for i, v := range ovv {
			s.vv[i] = max(s.vv[i], v)
		}
	}
}

// localDots translates dots to the receiver's indices, leaving out nodes it does
// not know (no dot of the receiver can name them).
func (s *ORSet[E]) localDots(ctx []nodeDot) []dot {
	out := make([]dot, 0, len(ctx)+1)
	for _, c := range ctx {
		if i, ok := s.nodes.lookup(c.node); ok {
			out = append(out, dot{node: i, seq: c.seq})
		}
	}
	return out
}

// dropSeen drops every dot that vv (in the receiver's indices) has seen, and the
// elements left without a dot.
func (s *ORSet[E]) dropSeen(vv []uint64) {
	var buf []dot
	for e, ds := range s.elems {
		buf = buf[:0]
		for k := range ds.size() {
			if d := ds.at(k); !d.coveredBy(vv) {
				buf = append(buf, d)
			}
		}
		switch {
		case len(buf) == 0:
			delete(s.elems, e)
		case len(buf) != ds.size():
			s.elems[e] = packDots(buf)
		}
	}
}

// ModifiedByNodes returns the nodes in the version vector, in order.
func (s *ORSet[E]) ModifiedByNodes() []cluster.UniqueAddress {
	var out []cluster.UniqueAddress
	for i, v := range s.vv {
		if v > 0 {
			out = append(out, s.nodes.nodes[i])
		}
	}
	return sortNodes(out)
}

// NeedPruningFrom reports whether removed is in the version vector.
func (s *ORSet[E]) NeedPruningFrom(removed cluster.UniqueAddress) bool {
	i, ok := s.nodes.lookup(removed)
	return ok && s.vv[i] > 0
}

// Prune re-adds, in into's name, every element that removed's dots keep alive,
// then drops removed. into must be the local node: the node performing the pruning
// issues the new dots.
func (s *ORSet[E]) Prune(removed, into cluster.UniqueAddress) {
	r, ok := s.nodes.lookup(removed)
	if !ok || s.vv[r] == 0 || removed == into {
		return
	}
	t := s.idx(into)
	var buf []dot
	for e, ds := range s.elems {
		if ds.seqOf(r) == 0 {
			continue
		}
		buf = buf[:0]
		for k := range ds.size() {
			if d := ds.at(k); d.node != r && d.node != t {
				buf = append(buf, d)
			}
		}
		s.vv[t]++
		buf = append(buf, dot{node: t, seq: s.vv[t]})
		s.elems[e] = packDots(buf)
	}
	s.vv[r] = 0
}

// PruningCleanup drops removed's dots, the elements only they kept alive, and
// removed's version.
func (s *ORSet[E]) PruningCleanup(removed cluster.UniqueAddress) {
	r, ok := s.nodes.lookup(removed)
	if !ok || s.vv[r] == 0 {
		return
	}
	var buf []dot
	for e, ds := range s.elems {
		if ds.seqOf(r) == 0 {
			continue
		}
		buf = buf[:0]
		for k := range ds.size() {
			if d := ds.at(k); d.node != r {
				buf = append(buf, d)
			}
		}
		if len(buf) == 0 {
			delete(s.elems, e)
		} else {
			s.elems[e] = packDots(buf)
		}
	}
	s.vv[r] = 0
}

// EncodeMsgpack writes [nodes, elements]: nodes as [[addr, uid, version]...] in
// node order, elements as [[element, node position, seq, ...]...] sorted by the
// element's encoding, each element's dots in node order.
func (s *ORSet[E]) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	_, err := s.encodeBody(enc)
	return err
}

// encodeBody writes the nodes and the elements and returns the elements in the
// order written.
func (s *ORSet[E]) encodeBody(enc *msgpack.Encoder) ([]E, error) {
	var live []uint32
	for i, v := range s.vv {
		if v > 0 {
			live = append(live, uint32(i))
		}
	}
	slices.SortFunc(live, func(a, b uint32) int { return compareNodes(s.nodes.nodes[a], s.nodes.nodes[b]) })
	pos := make([]int, len(s.vv))
	for p, i := range live {
		pos[i] = p
	}
	if err := enc.EncodeArrayLen(len(live)); err != nil {
		return nil, err
	}
	for _, i := range live {
		n := s.nodes.nodes[i]
		if err := enc.EncodeArrayLen(3); err != nil {
			return nil, err
		}
		if err := enc.EncodeString(n.Addr); err != nil {
			return nil, err
		}
		if err := enc.EncodeUint(n.UID); err != nil {
			return nil, err
		}
		if err := enc.EncodeUint(s.vv[i]); err != nil {
			return nil, err
		}
	}
	keys := slices.Collect(maps.Keys(s.elems))
	order, encs, err := sortedByEncoding(keys)
	if err != nil {
		return nil, err
	}
	if err := enc.EncodeArrayLen(len(keys)); err != nil {
		return nil, err
	}
	w := enc.Writer()
	sorted := make([]E, len(keys))
	var dots []dot
	for k, i := range order {
		sorted[k] = keys[i]
		ds := s.elems[keys[i]]
		if err := enc.EncodeArrayLen(1 + 2*ds.size()); err != nil {
			return nil, err
		}
		if _, err := w.Write(encs[i]); err != nil {
			return nil, err
		}
		dots = dots[:0]
		for j := range ds.size() {
			dots = append(dots, ds.at(j))
		}
		slices.SortFunc(dots, func(a, b dot) int { return pos[a.node] - pos[b.node] })
		for _, d := range dots {
			if err := enc.EncodeInt(int64(pos[d.node])); err != nil {
				return nil, err
			}
			if err := enc.EncodeUint(d.seq); err != nil {
				return nil, err
			}
		}
	}
	return sorted, nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks the invariants: nodes
// distinct and in order, versions above zero, elements distinct, each with one to
// one-per-node dots that the version vector has seen.
func (s *ORSet[E]) DecodeMsgpack(dec *msgpack.Decoder) error {
	if _, err := decodeLen(dec, "ORSet", 2, 2); err != nil {
		return err
	}
	_, err := s.decodeBody(dec)
	return err
}

// decodeBody reads the nodes and elements and returns the elements in the order
// read.
func (s *ORSet[E]) decodeBody(dec *msgpack.Decoder) ([]E, error) {
	n, err := decodeLen(dec, "ORSet nodes", 0, maxNodes)
	if err != nil {
		return nil, err
	}
	out := ORSet[E]{vv: make([]uint64, n)}
	for i := range n {
		if _, err := decodeLen(dec, "ORSet node", 3, 3); err != nil {
			return nil, err
		}
		node, err := decodeNodeFields(dec)
		if err != nil {
			return nil, err
		}
		if i > 0 && compareNodes(out.nodes.nodes[i-1], node) >= 0 {
			return nil, invalid("ORSet nodes not in strictly increasing order")
		}
		out.nodes.id(node)
		if out.vv[i], err = decodeUint(dec); err != nil {
			return nil, err
		}
		if out.vv[i] == 0 || out.vv[i] > maxSeq {
			return nil, invalid("ORSet version %d for %v", out.vv[i], node)
		}
	}
	m, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, err
	}
	if m < 0 {
		return nil, invalid("ORSet without elements array")
	}
	order := make([]E, 0, min(m, 1<<16))
	if m > 0 {
		out.elems = make(map[E]dotSet, min(m, 1<<16))
	}
	var buf []dot
	for range m {
		k, err := decodeLen(dec, "ORSet element", 3, 1+2*n)
		if err != nil {
			return nil, err
		}
		if k%2 == 0 {
			return nil, invalid("ORSet element entry of even length %d", k)
		}
		var e E
		if err := dec.Decode(&e); err != nil {
			return nil, err
		}
		buf = buf[:0]
		last := -1
		for range (k - 1) / 2 {
			p, err := dec.DecodeInt()
			if err != nil {
				return nil, err
			}
			seq, err := decodeUint(dec)
			if err != nil {
				return nil, err
			}
			if p <= last || p >= n {
				return nil, invalid("ORSet dot node %d out of order or range", p)
			}
			if seq == 0 || seq > out.vv[p] {
				return nil, invalid("ORSet dot (%d, %d) not covered by the version vector", p, seq)
			}
			last = p
			buf = append(buf, dot{node: uint32(p), seq: seq})
		}
		out.elems[e] = packDots(buf)
		order = append(order, e)
	}
	if len(out.elems) != m {
		return nil, invalid("ORSet has duplicate elements")
	}
	*s = out
	return order, nil
}
