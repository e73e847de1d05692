package ddata

import (
	"slices"

	"github.com/troupe-go/troupe/cluster"
	"github.com/vmihailenco/msgpack/v5"
)

// opKind is the kind of one ORSet delta operation.
type opKind uint8

const (
	opAdd    opKind = iota // elem gained the dot add; ctx holds the dots it replaced
	opRemove               // elem lost the dots in ctx
	opClear                // every element lost the dots covered by the version vector ctx
)

// orsetOp is one operation of an ORSet delta, naming nodes by address so that any
// replica can apply it.
type orsetOp[E comparable] struct {
	kind opKind
	elem E         // opAdd, opRemove
	add  nodeDot   // opAdd: the new dot
	ctx  []nodeDot // opAdd, opRemove: the element's dots before; opClear: the version vector
}

// ORSetDelta is the delta of an ORSet: the operations in the order they were made.
// It is causal: each node's deltas are applied in order. It is immutable.
type ORSetDelta[E comparable] struct {
	ops []orsetOp[E]
}

// Compose returns the operations of the receiver followed by later's.
func (d *ORSetDelta[E]) Compose(later Delta) (Delta, error) {
	l, ok := later.(*ORSetDelta[E])
	if !ok || l == nil {
		return nil, mismatch("*ORSetDelta", later)
	}
	return &ORSetDelta[E]{ops: slices.Concat(d.ops, l.ops)}, nil
}

// NewData returns a new ORSet.
func (d *ORSetDelta[E]) NewData() DeltaData { return NewORSet[E]() }

// Causal returns true.
func (d *ORSetDelta[E]) Causal() bool { return true }

// Size returns the number of operations.
func (d *ORSetDelta[E]) Size() int { return len(d.ops) }

// EncodeMsgpack writes [nodes, ops]: the nodes named, in order of first use, as
// [[addr, uid]...], then each operation as [0, elem, node, seq, (node, seq)...]
// for an add, [1, elem, (node, seq)...] for a remove and [2, (node, seq)...] for a
// clear, nodes by position.
func (d *ORSetDelta[E]) EncodeMsgpack(enc *msgpack.Encoder) error {
	var t deltaNodes
	for i := range d.ops {
		t.addOp(&d.ops[i])
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
		if err := encodeORSetOp(enc, &t, &d.ops[i]); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote and checks it.
func (d *ORSetDelta[E]) DecodeMsgpack(dec *msgpack.Decoder) error {
	if _, err := decodeLen(dec, "ORSetDelta", 2, 2); err != nil {
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
		return invalid("ORSetDelta without ops array")
	}
	ops := make([]orsetOp[E], 0, min(n, 1024))
	for range n {
		op, err := decodeORSetOp[E](dec, nodes, -1)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	d.ops = ops
	return nil
}

// deltaNodes numbers the nodes a delta names, in order of first use.
type deltaNodes struct {
	nodes []cluster.UniqueAddress
	pos   map[cluster.UniqueAddress]int
}

func (t *deltaNodes) add(n cluster.UniqueAddress) {
	if _, ok := t.pos[n]; ok {
		return
	}
	if t.pos == nil {
		t.pos = make(map[cluster.UniqueAddress]int)
	}
	t.pos[n] = len(t.nodes)
	t.nodes = append(t.nodes, n)
}

// nodeNamer is an operation that names nodes.
type nodeNamer interface {
	nodesOf(func(cluster.UniqueAddress))
}

func (t *deltaNodes) addOp(op nodeNamer) { op.nodesOf(t.add) }

func (op *orsetOp[E]) nodesOf(f func(cluster.UniqueAddress)) {
	if op.kind == opAdd {
		f(op.add.node)
	}
	for _, c := range op.ctx {
		f(c.node)
	}
}

func (t *deltaNodes) encode(enc *msgpack.Encoder) error {
	if err := enc.EncodeArrayLen(len(t.nodes)); err != nil {
		return err
	}
	for _, n := range t.nodes {
		if err := encodeNode(enc, n); err != nil {
			return err
		}
	}
	return nil
}

// decodeDeltaNodes reads a delta's node table; the nodes must be distinct.
func decodeDeltaNodes(dec *msgpack.Decoder) ([]cluster.UniqueAddress, error) {
	n, err := decodeLen(dec, "delta nodes", 0, maxNodes)
	if err != nil {
		return nil, err
	}
	nodes := make([]cluster.UniqueAddress, n)
	seen := make(map[cluster.UniqueAddress]bool, n)
	for i := range nodes {
		if nodes[i], err = decodeNode(dec); err != nil {
			return nil, err
		}
		if seen[nodes[i]] {
			return nil, invalid("delta names node %v twice", nodes[i])
		}
		seen[nodes[i]] = true
	}
	return nodes, nil
}

func encodeORSetOp[E comparable](enc *msgpack.Encoder, t *deltaNodes, op *orsetOp[E]) error {
	n := 1 + 2*len(op.ctx)
	if op.kind != opClear {
		n++
	}
	if op.kind == opAdd {
		n += 2
	}
	if err := enc.EncodeArrayLen(n); err != nil {
		return err
	}
	if err := enc.EncodeUint(uint64(op.kind)); err != nil {
		return err
	}
	if op.kind != opClear {
		if err := writeCanonical(enc, op.elem); err != nil {
			return err
		}
	}
	if op.kind == opAdd {
		if err := encodeDot(enc, t, op.add); err != nil {
			return err
		}
	}
	for _, c := range op.ctx {
		if err := encodeDot(enc, t, c); err != nil {
			return err
		}
	}
	return nil
}

func encodeDot(enc *msgpack.Encoder, t *deltaNodes, d nodeDot) error {
	if err := enc.EncodeInt(int64(t.pos[d.node])); err != nil {
		return err
	}
	return enc.EncodeUint(d.seq)
}

// decodeORSetOp reads one operation. want, when not -1, is the only kind accepted.
func decodeORSetOp[E comparable](dec *msgpack.Decoder, nodes []cluster.UniqueAddress, want int) (orsetOp[E], error) {
	var op orsetOp[E]
	n, err := decodeLen(dec, "ORSet op", 1, 4+2*len(nodes))
	if err != nil {
		return op, err
	}
	k, err := dec.DecodeUint8()
	if err != nil {
		return op, err
	}
	op.kind = opKind(k)
	if op.kind > opClear || (want >= 0 && int(op.kind) != want) {
		return op, invalid("ORSet op kind %d", k)
	}
	fixed := 1 // fields before the context dots
	if op.kind != opClear {
		fixed++
	}
	if op.kind == opAdd {
		fixed += 2
	}
	if n < fixed || (n-fixed)%2 != 0 {
		return op, invalid("ORSet op of kind %d with %d fields", k, n)
	}
	if op.kind != opClear {
		if err := dec.Decode(&op.elem); err != nil {
			return op, err
		}
	}
	if op.kind == opAdd {
		if op.add, err = decodeDot(dec, nodes); err != nil {
			return op, err
		}
	}
	if m := (n - fixed) / 2; m > 0 {
		op.ctx = make([]nodeDot, m)
		seen := make(map[cluster.UniqueAddress]bool, m)
		for i := range op.ctx {
			if op.ctx[i], err = decodeDot(dec, nodes); err != nil {
				return op, err
			}
			c := op.ctx[i]
			if seen[c.node] {
				return op, invalid("ORSet op names node %v twice", c.node)
			}
			seen[c.node] = true
			if op.kind == opAdd && c.node == op.add.node && c.seq >= op.add.seq {
				return op, invalid("ORSet add replaces a dot at or after its own")
			}
		}
	}
	return op, nil
}

func decodeDot(dec *msgpack.Decoder, nodes []cluster.UniqueAddress) (nodeDot, error) {
	p, err := dec.DecodeInt()
	if err != nil {
		return nodeDot{}, err
	}
	if p < 0 || p >= len(nodes) {
		return nodeDot{}, invalid("dot names node %d of %d", p, len(nodes))
	}
	seq, err := decodeUint(dec)
	if err != nil {
		return nodeDot{}, err
	}
	if seq == 0 || seq > maxSeq {
		return nodeDot{}, invalid("dot with seq %d", seq)
	}
	return nodeDot{node: nodes[p], seq: seq}, nil
}
