package persistence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

// A side operation is a SaveSnapshot, DeleteMessages or DeleteSnapshots request: it
// runs on a goroutine of its own and its reply goes to the entity. Normally the reply
// arrives as a message (opDone). When the entity stops or restarts first, the runner
// waits for the replies still due (each plug-in call is bounded by its call timeout)
// and gives them to the entity before Stopping, Restarting or Stopped, so that no
// reply is lost in a mailbox that is about to be discarded.
type sideOp struct {
	done chan struct{} // closed once result is set

	mu      sync.Mutex
	result  any  // the reply for the entity
	claimed bool // the runner took the reply without waiting for opDone
}

// opDone tells the runner that op has its reply.
type opDone struct {
	owner *runner
	op    *sideOp
}

// startOp runs work (a plug-in call) on a goroutine of its own; its result is the
// entity's reply.
func (r *runner) startOp(work func() any) {
	op := &sideOp{done: make(chan struct{})}
	r.ops = append(r.ops, op)
	self := r.self
	go func() {
		res := work()
		op.mu.Lock()
		op.result = res
		claimed := op.claimed
		op.mu.Unlock()
		close(op.done)
		if !claimed {
			_ = self.Tell(opDone{owner: r, op: op})
		}
	}()
}

// answer gives the entity a reply at once (a request that needed no plug-in call),
// through the same path as the others, so replies keep their order.
func (r *runner) answer(result any) {
	r.startOp(func() any { return result })
}

// onOpDone delivers op's reply, unless it was already delivered at a stop.
func (r *runner) onOpDone(ctx actor.Context, op *sideOp) {
	i := -1
	for k, o := range r.ops {
		if o == op {
			i = k
			break
		}
	}
	if i < 0 {
		return
	}
	if r.core.Recovering() {
		// Requested from Recover: the reply waits, as commands do, for recovery to end.
		if err := ctx.Stash(); err == nil {
			return
		}
	}
	r.ops = append(r.ops[:i], r.ops[i+1:]...)
	op.mu.Lock()
	res := op.result
	op.mu.Unlock()
	r.deliverResult(ctx, res)
}

// settleOps waits for the replies still due and delivers them, in request order,
// before the lifecycle message being handled.
func (r *runner) settleOps(ctx actor.Context) {
	for len(r.ops) > 0 {
		for _, op := range r.takeOps() {
			op.mu.Lock()
			op.claimed = true
			op.mu.Unlock()
			res, ok := r.await(op)
			if !ok {
				r.p.stats.resultsUndelivered.Add(1)
				r.log.Error("persistence: a snapshot or delete request did not finish in time; its reply is lost")
				continue
			}
			r.deliverResult(ctx, res)
		}
	}
}

// await waits for op's reply. Every plug-in call gives up at its call timeout, so the
// wait is bounded by the longer of the two; the margin only guards against a bug.
func (r *runner) await(op *sideOp) (any, bool) {
	limit := max(r.p.cfg.JournalBreaker.CallTimeout, r.p.cfg.SnapshotBreaker.CallTimeout) + 5*time.Second
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-op.done:
		op.mu.Lock()
		defer op.mu.Unlock()
		return op.result, true
	case <-timer.C:
		return nil, false
	}
}

// deliverResult gives a reply to the entity, or, when it cannot receive one any more
// (a failure stopped it, or it has handled Restarting or Stopped), to dead letters
// with a log line.
func (r *runner) deliverResult(ctx actor.Context, res any) {
	if r.live {
		r.deliver(ctx, res)
		return
	}
	r.p.stats.resultsUndelivered.Add(1)
	r.p.logDrop(r.log, "persistence: the entity can no longer receive this reply; it goes to dead letters",
		zap.String("type", fmt.Sprintf("%T", res)))
	_ = r.p.sys.DeadLetters().Send(res, r.self)
}

// errFailed refuses a snapshot or delete asked by an entity that a failure has
// stopped (from its Stopping or Stopped handler): its state may not match the journal,
// and after a sequence-number conflict the journal's history is another writer's.
var errFailed = fmt.Errorf("%w: a failure stopped the entity", ErrRejected)

// saveSnapshot stores snapshot at the last sequence number handled.
func (r *runner) saveSnapshot(snapshot any) {
	meta := SnapshotMetadata{PersistenceID: r.pid, SequenceNr: r.core.LastSequenceNr(), Timestamp: time.Now()}
	if r.failed {
		r.answer(SaveSnapshotFailure{Metadata: meta, Err: errFailed})
		return
	}
	if r.p.cfg.Snapshots == nil {
		r.answer(SaveSnapshotFailure{Metadata: meta, Err: ErrNoSnapshotStore})
		return
	}
	manifest, data, err := r.marshal(snapshot)
	if err != nil {
		r.answer(SaveSnapshotFailure{Metadata: meta, Err: fmt.Errorf("%w: %w", ErrRejected, err)})
		return
	}
	calls := r.p.calls
	r.startOp(func() any {
		if err := calls.saveSnapshot(context.Background(), Snapshot{Metadata: meta, Manifest: manifest, Payload: data}); err != nil {
			return SaveSnapshotFailure{Metadata: meta, Err: err}
		}
		return SaveSnapshotSuccess{Metadata: meta}
	})
}

// deleteMessages deletes the entity's events up to toSeq.
func (r *runner) deleteMessages(toSeq uint64) {
	if r.failed {
		r.answer(DeleteMessagesFailure{ToSequenceNr: toSeq, Err: errFailed})
		return
	}
	calls, pid := r.p.calls, r.pid
	r.startOp(func() any {
		if err := calls.deleteMessages(context.Background(), pid, toSeq); err != nil {
			return DeleteMessagesFailure{ToSequenceNr: toSeq, Err: err}
		}
		return DeleteMessagesSuccess{ToSequenceNr: toSeq}
	})
}

// deleteSnapshots deletes the entity's snapshots that crit selects.
func (r *runner) deleteSnapshots(crit SnapshotCriteria) {
	if r.failed {
		r.answer(DeleteSnapshotsFailure{Criteria: crit, Err: errFailed})
		return
	}
	if r.p.cfg.Snapshots == nil {
		r.answer(DeleteSnapshotsFailure{Criteria: crit, Err: ErrNoSnapshotStore})
		return
	}
	calls, pid := r.p.calls, r.pid
	r.startOp(func() any {
		if err := calls.deleteSnapshots(context.Background(), pid, crit); err != nil {
			return DeleteSnapshotsFailure{Criteria: crit, Err: err}
		}
		return DeleteSnapshotsSuccess{Criteria: crit}
	})
}
