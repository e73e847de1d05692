package ddata

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
	"go.uber.org/zap"
)

// gossip sends one peer the digests of one chunk of the keys (anti-entropy); the
// core picks the peer (replication.GossipTarget) and the chunk. An idle cluster
// exchanges nothing else.
func (a *replicator) gossip() {
	var reachable, unreachable []cluster.UniqueAddress
	for n := range a.members {
		if a.unreachable[n] {
			unreachable = append(unreachable, n)
		} else {
			reachable = append(reachable, n)
		}
	}
	target, ok := replication.GossipTarget(reachable, unreachable, a.gossipRound, a.rng)
	if !ok {
		return
	}
	a.refreshDigests()
	st := replication.BuildStatus(a.digests, a.gossipRound, a.cfg.MaxDeltaElements)
	a.gossipRound++
	a.sendTo(target, a.statusMsg(st))
}

// statusMsg encodes a status.
func (a *replicator) statusMsg(st gossipStatus) *statusMsg {
	m := &statusMsg{From: a.selfWire(), Chunk: st.Chunk, TotChunks: st.TotChunks,
		Keys: make([]string, 0, len(st.Digests)), Digests: make([]byte, 0, 32*len(st.Digests))}
	for k, d := range st.Digests {
		m.Keys = append(m.Keys, k)
		m.Digests = append(m.Digests, d[:]...)
	}
	return m
}

// receiveStatus answers a peer's digests: the values that differ or that the peer
// lacks, and a request for the keys this node lacks.
func (a *replicator) receiveStatus(m *statusMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, true)
	if !ok {
		return
	}
	st := gossipStatus{Chunk: m.Chunk, TotChunks: m.TotChunks, Digests: make(map[string]Digest, len(m.Keys))}
	if len(m.Digests) != 32*len(m.Keys) || !st.Valid() {
		a.invalid("a gossip status", from, "", errBadStatus)
		return
	}
	for i, k := range m.Keys {
		st.Digests[k] = Digest(m.Digests[32*i : 32*i+32])
	}
	a.refreshDigests()
	r := replication.CompareStatus(a.digests, st, notFoundDigest, a.cfg.MaxDeltaElements)
	if len(r.Send) > 0 {
		a.sendValues(from, sender, r.Send, r.SendBack)
	}
	if len(r.Request) > 0 {
		a.send(sender, a.statusMsg(replication.RequestStatus(a.digests, r.Request, st, notFoundDigest)))
	}
}

// sendValues sends the full values of keys to a peer, in messages of at most
// MaxMessageSize bytes of values.
func (a *replicator) sendValues(to cluster.UniqueAddress, ref actor.Ref, keys []string, sendBack bool) {
	var batch []keyedEnvelope
	size := 0
	flush := func() {
		if len(batch) > 0 {
			a.send(ref, &gossipMsg{From: a.selfWire(), SendBack: sendBack, Entries: batch})
			batch, size = nil, 0
		}
	}
	for _, k := range keys {
		e := a.entries[k]
		if e == nil {
			continue
		}
		a.flushDelta(k, e)
		w, err := e.toWire(a.reg, true)
		if err != nil {
			a.drops.warn(a.log, "ddata: cannot encode a value for gossip", zap.String("key", k), zap.Stringer("to", to), zap.Error(err))
			continue
		}
		n := len(w.Data) + len(k) + 64
		a.checkSize(k, n)
		if size+n > a.cfg.MaxMessageSize {
			flush()
		}
		batch = append(batch, keyedEnvelope{Key: k, Env: w})
		size += n
		if a.h.metrics != nil {
			a.h.gauges.gossipBytes.Add(uint64(len(w.Data) + len(k)))
		}
	}
	flush()
}

// receiveGossip merges a peer's values, and sends back this node's values of the
// keys that still differ when the peer asked for them.
func (a *replicator) receiveGossip(m *gossipMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, true)
	if !ok {
		return
	}
	var back []string
	for _, ke := range m.Entries {
		env, err := ke.Env.fromWire(a.reg)
		var e *entry
		if err == nil {
			e, err = a.mergeIncoming(ke.Key, env)
		}
		if err != nil {
			a.invalid("a gossiped value", from, ke.Key, err)
			continue
		}
		if m.SendBack {
			if theirs, err := env.digest(a.reg); err == nil && theirs != a.digestOf(ke.Key, e) {
				back = append(back, ke.Key)
			}
		}
	}
	if len(back) > 0 {
		a.sendValues(from, sender, back, false)
	}
}

// receiveFullRequest answers a peer that missed deltas with the full values.
func (a *replicator) receiveFullRequest(m *fullRequestMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, true)
	if !ok {
		return
	}
	keys := m.Keys[:min(len(m.Keys), a.cfg.MaxDeltaElements)]
	a.sendValues(from, sender, keys, false)
}

// propagateDeltas takes the pending deltas of the keys changed since the last
// tick and sends them to this tick's nodes (round-robin).
func (a *replicator) propagateDeltas() {
	for _, key := range a.dirty {
		if e := a.entries[key]; e != nil {
			a.flushDelta(key, e)
		}
	}
	a.dirty = a.dirty[:0]
	sends := a.deltas.Collect()
	if len(sends) == 0 {
		return
	}
	type rangeKey struct {
		key      string
		from, to uint64
	}
	encoded := make(map[rangeKey]deltaWire)
	for node, list := range sends {
		ref, ok := a.refOf(node)
		if !ok {
			continue
		}
		var batch []deltaWire
		size := 0
		for _, ds := range list {
			rk := rangeKey{ds.Key, ds.FromSeq, ds.ToSeq}
			dw, ok := encoded[rk]
			if !ok {
				dw = deltaWire{Key: ds.Key, FromSeq: ds.FromSeq, ToSeq: ds.ToSeq}
				if !ds.Full {
					if m, data, err := a.reg.Marshal(ds.Delta); err == nil {
						dw.Manifest, dw.Data = m, data
					} else {
						a.drops.warn(a.log, "ddata: cannot encode a delta; the value goes whole", zap.String("key", ds.Key), zap.Error(err))
					}
				}
				encoded[rk] = dw
			}
			n := len(dw.Data) + len(dw.Key) + 32
			if size+n > a.cfg.MaxMessageSize && len(batch) > 0 {
				a.send(ref, &deltasMsg{From: a.selfWire(), Deltas: batch})
				batch, size = nil, 0
			}
			batch = append(batch, dw)
			size += n
			if a.h.metrics != nil {
				a.h.gauges.gossipBytes.Add(uint64(len(dw.Data) + len(dw.Key)))
			}
		}
		if len(batch) > 0 {
			a.send(ref, &deltasMsg{From: a.selfWire(), Deltas: batch})
		}
	}
}

// receiveDeltas applies a peer's deltas that continue what this node holds, and
// asks for the full values of the keys where it finds a gap. A delta that comes
// with a write (Reply) is acknowledged: after the durable store for a durable
// key, or with a DeltaNack when the full value is needed.
func (a *replicator) receiveDeltas(m *deltasMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, !m.Reply)
	if !ok {
		return
	}
	var needFull []string
	failed := false
	var stored *entry
	var storedKey string
	for _, dw := range m.Deltas {
		var d Delta
		if dw.Manifest != "" {
			v, err := a.reg.Unmarshal(dw.Manifest, dw.Data)
			if err == nil {
				var ok bool
				if d, ok = v.(Delta); !ok {
					err = invalid("%q is not a delta type", dw.Manifest)
				}
			}
			if err != nil {
				a.invalid("a delta", from, dw.Key, err)
				failed = true
				continue
			}
		}
		if dw.FromSeq == 0 || dw.ToSeq < dw.FromSeq {
			a.invalid("a delta", from, dw.Key, invalid("sequence range %d..%d", dw.FromSeq, dw.ToSeq))
			failed = true
			continue
		}
		e := a.entries[dw.Key]
		var env *envelope
		if e != nil {
			env = &e.envelope
		}
		switch checkDelta(env, from, d, dw.FromSeq, dw.ToSeq) {
		case replication.DeltaNeedFull:
			needFull = append(needFull, dw.Key)
			continue
		case replication.DeltaSeen:
			continue
		}
		if e == nil {
			ne, err := applyDelta(nil, from, d, dw.ToSeq)
			if err != nil {
				a.invalid("a delta", from, dw.Key, err)
				failed = true
				continue
			}
			e = &entry{envelope: *ne, durable: a.durable.match(dw.Key), hasSubs: a.subs.has(dw.Key)}
			a.entries[dw.Key] = e
		} else if _, err := applyDelta(env, from, d, dw.ToSeq); err != nil {
			a.invalid("a delta", from, dw.Key, err)
			failed = true
			continue
		}
		a.changed(dw.Key, e)
		if e.durable {
			stored, storedKey = e, dw.Key
		}
	}
	if !m.Reply {
		if len(needFull) > 0 {
			a.send(sender, &fullRequestMsg{From: a.selfWire(), Keys: needFull})
		}
		return
	}
	reply := &writeReplyMsg{From: a.selfWire(), ID: m.ID, Kind: replyAck}
	switch {
	case failed:
		reply.Kind = replyNack
	case len(needFull) > 0:
		reply.Kind = replyDeltaNack
	case stored != nil:
		a.queueStore(storedKey, stored, storeWaiter{key: storedKey, remote: true, to: sender, id: m.ID})
		return
	}
	a.send(sender, reply)
}

// prune runs the pruning of removed nodes' data (see pruner).
func (a *replicator) prune() {
	members := make([]cluster.UniqueAddress, 0, len(a.members)+1)
	members = append(members, a.self)
	for n := range a.members {
		members = append(members, n)
	}
	envs := make(map[string]*envelope, len(a.entries))
	for k, e := range a.entries {
		envs[k] = &e.envelope
	}
	m := pruningMembers{leader: a.isLeader(), members: members, allReachable: len(a.unreachable) == 0}
	for _, key := range a.pruner.tick(envs, m, time.Now()) {
		// A pruned value has state no delta describes (and, for sets, new dots of
		// this node): it travels whole.
		a.localChanged(key, a.entries[key], true)
	}
}

var errBadStatus = invalid("malformed gossip status")
