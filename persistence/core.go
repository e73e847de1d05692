package persistence

import (
	"errors"
	"fmt"
	"iter"
	"slices"
)

// entityCore is the protocol of one event-sourced entity, with no goroutine, no
// clock and no I/O: the runner (the actor around it) tells it what happened (a
// command arrived, the entity persisted, a journal call answered, an event was
// replayed) and does what it decides (handle or stash the command, submit a journal
// call, run a handler with a sequence number, unstash, stop). A simulator can drive it
// the same way.
//
// H is what the runner needs to run a handler (the event, the function, the sender of
// the command); the core only keeps it in order.
//
// The rules it keeps:
//   - Sequence numbers are assigned when an entity persists, consecutively from the
//     highest one recovered. The numbers of writes the journal rejected are taken
//     again when those writes end their call (nothing of the entity is stored above
//     them: its later calls are not made yet): the events persisted since move down
//     to fill them (see reclaim). Otherwise they are used up, as in Akka, and the
//     history has a gap.
//   - A rejection with ErrSequenceConflict is no rejection: another writer has used
//     the number (two incarnations of the entity), so this one's state lacks that
//     writer's events, and the entity stops when the conflict's turn comes.
//   - LastSequenceNr is the number of the last event whose handler has run or is
//     running (or that was replayed), so a handler sees its own event's number and a
//     snapshot taken anywhere covers exactly the events handled so far.
//   - The events persisted while handling one message form one journal call; one call
//     is in flight at a time, and the calls persisted meanwhile are merged into the
//     next one, so events are stored and handlers run in order.
//   - Commands are stashed while recovering and while a stashing persist (or a
//     deferred call issued behind one) has not run its handler; they are unstashed
//     once none is left. A deferred call runs once every invocation before it has.
//   - A journal call that fails as a whole stops the entity (its state may not match
//     its journal), and so does a write that conflicts with another writer's; a write
//     the journal rejects otherwise is reported to the entity instead of running its
//     handler, and the entity keeps running.
type entityCore[H any] struct {
	pid   string
	state coreState

	lastSeq uint64 // LastSequenceNr
	nextSeq uint64 // the highest sequence number assigned

	batch    []AtomicWrite // persisted since the last flush
	queued   []AtomicWrite // flushed while a call was in flight: the next call
	inFlight []AtomicWrite // the journal call in flight
	spare    []AtomicWrite // the slice of the last call answered, for the next one
	callID   uint64        // the id of the call in flight, or of the last one

	pending  []invocation[H] // in order; pending[head:] are waiting
	head     int
	stashing int  // waiting invocations that hold commands back
	stashed  bool // commands were stashed since the last unstash
}

type coreState uint8

const (
	coreRecovering coreState = iota
	coreRunning
	coreStopped
)

// invocation is a persist handler waiting for its event's write, or a deferred call.
type invocation[H any] struct {
	seq      uint64 // 0 for a deferred call
	deferred bool
	stashing bool
	written  bool  // the event's write has been answered
	rejected error // the journal's rejection of the event's write
	freed    bool  // rejected, and its number taken by a later event (see reclaim)
	h        H
}

// commandAction says what the runner does with a command.
type commandAction uint8

const (
	// handleCommand: give it to the entity now, then flush.
	handleCommand commandAction = iota
	// stashCommand: stash it; the core will say when to unstash.
	stashCommand
	// dropCommand: the entity has stopped; the command goes to dead letters (the
	// runner stashes it, and the actor routes its stash to dead letters when it stops).
	dropCommand
)

// stepKind says what the runner does with a step.
type stepKind uint8

const (
	// runHandler: run the persist handler of the step's event.
	runHandler stepKind = iota
	// reportRejected: give the entity PersistRejected for the step's event.
	reportRejected
	// runDeferred: run the deferred call.
	runDeferred
	// stopConflict: the step's event conflicts with another writer's (its err wraps
	// ErrSequenceConflict); the core has stopped, and the runner stops the entity.
	// The step's invocation has not run: Unrun still yields it.
	stopConflict
)

// step is one thing to run, in order, once its turn has come.
type step[H any] struct {
	kind stepKind
	seq  uint64 // the event's sequence number (and LastSequenceNr while it runs)
	err  error  // the rejection, for reportRejected and stopConflict
	h    H
}

// call is a journal call the runner must submit.
type call struct {
	id     uint64
	writes []AtomicWrite
}

// errNotRecovered rejects a persist made before recovery has completed.
var errNotRecovered = fmt.Errorf("%w: cannot persist before recovery has completed", ErrRejected)

// errStopped rejects a persist made after the entity stopped.
var errStopped = fmt.Errorf("%w: the entity has stopped", ErrRejected)

func newEntityCore[H any](pid string) *entityCore[H] {
	return &entityCore[H]{pid: pid}
}

// LastSequenceNr is what the entity's LastSequenceNr reports.
func (c *entityCore[H]) LastSequenceNr() uint64 { return c.lastSeq }

// Recovering reports whether recovery is under way.
func (c *entityCore[H]) Recovering() bool { return c.state == coreRecovering }

// Stopped reports whether the core has decided the entity stops.
func (c *entityCore[H]) Stopped() bool { return c.state == coreStopped }

// SnapshotOffered records that recovery starts from a snapshot taken at seq.
func (c *entityCore[H]) SnapshotOffered(seq uint64) {
	if c.state == coreRecovering {
		c.lastSeq = seq
	}
}

// Replayed records that the event seq was replayed.
func (c *entityCore[H]) Replayed(seq uint64) {
	if c.state == coreRecovering {
		c.lastSeq = seq
	}
}

// Recovered ends recovery: new events follow the highest sequence number the journal
// ever held (which survives deletes) or the last replayed, whichever is higher. It
// reports whether the runner must unstash.
func (c *entityCore[H]) Recovered(highest uint64) (unstash bool) {
	if c.state != coreRecovering {
		return false
	}
	c.state = coreRunning
	c.lastSeq = max(c.lastSeq, highest)
	c.nextSeq = c.lastSeq
	return c.takeUnstash()
}

// Stop records that the entity stops (a failed recovery, a failure of the runner);
// later commands are dropped and later persists rejected.
func (c *entityCore[H]) Stop() { c.state = coreStopped }

// Command decides what happens to a command that has just arrived.
func (c *entityCore[H]) Command() commandAction {
	switch {
	case c.state == coreStopped:
		return dropCommand
	case c.state == coreRecovering || c.stashing > 0:
		c.stashed = true
		return stashCommand
	}
	return handleCommand
}

// Persist records events (records carrying their serialised payloads) to be written
// in one atomic write, with one invocation each (hs[i] for records[i]). It assigns
// their persistence id and sequence numbers. Nothing is recorded when it fails.
func (c *entityCore[H]) Persist(records []Record, hs []H, stashing bool) error {
	switch {
	case c.state == coreRecovering:
		return errNotRecovered
	case c.state == coreStopped:
		return errStopped
	case len(records) != len(hs):
		return fmt.Errorf("persistence: %d records with %d handlers", len(records), len(hs))
	case len(records) == 0:
		return nil
	}
	for i := range records {
		c.nextSeq++
		records[i].PersistenceID, records[i].SequenceNr = c.pid, c.nextSeq
		c.pending = append(c.pending, invocation[H]{seq: c.nextSeq, stashing: stashing, h: hs[i]})
	}
	if stashing {
		c.stashing += len(records)
	}
	c.batch = append(c.batch, AtomicWrite{PersistenceID: c.pid, Events: records})
	return nil
}

// Defer records a deferred call. It reports runNow when nothing is waiting, in which
// case the runner runs it at once and the core keeps nothing.
func (c *entityCore[H]) Defer(h H) (runNow bool) {
	if c.head == len(c.pending) {
		return true
	}
	c.pending = append(c.pending, invocation[H]{deferred: true, stashing: true, h: h})
	c.stashing++
	return false
}

// Flush ends the persisting of one message (a command, or a round of handlers): what
// was persisted joins the next journal call. It returns the call to submit when none
// is in flight.
func (c *entityCore[H]) Flush() (call, bool) {
	if len(c.batch) > 0 {
		if c.queued == nil {
			c.queued, c.spare = c.spare, nil
		}
		c.queued = append(c.queued, c.batch...)
		clear(c.batch)
		c.batch = c.batch[:0]
	}
	if c.inFlight != nil || len(c.queued) == 0 || c.state == coreStopped {
		return call{}, false
	}
	c.inFlight, c.queued = c.queued, nil
	c.callID++
	return call{id: c.callID, writes: c.inFlight}, true
}

// Written records the answer to the journal call id: a failure of the call as a whole
// (err), or one result per atomic write. It returns the error that stops the entity,
// if any. The steps it made ready are taken with Next.
func (c *entityCore[H]) Written(id uint64, results []error, err error) error {
	if c.inFlight == nil || id != c.callID || c.state == coreStopped {
		return nil // an answer for a call this core no longer waits for
	}
	writes := c.inFlight
	c.inFlight = nil
	if err == nil && len(results) != len(writes) {
		err = errShortResults
	}
	if err != nil {
		c.state = coreStopped
		return err
	}
	i := c.head
	for w, aw := range writes {
		for _, rec := range aw.Events {
			for i < len(c.pending) && (c.pending[i].deferred || c.pending[i].written) {
				i++
			}
			if i == len(c.pending) || c.pending[i].seq != rec.SequenceNr {
				c.state = coreStopped
				return fmt.Errorf("persistence: internal error: %q: the answer for event %d does not match the invocations waiting", c.pid, rec.SequenceNr)
			}
			c.pending[i].written, c.pending[i].rejected = true, results[w]
			i++
		}
	}
	c.reclaim(writes, results)
	clear(writes) // the journal is done with them: the next call reuses the slice
	c.spare = writes[:0]
	return nil
}

// reclaim frees the sequence numbers of the writes that end the call just answered
// when the journal rejected them (for what they are, not as a conflict): a rejected
// write stored nothing, and nothing of the entity is stored above it, since its later
// events wait for the next call. The events persisted since move down to take the
// numbers, so the entity's history has no gap. A gap is a number no one holds: a
// stale incarnation of the entity (on another node after a split brain) that writes
// it meets no conflict, and this entity's next write lands above the stale one's
// event, as if its state held it. Taking the number again makes that next write
// conflict instead. Rejected writes followed by a stored one in the same call leave
// their numbers used up: the journal holds the number above them.
func (c *entityCore[H]) reclaim(writes []AtomicWrite, results []error) {
	k := len(writes)
	for k > 0 && results[k-1] != nil {
		if errors.Is(results[k-1], ErrSequenceConflict) {
			return // the entity stops at the conflict's turn
		}
		k--
	}
	if k == len(writes) {
		return
	}
	last := writes[len(writes)-1].Events
	from, to := writes[k].Events[0].SequenceNr, last[len(last)-1].SequenceNr
	n := to - from + 1
	for i := c.head; i < len(c.pending); i++ {
		inv := &c.pending[i]
		switch {
		case inv.deferred || inv.seq < from:
		case inv.seq <= to:
			inv.freed = true
		default: // persisted since, not written yet
			inv.seq -= n
		}
	}
	for _, ws := range [][]AtomicWrite{c.queued, c.batch} {
		for _, w := range ws {
			for i := range w.Events {
				w.Events[i].SequenceNr -= n
			}
		}
	}
	c.nextSeq -= n
}

// Next returns the next step whose turn has come: the handler (or rejection) of an
// event whose write was answered, or a deferred call with nothing before it. While
// the step runs, LastSequenceNr is its event's number (or, for a deferred call, that
// of the last event handled).
func (c *entityCore[H]) Next() (step[H], bool) {
	if c.head == len(c.pending) || c.state == coreStopped {
		return step[H]{}, false
	}
	inv := &c.pending[c.head]
	if !inv.deferred && !inv.written {
		return step[H]{}, false
	}
	st := step[H]{h: inv.h, seq: inv.seq}
	if inv.rejected != nil && errors.Is(inv.rejected, ErrSequenceConflict) {
		// LastSequenceNr stays: the number is the other writer's.
		c.state = coreStopped
		st.kind, st.err = stopConflict, inv.rejected
		return st, true
	}
	switch {
	case inv.deferred:
		st.kind, st.seq = runDeferred, c.lastSeq
	case inv.rejected != nil:
		st.kind, st.err = reportRejected, inv.rejected
		if !inv.freed {
			c.lastSeq = inv.seq // the number is used up, as Akka does
		}
	default:
		st.kind = runHandler
		c.lastSeq = inv.seq
	}
	if inv.stashing {
		c.stashing--
	}
	*inv = invocation[H]{}
	c.head++
	if c.head == len(c.pending) {
		c.pending, c.head = c.pending[:0], 0
	} else if c.head >= 64 && c.head*2 >= len(c.pending) {
		n := copy(c.pending, c.pending[c.head:])
		clear(c.pending[n:])
		c.pending, c.head = c.pending[:n], 0
	}
	return st, true
}

// Settle is called once the ready steps have run: it reports whether the runner must
// unstash (no invocation holds commands back any more and some were stashed).
func (c *entityCore[H]) Settle() (unstash bool) {
	if c.stashing > 0 || c.state != coreRunning {
		return false
	}
	return c.takeUnstash()
}

func (c *entityCore[H]) takeUnstash() bool {
	u := c.stashed
	c.stashed = false
	return u
}

// Waiting returns how many persisted events have not run their handlers yet (their
// writes unflushed, in flight or answered), for the runner to report when the entity
// stops with work left.
func (c *entityCore[H]) Waiting() int {
	n := 0
	for _, inv := range c.pending[c.head:] {
		if !inv.deferred {
			n++
		}
	}
	return n
}

// Unrun yields, in order, what has not run: the invocations of persisted events whose
// handlers have not run (their writes unflushed, in flight or answered) and the
// deferred calls waiting, so that the runner can answer their senders when the entity
// stops after a failure.
func (c *entityCore[H]) Unrun() iter.Seq[H] {
	return func(yield func(H) bool) {
		for _, inv := range c.pending[c.head:] {
			if !yield(inv.h) {
				return
			}
		}
	}
}

// InFlight reports whether a journal call is in flight.
func (c *entityCore[H]) InFlight() bool { return c.inFlight != nil }

// pendingSeqs lists the sequence numbers waiting, for tests.
func (c *entityCore[H]) pendingSeqs() []uint64 {
	var out []uint64
	for _, inv := range c.pending[c.head:] {
		out = append(out, inv.seq)
	}
	return slices.Clip(out)
}
