package actor

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/troupe-go/troupe/mailbox"
	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

// Actor states, the low bits of cell.state. Only the actor's own goroutine changes the
// state; other goroutines read it to route messages for a dead actor straight to dead
// letters.
const (
	stateNew        uint32 = iota // Started not yet delivered
	stateRunning                  // processing user messages
	stateSuspended                // failed; waiting for the parent's directive
	stateRestarting               // Restarting delivered; waiting for children to stop
	stateStopping                 // Stopping delivered; waiting for children to stop
	stateDead                     // Stopped delivered; everything else is a dead letter

	stateMask uint32 = 0xff
	// stateBox, set once at spawn, says the actor has a mailbox from its Props
	// (extras.box) instead of userq. It lives in state because a sender reads state
	// anyway: the default mailbox costs no extra load and no field.
	stateBox uint32 = 1 << 8
	// stateParentWatches says the parent watches the actor. Parents watch their
	// children more than anyone watches anything (a sharding shard watches each of its
	// entities): as a flag the watch costs no extras. Only the owner sets and clears it,
	// when it handles the parent's Watch and Unwatch.
	stateParentWatches uint32 = 1 << 9
	// stateWatchedByParent is the parent's side of the same watch: set when the parent
	// calls Watch, cleared by its Unwatch or when it takes the child's death notice, so
	// that a parent keeps no entry per watched child in extras.watching. Only the parent
	// sets and clears it; every write of state is therefore atomic (Or, And, CAS).
	stateWatchedByParent uint32 = 1 << 10
	// stateJanitor says the cell is one of the janitor's candidates (janitor.go): its
	// owner sets it when it offers the cell, the janitor clears it when it has shrunk
	// the cell's mailbox. While it is set, an owner whose mailbox is still grown has
	// nothing to offer, which spares it the janitor's lock on every drain.
	stateJanitor uint32 = 1 << 11
	// stateTermQueued is, for a child whose parent watches it, what extras.termQueued
	// is for other watched actors: the parent has queued the child's Terminated and
	// not delivered it yet (an Unwatch meanwhile clears it, and the Terminated is not
	// delivered). As a flag it costs the parent no map entry when many children stop
	// at once (a shard that hands off stops all its entities). Only the parent sets
	// and clears it.
	stateTermQueued uint32 = 1 << 12
)

// cell is a local actor: its mailbox, its instance and its bookkeeping. It is the
// process behind the actor's Ref and the Context handed to Receive. An idle cell holds
// no goroutine: the sender that moves sched from idle to running hands the cell to the
// dispatcher, whose worker drains the mailbox up to the throughput limit and gives the
// cell up once the mailbox is empty.
//
// Memory per idle actor is a headline figure, so a cell is exactly 128 bytes, the Go
// allocator's 128-byte size class; everything that only some actors use lives in
// extras, allocated on first use. Objects of that size class start at multiples of 128
// bytes, so the cell is two whole cache lines and the split below holds wherever it is
// allocated (TestCellLayout checks it):
//   - the first line is the owner's: cur is written for every message, the rest only
//     read by the goroutine that runs the actor;
//   - the second holds what senders read (state, sched, the queues, sys) and what the
//     owner reads alongside; senders write it only to queue a system message, to
//     schedule an idle actor, and when the user queue needs a new segment.
//
// A sender's Tell thus never stalls on the owner's writes, and the owner's write of
// cur never has to take the line back from senders.
type cell struct {
	// The owner's line.
	cur    envelope // the message being handled
	actor  Actor
	props  *Props
	parent *cell

	// The senders' line.
	sys   *System
	sched atomic.Uint32 // schedIdle, schedRunning or schedNotified
	state atomic.Uint32 // a state constant, plus stateBox
	userq mailbox.Queue[envelope]
	sysq  atomic.Pointer[sysNode] // pending system messages, newest first
	x     atomic.Pointer[extras]  // written by the owner goroutine only; read elsewhere by Resolve
	// id is unique in the system and drawn under the parent's lock, so siblings' ids
	// grow in spawn order. The actor's uid is derived from it (System.uidOf), and an
	// anonymous actor's name ("$" and the id in base 36).
	id   uint64
	name *string // nil for an anonymous actor
}

// extras holds what only some actors need.
type extras struct {
	mu       sync.Mutex // guards children and closed against Resolve and System.Spawn
	children children
	closed   bool // no more children: the actor is stopping

	box mailbox.Mailbox[envelope] // a mailbox from Props (state has stateBox); else userq

	stats map[*cell]*supervision.RetryStats

	watcher    Ref              // one watcher other than the parent, kept inline
	watchers   map[Ref]struct{} // the others (the parent's watch is stateParentWatches)
	watching   map[Ref]struct{}
	termQueued map[Ref]struct{}
	// cancelled counts, per watched actor, the Terminated notes still queued that an
	// Unwatch cancelled. A note's flag (termQueued, stateTermQueued) cannot tell them
	// apart from the note answering a later Watch, which sets the flag again; notes for
	// one actor leave the queue in the order they entered it, so the first ones taken
	// are the cancelled ones.
	cancelled map[Ref]int

	behaviors []Behavior
	stash     []envelope
	unstashed []envelope

	timers   map[any]*timer
	timerGen uint64
	rt       receiveTimeout

	trace current // the trace of the message being handled, while tracing is on
}

func (c *cell) extras() *extras {
	if x := c.x.Load(); x != nil {
		return x
	}
	x := &extras{}
	c.x.Store(x)
	return x
}

// lifecycle returns the actor's state constant.
func (c *cell) lifecycle() uint32 { return c.state.Load() & stateMask }

// setLifecycle changes the state constant, keeping the flags. Only the owner calls it;
// the parent may change stateWatchedByParent meanwhile, hence the loop.
func (c *cell) setLifecycle(s uint32) {
	for {
		old := c.state.Load()
		if c.state.CompareAndSwap(old, old&^stateMask|s) {
			return
		}
	}
}

// hasBox reports whether the actor's user messages go to extras.box.
func (c *cell) hasBox() bool { return c.state.Load()&stateBox != 0 }

// nameOf returns the actor's name: the one it was spawned with, or "$" and its id.
func (c *cell) nameOf() string {
	if c.name != nil {
		return *c.name
	}
	return anonymousName(c.id)
}

// anonymousName is the name of the anonymous actor with the given id. Names given by
// users cannot start with '$', so these never collide with them.
func anonymousName(id uint64) string {
	var buf [16]byte
	return string(strconv.AppendUint(append(buf[:0], '$'), id, 36))
}

// uid returns the actor's incarnation uid.
func (c *cell) uid() uint64 { return c.sys.uidOf(c.id) }

// sysNode is one pending system message.
type sysNode struct {
	next *sysNode
	m    sysMsg
}

// sendUser queues a user message and schedules the cell.
func (c *cell) sendUser(msg any, sender Ref) error {
	st := c.state.Load()
	if st&stateMask == stateDead {
		c.sys.deadLetter(Ref{c}, msg, sender, ErrRecipientStopped)
		return nil
	}
	if st&stateBox == 0 {
		c.userq.Push(envelope{msg: msg, sender: sender})
	} else {
		dropped, res := c.x.Load().box.Offer(envelope{msg: msg, sender: sender})
		switch res {
		case mailbox.Rejected:
			return ErrMailboxFull
		case mailbox.DroppedNewest, mailbox.DroppedOldest:
			c.sys.deadLetter(Ref{c}, dropped.msg, dropped.sender, ErrMailboxFull)
		}
	}
	// While a worker runs the actor and already knows more is coming (notified), a
	// sender has nothing to do: checked here, that costs no call.
	if c.sched.Load() != schedNotified {
		c.schedule()
	}
	return nil
}

// pushInternal queues a runtime message on the user lane. It always uses the unbounded
// queue, so a full bounded mailbox never loses a timer or a Terminated.
func (c *cell) pushInternal(msg any, sender Ref) {
	c.userq.Push(envelope{msg: msg, sender: sender})
	c.schedule()
}

// sendSystem queues a system message: a push onto a lock-free stack, which the owner
// takes whole and reverses, so that messages are handled in the order they were
// pushed. System messages are rare next to user messages, and this way an actor that
// never gets one spends 8 bytes on the queue and no segment.
func (c *cell) sendSystem(m sysMsg) {
	n := &sysNode{m: m}
	for {
		h := c.sysq.Load()
		n.next = h
		if c.sysq.CompareAndSwap(h, n) {
			break
		}
	}
	c.schedule()
}

// takeSystem removes every pending system message and returns them oldest first.
// Only the owner calls it.
func (c *cell) takeSystem() *sysNode {
	var prev *sysNode
	for n := c.sysq.Swap(nil); n != nil; {
		next := n.next
		n.next = prev
		prev, n = n, next
	}
	return prev
}

// schedule makes sure a goroutine will look at the mailbox after the caller's push.
func (c *cell) schedule() {
	if c.acquire() {
		c.sys.disp.submit(c)
	}
}

// acquire is called after a push. If no goroutine owns the cell, it takes ownership for
// the caller and returns true: the caller must then run the cell (or start a goroutine
// that does). If one is running, it marks the cell notified so that the owner drains
// again instead of going idle. The owner never inspects the queues after giving the
// cell up, so there is exactly one consumer at a time.
func (c *cell) acquire() bool {
	for {
		switch c.sched.Load() {
		case schedIdle:
			if c.sched.CompareAndSwap(schedIdle, schedRunning) {
				return true
			}
		case schedRunning:
			if c.sched.CompareAndSwap(schedRunning, schedNotified) {
				return false
			}
		default:
			return false
		}
	}
}

func (c *cell) system() *System { return c.sys }
func (c *cell) isDead() bool    { return c.lifecycle() == stateDead }

// path is computed on demand: a cell stores its name only if it was given one.
func (c *cell) path() string {
	if c.parent == nil {
		return "/"
	}
	if c.parent.parent == nil {
		return "/" + c.nameOf()
	}
	return c.parent.path() + "/" + c.nameOf()
}

// Values of cell.sched. Running is the zero value: a new cell belongs to the goroutine
// that created it, which submits it to have it started, and a spawn spends no store
// (an atomic exchange) on saying so.
const (
	schedRunning  uint32 = iota // a goroutine owns the cell and is draining
	schedIdle                   // no goroutine owns the cell
	schedNotified               // as running, and something was pushed since the last drain began
)

// runInline is called instead of submitting the cell to the dispatcher by a caller that
// acquired it and would otherwise only wait (a blocking Ask): it drains once, with a
// small budget, on the caller's goroutine, and submits the cell if work remains.
func (c *cell) runInline() {
	if c.drain(inlineBudget) || !c.release() {
		c.sys.disp.submit(c)
	}
}

// inlineBudget bounds the messages a blocking Ask handles on its own goroutine, so that
// its caller is not held up by other senders' work.
const inlineBudget = 16

// release gives the cell up after a drain that found nothing to do. It fails, keeping
// ownership, if something was pushed meanwhile.
func (c *cell) release() bool {
	if c.sched.CompareAndSwap(schedRunning, schedIdle) {
		return true
	}
	c.sched.Store(schedRunning)
	return false
}

// drain processes system messages first, then up to budget user messages. It reports
// whether it stopped because the budget was spent.
func (c *cell) drain(budget int) (spent bool) {
	if c.lifecycle() == stateNew {
		c.start()
		if c.idleAfterStart() {
			return false
		}
	}
	for {
		if c.sysq.Load() != nil {
			c.runSystem()
			continue
		}
		switch c.lifecycle() {
		case stateRunning:
		case stateDead:
			c.drainDead()
			return false
		default:
			c.cur = envelope{}
			return false // suspended or waiting for children: user messages wait
		}
		if budget == 0 {
			c.cur = envelope{}
			return true
		}
		n, empty, reason := c.runUser(budget)
		budget -= n
		switch {
		case reason != nil:
			c.cur = envelope{}
			c.fail(reason)
		case empty:
			c.cur = envelope{} // let the last message be collected
			if c.userq.Rewind() && c.state.Load()&stateJanitor == 0 {
				c.state.Or(stateJanitor)
				c.sys.jan.add(c.sys.disp, c)
			}
			return false
		}
	}
}

// idleAfterStart reports whether a drain that has just started the actor has nothing
// left to do: the actor runs, has no extras (so no mailbox from Props and nothing
// unstashed) and no system or user message waits. Most actors are spawned idle, and
// this spares their first drain runUser's deferred recover, which a CPU profile of
// spawn-1m put at about a sixth of what a worker spends starting an actor. c.cur is
// already clear: newInstance clears it.
func (c *cell) idleAfterStart() bool {
	return c.x.Load() == nil && c.sysq.Load() == nil && c.lifecycle() == stateRunning && c.userq.Empty()
}

// runSystem handles every pending system message, oldest first. Those that find the
// actor dead (it may die on one of them) are handled as a dead actor handles them.
func (c *cell) runSystem() {
	for n := c.takeSystem(); n != nil; n = n.next {
		if c.lifecycle() == stateDead {
			c.handleSystemDead(n.m)
		} else {
			c.handleSystem(n.m)
		}
	}
}

// runUser handles user messages until it has handled budget of them, the queue is
// empty (reported as empty), a system message is pending or the actor has left the
// running state. One deferred recover covers the whole run rather than one per message:
// a panic in Receive ends the run and is returned as the failure reason, with the
// failing message counted as handled.
func (c *cell) runUser(budget int) (handled int, empty bool, reason error) {
	defer func() {
		if r := recover(); r != nil {
			reason = panicReason(r)
		}
	}()
	for handled < budget {
		if c.sysq.Load() != nil || c.lifecycle() != stateRunning {
			return handled, false, nil
		}
		env, ok := c.nextUser()
		if !ok {
			return handled, true, nil
		}
		handled++
		c.invoke(env)
	}
	return handled, false, nil
}

// nextUser returns the next user message: unstashed messages first, then runtime
// messages, then the mailbox.
func (c *cell) nextUser() (envelope, bool) {
	if x := c.x.Load(); x != nil && len(x.unstashed) > 0 {
		env := x.unstashed[0]
		x.unstashed[0] = envelope{}
		x.unstashed = x.unstashed[1:]
		if len(x.unstashed) == 0 {
			x.unstashed = nil
		}
		return env, true
	}
	if env, ok := c.userq.Pop(); ok {
		return env, true
	}
	if c.hasBox() {
		return c.x.Load().box.Pop()
	}
	return envelope{}, false
}

// invoke handles one user-lane message. A panic in Receive propagates to runUser.
func (c *cell) invoke(env envelope) {
	var t *traced
	if m, ok := env.msg.(*traced); ok {
		t, env.msg = m, m.msg
	}
	switch m := env.msg.(type) {
	case PoisonPill:
		c.beginStop()
		return
	case Kill:
		c.fail(ErrKilled)
		return
	case timerFire:
		msg, ok := c.timerFired(m)
		if !ok {
			return
		}
		env = envelope{msg: msg}
	case receiveTimeoutTick:
		if !c.receiveTimeoutFired(m) {
			return
		}
		env = envelope{msg: ReceiveTimeout{}}
	case deathNote:
		if c.x.Load().takeCancelled(m.t.Ref) {
			return // unwatched after it was queued
		}
		if kid := c.childOf(m.t.Ref); kid != nil {
			if kid.state.And(^stateTermQueued)&stateTermQueued == 0 {
				return // unwatched after it was queued
			}
		} else {
			x := c.x.Load()
			if _, ok := x.termQueued[m.t.Ref]; !ok {
				return // unwatched after it was queued
			}
			delete(x.termQueued, m.t.Ref)
		}
		env = envelope{msg: m.t, sender: m.t.Ref}
	default:
		if x := c.x.Load(); x != nil && x.rt.d > 0 {
			if _, quiet := env.msg.(NotInfluenceReceiveTimeout); !quiet {
				x.rt.touch()
			}
		}
	}
	c.cur = env
	if t != nil || c.props.Trace && c.sys.tracer != nil && !isUntraced(env.msg) {
		c.receiveTraced(t)
	} else {
		c.receiveMaybeMeasured()
	}
	// c.cur is cleared when the drain ends, not after every message: one write less per
	// message.
}

// receiveMaybeMeasured is receive, measured when the actor's kind opts into metrics.
func (c *cell) receiveMaybeMeasured() {
	if c.props.MetricsKind == "" {
		c.receive()
	} else {
		c.receiveMeasured()
	}
}

// receive runs the current behavior on c.cur. It does not recover: its callers do.
func (c *cell) receive() {
	if x := c.x.Load(); x != nil && len(x.behaviors) > 0 {
		x.behaviors[len(x.behaviors)-1](c)
		return
	}
	c.actor.Receive(c)
}

// deliver hands a lifecycle message to the instance, returning a panic as an error.
func (c *cell) deliver(msg any) (err error) {
	if c.actor == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = panicReason(r)
		}
		c.cur = envelope{}
	}()
	c.cur = envelope{msg: msg}
	c.receive()
	return nil
}

// drainDead routes what a dead actor still holds: user messages to dead letters, watch
// requests answered with Terminated at once.
func (c *cell) drainDead() {
	for {
		if c.sysq.Load() != nil {
			for n := c.takeSystem(); n != nil; n = n.next {
				c.handleSystemDead(n.m)
			}
			continue
		}
		env, ok := c.nextUser()
		if !ok {
			c.userq.Shrink()
			return
		}
		switch env.msg.(type) {
		case timerFire, receiveTimeoutTick, deathNote:
			continue
		}
		c.sys.deadLetter(Ref{c}, env.msg, env.sender, ErrRecipientStopped)
	}
}

func (c *cell) handleSystemDead(m sysMsg) {
	switch m := m.(type) {
	case sysWatch:
		if m.watcher.p != nil && m.watcher != (Ref{c}) {
			m.watcher.p.sendSystem(sysDeath{ref: Ref{c}})
		}
	case sysFailed:
		// A child failed while we stopped; it is being stopped with us.
	}
}

func (c *cell) logger() *zap.Logger {
	return c.sys.log.With(zap.String("actor", c.path()))
}
