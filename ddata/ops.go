package ddata

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
	"go.uber.org/zap"
)

// writeReplier is an update or delete request waiting for its outcome.
type writeReplier interface {
	finish(a *replicator, err error)
}

// readReplier is a read request waiting for its outcome.
type readReplier interface {
	// checkType reports a value of another type than the request's key.
	checkType(d ReplicatedData) error
	// finish answers with a copy of d (the replicator's own value), or err.
	finish(a *replicator, d ReplicatedData, err error)
}

// writeOp is a write with a consistency level other than local, in progress.
type writeOp struct {
	id    uint64
	key   string
	q     writeReplier
	agg   *writeAggregator
	full  *writeMsg  // the value, built on first use
	delta *deltasMsg // the change as a delta; nil: send the value
}

// readOp is a read with a consistency level other than local, in progress.
type readOp struct {
	id  uint64
	key string
	q   readReplier
	agg *readAggregator
	acc *envelope // the replies merged; nil while none had the key
}

// write completes an update or delete that has been applied locally: at once for
// WriteLocal (after the durable store, for a durable key), else through a
// writeAggregator.
func (a *replicator) write(key string, e *entry, level WriteConsistency, q writeReplier) {
	if level.IsLocal() {
		if e.durable {
			a.queueStore(key, e, storeWaiter{key: key, local: q})
			return
		}
		q.finish(a, nil)
		return
	}
	ordered := false
	if dd, ok := e.data.(DeltaData); ok {
		ordered = dd.NewDelta().Causal()
	}
	agg := newWriteAggregator(level, a.peers(), ordered, a.rng, e.durable, time.Now())
	a.nextID++
	op := &writeOp{id: a.nextID, key: key, q: q, agg: agg}
	a.writes[op.id] = op
	if e.durable {
		a.queueStore(key, e, storeWaiter{key: key, op: op.id})
	}
	if agg.Outcome() != writePending {
		a.finishWrite(op)
		return
	}
	a.flushDelta(key, e)
	op.delta = a.writeDelta(key, e, op.id)
	for _, n := range agg.Primary() {
		a.sendWrite(op, n)
	}
	a.ctx.StartSingleTimer(opTimer{op.id}, opTimer{op.id}, max(level.Timeout()/5, time.Millisecond))
}

// writeDelta returns the message carrying the write's change as a delta, or nil
// when the value must go whole: the last numbered change of the key, when the
// value holds nothing newer.
func (a *replicator) writeDelta(key string, e *entry, id uint64) *deltasMsg {
	if a.cfg.DisableDeltas || e.deleted {
		return nil
	}
	d, seq, ok := a.deltas.LastDelta(key)
	if !ok || seq != e.deltaVersions[a.self] {
		return nil
	}
	manifest, data, err := a.reg.Marshal(d)
	if err != nil {
		return nil
	}
	return &deltasMsg{From: a.selfWire(), ID: id, Reply: true,
		Deltas: []deltaWire{{Key: key, Manifest: manifest, Data: data, FromSeq: seq, ToSeq: seq}}}
}

// sendWrite sends the write to node n: the delta, or the value.
func (a *replicator) sendWrite(op *writeOp, n cluster.UniqueAddress) {
	if op.delta != nil {
		a.sendTo(n, op.delta)
		return
	}
	a.sendFullWrite(op, n)
}

func (a *replicator) sendFullWrite(op *writeOp, n cluster.UniqueAddress) {
	if op.full == nil {
		e := a.entries[op.key]
		a.flushDelta(op.key, e)
		w, err := e.toWire(a.reg, true)
		if err != nil {
			a.log.Error("ddata: cannot encode a value for a write", zap.String("key", op.key), zap.Error(err))
			if op.agg.Nack(n) != writePending {
				a.finishWrite(op)
			}
			return
		}
		a.checkSize(op.key, len(w.Data))
		op.full = &writeMsg{From: a.selfWire(), ID: op.id, Key: op.key, Env: w}
	}
	a.sendTo(n, op.full)
}

// checkSize counts and logs a value larger than MaxMessageSize.
func (a *replicator) checkSize(key string, n int) {
	if n > a.cfg.MaxMessageSize {
		a.h.stats.tooLarge.Add(1)
		a.drops.warn(a.log, "ddata: a value is larger than MaxMessageSize; the transport may refuse it",
			zap.String("key", key), zap.Int("bytes", n), zap.Int("max", a.cfg.MaxMessageSize))
	}
}

// finishWrite answers a write that has an outcome.
func (a *replicator) finishWrite(op *writeOp) {
	delete(a.writes, op.id)
	a.ctx.CancelTimer(opTimer{op.id})
	switch op.agg.Outcome() {
	case writeSucceeded:
		op.q.finish(a, nil)
	case writeStoreFailed:
		op.q.finish(a, fmt.Errorf("%w: key %q", ErrStoreFailed, op.key))
	case writeTooFew:
		op.q.finish(a, tooFewError(op.key, &op.agg.Fanout))
	default:
		op.q.finish(a, fmt.Errorf("%w: key %q: %d of %d replicas answered within %v",
			ErrTimeout, op.key, op.agg.Answered(), op.agg.Needed(), op.agg.Timeout()))
	}
}

// tooFewError is the error of a read or write whose level needs more replicas
// than there are nodes.
func tooFewError(key string, f *replication.Fanout[cluster.UniqueAddress]) error {
	return fmt.Errorf("%w: key %q: the level needs %d replicas and %d are known (this node included)",
		ErrNotEnoughReplicas, key, f.Needed(), f.Known())
}

// opTimeout handles a read's or write's timer: the secondary nodes at timeout/5,
// the failure at the timeout.
func (a *replicator) opTimeout(id uint64) {
	now := time.Now()
	if op := a.writes[id]; op != nil {
		secondary, outcome := op.agg.Tick(now)
		for _, n := range secondary {
			a.sendWrite(op, n)
		}
		if outcome != writePending {
			a.finishWrite(op)
			return
		}
		a.ctx.StartSingleTimer(opTimer{id}, opTimer{id}, max(op.agg.Deadline().Sub(now), time.Millisecond))
		return
	}
	if op := a.reads[id]; op != nil {
		secondary, outcome := op.agg.Tick(now)
		if len(secondary) > 0 {
			msg := &readMsg{From: a.selfWire(), ID: id, Key: op.key}
			for _, n := range secondary {
				a.sendTo(n, msg)
			}
		}
		if outcome != readPending {
			a.finishRead(op)
			return
		}
		a.ctx.StartSingleTimer(opTimer{id}, opTimer{id}, max(op.agg.Deadline().Sub(now), time.Millisecond))
	}
}

// read answers a read: from the local replica for ReadLocal, else through a
// readAggregator.
func (a *replicator) read(key string, level ReadConsistency, q readReplier) {
	if err := level.Validate(); err != nil {
		q.finish(a, nil, err)
		return
	}
	if e := a.entries[key]; e != nil && !e.deleted {
		if err := q.checkType(e.data); err != nil {
			q.finish(a, nil, err)
			return
		}
	}
	if level.IsLocal() {
		a.answerRead(key, q)
		return
	}
	agg := newReadAggregator(level, a.peers(), a.rng, time.Now())
	a.nextID++
	op := &readOp{id: a.nextID, key: key, q: q, agg: agg}
	if agg.Outcome() != readPending {
		a.finishRead(op)
		return
	}
	a.reads[op.id] = op
	msg := &readMsg{From: a.selfWire(), ID: op.id, Key: key}
	for _, n := range agg.Primary() {
		a.sendTo(n, msg)
	}
	a.ctx.StartSingleTimer(opTimer{op.id}, opTimer{op.id}, max(level.Timeout()/5, time.Millisecond))
}

// answerRead answers from the local replica.
func (a *replicator) answerRead(key string, q readReplier) {
	e := a.entries[key]
	switch {
	case e == nil:
		q.finish(a, nil, fmt.Errorf("%w: key %q", ErrNotFound, key))
	case e.deleted:
		q.finish(a, nil, fmt.Errorf("%w: key %q", ErrDeleted, key))
	default:
		if err := q.checkType(e.data); err != nil {
			q.finish(a, nil, err)
			return
		}
		q.finish(a, e.data, nil)
	}
}

// finishRead answers a read that has an outcome, after writing the merged replies
// into the local replica (read repair).
func (a *replicator) finishRead(op *readOp) {
	delete(a.reads, op.id)
	a.ctx.CancelTimer(opTimer{op.id})
	if op.agg.Outcome() == readTooFew {
		op.q.finish(a, nil, tooFewError(op.key, &op.agg.Fanout))
		return
	}
	if op.agg.Outcome() == readTimedOut {
		op.q.finish(a, nil, fmt.Errorf("%w: key %q: %d of %d replicas answered within %v",
			ErrTimeout, op.key, op.agg.Answered(), op.agg.Needed(), op.agg.Timeout()))
		return
	}
	if op.acc != nil {
		if _, err := a.mergeIncoming(op.key, op.acc); err != nil {
			op.q.finish(a, nil, err)
			return
		}
	}
	a.answerRead(op.key, op.q)
}

// receiveReadResult merges a replica's answer into a read in progress.
func (a *replicator) receiveReadResult(m *readResultMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, false)
	if !ok {
		return
	}
	op := a.reads[m.ID]
	if op == nil {
		return // answered already
	}
	if m.Found {
		env, err := m.Env.fromWire(a.reg)
		if err == nil && !env.deleted {
			err = op.q.checkType(env.data)
		}
		if err == nil {
			if op.acc == nil {
				op.acc = env
			} else {
				err = op.acc.merge(env, time.Now())
			}
		}
		if err != nil {
			a.invalid("a read reply", from, op.key, err)
			if op.agg.Fail(from) != readPending {
				a.finishRead(op)
			}
			return
		}
	}
	if op.agg.Reply(from) != readPending {
		a.finishRead(op)
	}
}

// receiveRead answers another replicator's read.
func (a *replicator) receiveRead(m *readMsg, sender actor.Ref) {
	if _, ok := a.checkSender(m.From, m, sender, false); !ok {
		return
	}
	resp := &readResultMsg{From: a.selfWire(), ID: m.ID}
	if e := a.entries[m.Key]; e != nil {
		a.flushDelta(m.Key, e)
		w, err := e.toWire(a.reg, true)
		if err != nil {
			a.log.Error("ddata: cannot encode a value for a read", zap.String("key", m.Key), zap.Error(err))
		} else {
			resp.Found, resp.Env = true, w
		}
	}
	a.send(sender, resp)
}

// receiveWrite merges another replicator's write and acknowledges it (after the
// durable store, for a durable key).
func (a *replicator) receiveWrite(m *writeMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, false)
	if !ok {
		return
	}
	env, err := m.Env.fromWire(a.reg)
	var e *entry
	if err == nil {
		e, err = a.mergeIncoming(m.Key, env)
	}
	if err != nil {
		a.invalid("a write", from, m.Key, err)
		a.send(sender, &writeReplyMsg{From: a.selfWire(), ID: m.ID, Kind: replyNack})
		return
	}
	if e.durable {
		a.queueStore(m.Key, e, storeWaiter{key: m.Key, remote: true, to: sender, id: m.ID})
		return
	}
	a.send(sender, &writeReplyMsg{From: a.selfWire(), ID: m.ID, Kind: replyAck})
}

// receiveWriteReply counts a replica's answer to a write in progress.
func (a *replicator) receiveWriteReply(m *writeReplyMsg, sender actor.Ref) {
	from, ok := a.checkSender(m.From, m, sender, false)
	if !ok {
		return
	}
	op := a.writes[m.ID]
	if op == nil {
		return // answered already
	}
	switch m.Kind {
	case replyAck:
		op.agg.Ack(from)
	case replyNack:
		op.agg.Nack(from)
	case replyDeltaNack:
		if op.agg.DeltaNack(from) {
			a.sendFullWrite(op, from)
		}
	}
	if op.agg.Outcome() != writePending {
		a.finishWrite(op)
	}
}

// delete deletes key locally and completes the deletion like a write.
func (a *replicator) delete(key string, level WriteConsistency, q writeReplier) {
	e := a.entries[key]
	if e == nil {
		e = &entry{durable: a.durable.match(key), hasSubs: a.subs.has(key)}
		a.entries[key] = e
	}
	e.envelope = envelope{deleted: true}
	a.deltas.Delete(key)
	a.changed(key, e)
	a.write(key, e, level, q)
}
