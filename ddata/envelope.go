package ddata

import (
	"crypto/sha256"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
)

// envelope is what the replicator holds, sends and stores for one key: the value,
// or the mark that the key was deleted, with the state of the pruning of removed
// nodes and the delta sequence numbers the value includes.
type envelope struct {
	data    ReplicatedData // nil when deleted
	deleted bool
	// pruning holds, per removed node, how far its pruning has come.
	pruning map[cluster.UniqueAddress]pruningState
	// deltaVersions holds, per originating node, the last of its delta sequence
	// numbers included in data. Gossip digests leave it out.
	deltaVersions map[cluster.UniqueAddress]uint64
}

// pruningState is how far the pruning of one removed node has come for one key.
// Initialized: owner (the node that will fold the removed node's state into its
// own) waits until every node has seen the initialisation. Performed: the state has
// been folded; replicas drop the removed node's state from what they merge, until
// obsoleteAt (Unix milliseconds), when the marker is forgotten.
type pruningState struct {
	owner      cluster.UniqueAddress
	seen       []cluster.UniqueAddress // initialized: sorted, distinct
	performed  bool
	obsoleteAt int64
}

// merge combines two replicas' views: performed wins over initialized (the later
// marker among two performed); of two initializations the lower owner wins, and one
// owner's seen sets are joined.
func (a pruningState) merge(b pruningState) pruningState {
	switch {
	case a.performed && b.performed:
		if a.obsoleteAt >= b.obsoleteAt {
			return a
		}
		return b
	case a.performed:
		return a
	case b.performed:
		return b
	case a.owner == b.owner:
		seen := slices.Concat(a.seen, b.seen)
		sortNodes(seen)
		return pruningState{owner: a.owner, seen: slices.Compact(seen)}
	case compareNodes(a.owner, b.owner) < 0:
		return a
	}
	return b
}

// hasSeen reports whether n has seen an initialized pruning.
func (p pruningState) hasSeen(n cluster.UniqueAddress) bool {
	_, ok := slices.BinarySearchFunc(p.seen, n, compareNodes)
	return ok
}

// newEnvelope wraps a value.
func newEnvelope(d ReplicatedData) *envelope { return &envelope{data: d} }

// deletedEnvelope returns the envelope of a deleted key.
func deletedEnvelope() *envelope { return &envelope{deleted: true} }

// clone returns a deep copy.
func (e *envelope) clone() *envelope {
	c := &envelope{deleted: e.deleted, deltaVersions: maps.Clone(e.deltaVersions)}
	if e.data != nil {
		c.data = e.data.CloneData()
	}
	if e.pruning != nil {
		c.pruning = make(map[cluster.UniqueAddress]pruningState, len(e.pruning))
		for k, v := range e.pruning {
			v.seen = slices.Clone(v.seen)
			c.pruning[k] = v
		}
	}
	return c
}

// merge merges o into the receiver without keeping references into it: deletion
// wins; pruning states merge; markers obsolete at now are dropped; both values are
// cleaned of the state of nodes whose pruning is performed, then merged; delta
// versions take the maximum. A value of another type is an error wrapping
// ErrTypeMismatch, and the receiver is left unchanged.
func (e *envelope) merge(o *envelope, now time.Time) error {
	if e.deleted {
		return nil
	}
	if o.deleted {
		*e = envelope{deleted: true}
		return nil
	}
	var incoming ReplicatedData
	if o.data != nil {
		if e.data != nil && reflect.TypeOf(e.data) != reflect.TypeOf(o.data) {
			return mismatch(reflect.TypeOf(e.data).String(), o.data)
		}
		incoming = o.data.CloneData()
	}
	for n, p := range o.pruning {
		if mine, ok := e.pruning[n]; ok {
			p = mine.merge(p)
		} else {
			p.seen = slices.Clone(p.seen)
		}
		if e.pruning == nil {
			e.pruning = make(map[cluster.UniqueAddress]pruningState)
		}
		e.pruning[n] = p
	}
	e.dropObsolete(now)
	if incoming != nil {
		cleanup(incoming, e.pruning)
		if e.data == nil {
			e.data = incoming
		} else {
			cleanup(e.data, e.pruning)
			if err := e.data.MergeData(incoming); err != nil {
				return err
			}
		}
	}
	for n, v := range o.deltaVersions {
		if v > e.deltaVersions[n] {
			if e.deltaVersions == nil {
				e.deltaVersions = make(map[cluster.UniqueAddress]uint64)
			}
			e.deltaVersions[n] = v
		}
	}
	return nil
}

// cleanup drops from d the state of every node whose pruning is performed.
func cleanup(d ReplicatedData, pruning map[cluster.UniqueAddress]pruningState) {
	p, ok := d.(PrunableData)
	if !ok {
		return
	}
	for n, s := range pruning {
		if s.performed && p.NeedPruningFrom(n) {
			p.PruningCleanup(n)
		}
	}
}

// mergeIncoming merges an envelope received from another node and marks that self
// has seen its pruning initialisations.
func (e *envelope) mergeIncoming(o *envelope, self cluster.UniqueAddress, now time.Time) error {
	if err := e.merge(o, now); err != nil {
		return err
	}
	e.addSeen(self)
	return nil
}

// addSeen records that n has seen every initialized pruning of the key.
func (e *envelope) addSeen(n cluster.UniqueAddress) {
	for r, p := range e.pruning {
		if !p.performed && !p.hasSeen(n) {
			p.seen = append(slices.Clone(p.seen), n)
			sortNodes(p.seen)
			e.pruning[r] = p
		}
	}
}

// needPruningFrom reports whether the value holds state of removed.
func (e *envelope) needPruningFrom(removed cluster.UniqueAddress) bool {
	p, ok := e.data.(PrunableData)
	return ok && !e.deleted && p.NeedPruningFrom(removed)
}

// initPruning starts pruning removed into owner: the first of the two steps.
func (e *envelope) initPruning(removed, owner cluster.UniqueAddress) {
	if e.pruning == nil {
		e.pruning = make(map[cluster.UniqueAddress]pruningState)
	}
	e.pruning[removed] = pruningState{owner: owner}
}

// performPruning folds removed's state into the owner's and marks the pruning
// performed until obsoleteAt: the second step, run by the owner.
func (e *envelope) performPruning(removed cluster.UniqueAddress, obsoleteAt time.Time) {
	st, ok := e.pruning[removed]
	if !ok || st.performed {
		return
	}
	if p, ok := e.data.(PrunableData); ok && !e.deleted {
		p.Prune(removed, st.owner)
	}
	e.pruning[removed] = pruningState{performed: true, obsoleteAt: obsoleteAt.UnixMilli()}
}

// dropObsolete forgets performed markers whose time has passed and returns the
// nodes forgotten.
func (e *envelope) dropObsolete(now time.Time) []cluster.UniqueAddress {
	var out []cluster.UniqueAddress
	for n, p := range e.pruning {
		if p.performed && now.UnixMilli() > p.obsoleteAt {
			delete(e.pruning, n)
			out = append(out, n)
		}
	}
	return out
}

// envelopeWire is the encoding of an envelope, registered as "ddata.Envelope" by
// RegisterTypes. Lists are sorted by node so that equal envelopes encode alike.
type envelopeWire struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack      struct{} `msgpack:",as_array"`
	Deleted       bool
	Manifest      string
	Data          []byte
	Pruning       []pruningWire
	DeltaVersions []versionWire
}

type pruningWire struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack   struct{} `msgpack:",as_array"`
	Removed    nodeWire
	Owner      nodeWire
	Seen       []nodeWire
	Performed  bool
	ObsoleteAt int64
}

type nodeWire struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	Addr     string
	UID      uint64
}

type versionWire struct {
	//lint:ignore U1000 msgpack reads the tag: encode as an array
	_msgpack struct{} `msgpack:",as_array"`
	Node     nodeWire
	Version  uint64
}

func toNodeWire(n cluster.UniqueAddress) nodeWire { return nodeWire{Addr: n.Addr, UID: n.UID} }

func (w nodeWire) node() (cluster.UniqueAddress, error) {
	if w.Addr == "" || len(w.Addr) > maxAddrLen {
		return cluster.UniqueAddress{}, invalid("node address of %d bytes", len(w.Addr))
	}
	return cluster.UniqueAddress{Addr: w.Addr, UID: w.UID}, nil
}

// envelopeManifest is the name RegisterTypes gives envelopeWire.
const envelopeManifest = "ddata.Envelope"

// toWire encodes the value with reg. withVersions false leaves the delta versions
// out (for digests).
func (e *envelope) toWire(reg *serialization.Registry, withVersions bool) (envelopeWire, error) {
	w := envelopeWire{Deleted: e.deleted}
	if !e.deleted && e.data != nil {
		var err error
		if w.Manifest, w.Data, err = reg.Marshal(e.data); err != nil {
			return w, err
		}
	}
	for _, n := range sortNodes(slices.Collect(maps.Keys(e.pruning))) {
		p := e.pruning[n]
		pw := pruningWire{Removed: toNodeWire(n), Performed: p.performed}
		if p.performed {
			pw.ObsoleteAt = p.obsoleteAt
		} else {
			pw.Owner = toNodeWire(p.owner)
			for _, s := range p.seen {
				pw.Seen = append(pw.Seen, toNodeWire(s))
			}
		}
		w.Pruning = append(w.Pruning, pw)
	}
	if withVersions {
		for _, n := range sortNodes(slices.Collect(maps.Keys(e.deltaVersions))) {
			w.DeltaVersions = append(w.DeltaVersions, versionWire{Node: toNodeWire(n), Version: e.deltaVersions[n]})
		}
	}
	return w, nil
}

// fromWire decodes and checks an envelope received from a peer or read from disk.
func (w *envelopeWire) fromWire(reg *serialization.Registry) (*envelope, error) {
	e := &envelope{deleted: w.Deleted}
	switch {
	case w.Deleted && (w.Manifest != "" || len(w.Data) > 0):
		return nil, invalid("deleted envelope with data")
	case !w.Deleted && w.Manifest == "":
		return nil, invalid("envelope without data")
	case !w.Deleted:
		v, err := reg.Unmarshal(w.Manifest, w.Data)
		if err != nil {
			return nil, err
		}
		d, ok := v.(ReplicatedData)
		if !ok {
			return nil, invalid("%q is not replicated data", w.Manifest)
		}
		e.data = d
	}
	var prev cluster.UniqueAddress
	for i, pw := range w.Pruning {
		n, err := pw.Removed.node()
		if err != nil {
			return nil, err
		}
		if i > 0 && compareNodes(prev, n) >= 0 {
			return nil, invalid("pruning entries not in order")
		}
		prev = n
		st := pruningState{performed: pw.Performed, obsoleteAt: pw.ObsoleteAt}
		if !pw.Performed {
			if st.owner, err = pw.Owner.node(); err != nil {
				return nil, err
			}
			for j, sw := range pw.Seen {
				s, err := sw.node()
				if err != nil {
					return nil, err
				}
				if j > 0 && compareNodes(st.seen[j-1], s) >= 0 {
					return nil, invalid("pruning seen set not in order")
				}
				st.seen = append(st.seen, s)
			}
		}
		if e.pruning == nil {
			e.pruning = make(map[cluster.UniqueAddress]pruningState, len(w.Pruning))
		}
		e.pruning[n] = st
	}
	for i, vw := range w.DeltaVersions {
		n, err := vw.Node.node()
		if err != nil {
			return nil, err
		}
		if i > 0 && compareNodes(prev, n) >= 0 {
			return nil, invalid("delta versions not in order")
		}
		if vw.Version == 0 {
			return nil, invalid("delta version 0")
		}
		prev = n
		if e.deltaVersions == nil {
			e.deltaVersions = make(map[cluster.UniqueAddress]uint64, len(w.DeltaVersions))
		}
		e.deltaVersions[n] = vw.Version
	}
	return e, nil
}

// marshalEnvelope encodes e (for the wire or for the durable store).
func marshalEnvelope(reg *serialization.Registry, e *envelope) ([]byte, error) {
	w, err := e.toWire(reg, true)
	if err != nil {
		return nil, err
	}
	_, b, err := reg.Marshal(&w)
	return b, err
}

// unmarshalEnvelope decodes and checks what marshalEnvelope wrote.
func unmarshalEnvelope(reg *serialization.Registry, b []byte) (*envelope, error) {
	v, err := reg.Unmarshal(envelopeManifest, b)
	if err != nil {
		return nil, err
	}
	return v.(*envelopeWire).fromWire(reg)
}

// digest returns the gossip digest of e: deletedDigest for a deleted key, else
// SHA-256 of its encoding without the delta versions (which differ between
// replicas holding the same value).
func (e *envelope) digest(reg *serialization.Registry) (Digest, error) {
	if e.deleted {
		return deletedDigest, nil
	}
	w, err := e.toWire(reg, false)
	if err != nil {
		return Digest{}, err
	}
	_, b, err := reg.Marshal(&w)
	if err != nil {
		return Digest{}, err
	}
	return sha256.Sum256(b), nil
}
