package actor

import (
	"sync"
	"sync/atomic"

	"github.com/troupe-go/troupe/mailbox"
	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

// Actor states. Only the actor's own goroutine changes the state; other goroutines read
// it to route messages for a dead actor straight to dead letters.
const (
	stateNew        uint32 = iota // Started not yet delivered
	stateRunning                  // processing user messages
	stateSuspended                // failed; waiting for the parent's directive
	stateRestarting               // Restarting delivered; waiting for children to stop
	stateStopping                 // Stopping delivered; waiting for children to stop
	stateDead                     // Stopped delivered; everything else is a dead letter
)

// cell is a local actor: its mailbox, its instance and its bookkeeping. It is the
// process behind the actor's Ref and the Context handed to Receive. An idle cell holds
// no goroutine: the sender that moves sched from idle to running hands the cell to the
// dispatcher, whose worker drains the mailbox up to the throughput limit and gives the
// cell up once the mailbox is empty.
//
// Fields are kept few because memory per idle actor is a headline figure; everything
// that only some actors use lives in extras, allocated on first use.
type cell struct {
	// Written by the owner for every message. The fields after it, up to sched, are
	// read-mostly and fill exactly 64 bytes, so cur never shares a cache line with the
	// fields every sender reads (sched, state, the queues), whatever the allocation's
	// alignment: a sender's Tell does not stall on the owner's writes.
	cur envelope // the message being handled

	actor  Actor
	x      atomic.Pointer[extras] // written by the owner goroutine only; read elsewhere by Resolve
	props  *Props
	parent *cell
	name   string
	sys    *System

	sched atomic.Uint32 // schedIdle, schedRunning or schedNotified
	state atomic.Uint32
	userq mailbox.Queue[envelope]
	box   mailbox.Mailbox[envelope] // a non-default mailbox from Props; nil means userq
	sysq  mailbox.Queue[sysMsg]
	uid   uint64 // random, nonzero: tells incarnations at one path apart
}

// extras holds what only some actors need.
type extras struct {
	mu       sync.Mutex // guards children and closed against Resolve and System.Spawn
	children map[string]*cell
	closed   bool // no more children: the actor is stopping

	stats map[*cell]*supervision.RetryStats

	watchers   map[Ref]struct{}
	watching   map[Ref]struct{}
	termQueued map[Ref]struct{}

	behaviors []Behavior
	stash     []envelope
	unstashed []envelope

	timers   map[any]*timer
	timerGen uint64
	rt       receiveTimeout
}

func (c *cell) extras() *extras {
	if x := c.x.Load(); x != nil {
		return x
	}
	x := &extras{}
	c.x.Store(x)
	return x
}

// sendUser queues a user message and schedules the cell.
func (c *cell) sendUser(msg any, sender Ref) error {
	if c.state.Load() == stateDead {
		c.sys.deadLetter(Ref{c}, msg, sender, ErrRecipientStopped)
		return nil
	}
	if c.box == nil {
		c.userq.Push(envelope{msg: msg, sender: sender})
	} else {
		dropped, res := c.box.Offer(envelope{msg: msg, sender: sender})
		switch res {
		case mailbox.Rejected:
			return ErrMailboxFull
		case mailbox.DroppedNewest, mailbox.DroppedOldest:
			c.sys.deadLetter(Ref{c}, dropped.msg, dropped.sender, ErrMailboxFull)
		}
	}
	c.schedule()
	return nil
}

// pushInternal queues a runtime message on the user lane. It always uses the unbounded
// queue, so a full bounded mailbox never loses a timer or a Terminated.
func (c *cell) pushInternal(msg any, sender Ref) {
	c.userq.Push(envelope{msg: msg, sender: sender})
	c.schedule()
}

func (c *cell) sendSystem(m sysMsg) {
	c.sysq.Push(m)
	c.schedule()
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
func (c *cell) isDead() bool    { return c.state.Load() == stateDead }

func (c *cell) path() string {
	if c.parent == nil {
		return "/"
	}
	if c.parent.parent == nil {
		return "/" + c.name
	}
	return c.parent.path() + "/" + c.name
}

// Values of cell.sched.
const (
	schedIdle     uint32 = iota // no goroutine owns the cell
	schedRunning                // a goroutine owns the cell and is draining
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
func (c *cell) drain(budget int) bool {
	if c.state.Load() == stateNew {
		c.start()
	}
	for {
		if c.state.Load() == stateDead {
			c.drainDead()
			return false
		}
		if m, ok := c.sysq.Pop(); ok {
			c.handleSystem(m)
			continue
		}
		if c.state.Load() != stateRunning {
			c.cur = envelope{}
			return false // suspended or waiting for children: user messages wait
		}
		if budget == 0 {
			c.cur = envelope{}
			return true
		}
		env, ok := c.nextUser()
		if !ok {
			c.cur = envelope{} // let the last message be collected
			if c.userq.Rewind() {
				c.sys.jan.add(c.sys.disp, c)
			}
			return false
		}
		budget--
		c.invoke(env)
	}
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
	if c.box != nil {
		return c.box.Pop()
	}
	return envelope{}, false
}

// invoke handles one user-lane message.
func (c *cell) invoke(env envelope) {
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
		x := c.x.Load()
		if _, ok := x.termQueued[m.t.Ref]; !ok {
			return // unwatched after it was queued
		}
		delete(x.termQueued, m.t.Ref)
		env = envelope{msg: m.t, sender: m.t.Ref}
	default:
		if x := c.x.Load(); x != nil && x.rt.d > 0 {
			if _, quiet := env.msg.(NotInfluenceReceiveTimeout); !quiet {
				x.rt.touch()
			}
		}
	}
	c.cur = env
	if reason := c.receive(); reason != nil {
		c.cur = envelope{}
		c.fail(reason)
	}
	// c.cur is cleared when the drain ends, not after every message: one write less per
	// message on the owner's hottest cache line.
}

// receive runs the current behavior on c.cur and returns the panic, if any, as a
// failure reason.
func (c *cell) receive() (reason error) {
	defer func() {
		if r := recover(); r != nil {
			reason = panicReason(r)
		}
	}()
	if x := c.x.Load(); x != nil && len(x.behaviors) > 0 {
		x.behaviors[len(x.behaviors)-1](c)
		return nil
	}
	c.actor.Receive(c)
	return nil
}

// deliver hands a lifecycle message to the instance, returning a panic as an error.
func (c *cell) deliver(msg any) error {
	if c.actor == nil {
		return nil
	}
	c.cur = envelope{msg: msg}
	err := c.receive()
	c.cur = envelope{}
	return err
}

// drainDead routes what a dead actor still holds: user messages to dead letters, watch
// requests answered with Terminated at once.
func (c *cell) drainDead() {
	for {
		if m, ok := c.sysq.Pop(); ok {
			c.handleSystemDead(m)
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
