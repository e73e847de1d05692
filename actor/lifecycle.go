package actor

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

func panicReason(r any) error {
	return supervision.NewPanicError(r, debug.Stack())
}

func (c *cell) throughput() int {
	if c.props.Throughput > 0 {
		return c.props.Throughput
	}
	return c.sys.cfg.Throughput
}

// start creates the first instance and delivers Started. A failure to start (a panic in
// the producer or in the handling of Started) stops the actor: restarting would fail the
// same way.
func (c *cell) start() {
	c.setLifecycle(stateRunning)
	if err := c.newInstance(); err != nil {
		logError(c.logger(), "actor failed to start; stopping it", err, zap.Error(err))
		c.beginStop()
	}
}

// newInstance creates an instance from Props and delivers Started to it, returning a
// panic in the producer or in the handling of Started as an error. One deferred recover
// covers both, as deliver's does for the other lifecycle messages: every actor starts
// here once, and a recover of its own for the producer cost about a tenth of what a
// worker spends starting an idle actor.
func (c *cell) newInstance() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicReason(r)
		}
		c.cur = envelope{}
	}()
	c.actor = c.props.Producer()
	if c.actor == nil {
		return fmt.Errorf("%w: producer returned nil", ErrInvalidProps)
	}
	c.cur = envelope{msg: Started{}}
	c.receive()
	return nil
}

// fail suspends the actor and reports reason to the parent, which decides.
func (c *cell) fail(reason error) {
	if c.lifecycle() != stateRunning {
		return
	}
	c.setLifecycle(stateSuspended)
	if m := c.sys.metrics; m != nil {
		m.failures.Add(1)
	}
	if c.parent == nil {
		c.logger().Error("root guardian failed; stopping it", zap.Error(reason))
		c.beginStop()
		return
	}
	c.parent.sendSystem(sysFailed{child: c, reason: reason})
}

func (c *cell) handleSystem(m sysMsg) {
	switch m := m.(type) {
	case sysStop:
		c.beginStop()
	case sysWatch:
		c.addWatcher(m.watcher)
	case sysUnwatch:
		c.removeWatcher(m.watcher)
	case sysDeath:
		c.watchedDied(m)
	case sysFailed:
		c.childFailed(m.child, m.reason)
	case sysResume:
		if c.lifecycle() == stateSuspended {
			c.setLifecycle(stateRunning)
		}
	case sysRestart:
		c.restart(m.reason)
	case sysChildTerminated:
		c.childTerminated(m.child)
	}
}

// childFailed applies the supervision strategy to a failed child.
func (c *cell) childFailed(child *cell, reason error) {
	x := c.x.Load()
	if x == nil || !c.hasChild(child) {
		return // already gone
	}
	st := c.props.Strategy
	if ob, ok := c.actor.(failureObserver); ok {
		st = ob.supervisorStrategy()
	}
	if st == nil {
		st = supervision.DefaultStrategy()
	}
	if x.stats == nil {
		x.stats = make(map[*cell]*supervision.RetryStats)
	}
	stats := x.stats[child]
	if stats == nil {
		stats = &supervision.RetryStats{}
		x.stats[child] = stats
	}
	d := st.Decide(stats, reason, time.Now())
	log := c.sys.log.With(zap.String("actor", child.path()), zap.Error(reason))
	if d.DeciderErr != nil {
		log.Error("supervision decider failed; stopping the child", zap.NamedError("decider", d.DeciderErr))
	}
	directive := d.Directive
	if directive == supervision.Escalate && c.isGuardian() {
		directive = supervision.Stop
	}
	logFailure(log, reason, directive)
	if ob, ok := c.actor.(failureObserver); ok {
		ob.childFailed(Ref{child}, reason, directive)
	}
	targets := []*cell{child}
	if d.AllChildren && directive != supervision.Resume {
		targets = c.childCells()
	}
	for _, t := range targets {
		switch directive {
		case supervision.Resume:
			t.sendSystem(sysResume{})
		case supervision.Restart:
			t.sendSystem(sysRestart{reason: reason})
		case supervision.Stop:
			t.sendSystem(sysStop{})
		}
	}
	if directive == supervision.Escalate {
		c.fail(reason)
	}
}

func (c *cell) isGuardian() bool {
	return c.parent == nil || c.parent.parent == nil
}

// logFailure logs an actor's failure: a panic at error level with its stack, an
// error returned or raised otherwise (Kill, a failed start) at warn level.
func logFailure(log *zap.Logger, reason error, directive supervision.Directive) {
	if panicked(reason) {
		logError(log, "actor panicked", reason, zap.Stringer("directive", directive))
		return
	}
	log.Warn("actor failed", zap.Stringer("directive", directive))
}

// logError logs msg at error level with fields; when err is a panic, the entry
// carries the panic's stack as its stack trace (zap's encoders print it as they print
// any entry's stack).
func logError(log *zap.Logger, msg string, err error, fields ...zap.Field) {
	ce := log.Check(zap.ErrorLevel, msg)
	if ce == nil {
		return
	}
	var pe *supervision.PanicError
	if errors.As(err, &pe) {
		ce.Stack = string(pe.Stack)
	}
	ce.Write(fields...)
}

func panicked(err error) bool {
	var pe *supervision.PanicError
	return errors.As(err, &pe)
}

// restart replaces the instance: Restarting to the old one, children stopped, then a
// fresh instance from Props with Started. The mailbox is kept; the failing message is
// not redelivered.
func (c *cell) restart(reason error) {
	switch c.lifecycle() {
	case stateRunning, stateSuspended:
	default:
		return
	}
	c.setLifecycle(stateRestarting)
	if m := c.sys.metrics; m != nil {
		m.restarts.Add(1)
	}
	if err := c.deliver(Restarting{Reason: reason}); err != nil {
		logError(c.logger(), "panic while handling Restarting", err, zap.Error(err))
	}
	x := c.x.Load()
	if x != nil {
		c.cancelAllTimers()
		c.cancelReceiveTimeout()
		x.behaviors = nil
		c.unstashAll()
	}
	if c.stopChildren() == 0 {
		c.finishRestart()
	}
}

func (c *cell) finishRestart() {
	c.setLifecycle(stateRunning)
	c.actor = nil
	if err := c.newInstance(); err != nil {
		logError(c.logger(), "actor failed to restart; stopping it", err, zap.Error(err))
		c.beginStop()
	}
}

// beginStop starts stopping: Stopping to the instance, then the children; the actor
// finishes once the last child has stopped.
func (c *cell) beginStop() {
	switch c.lifecycle() {
	case stateStopping, stateDead:
		return
	}
	c.setLifecycle(stateStopping)
	if x := c.x.Load(); x != nil {
		c.cancelAllTimers()
		c.cancelReceiveTimeout()
	}
	if err := c.deliver(Stopping{}); err != nil {
		logError(c.logger(), "panic while handling Stopping", err, zap.Error(err))
	}
	if x := c.x.Load(); x != nil {
		x.mu.Lock()
		x.closed = true // System.Spawn and Resolve look at guardians from other goroutines
		x.mu.Unlock()
	}
	if c.stopChildren() == 0 {
		c.finishStop()
	}
}

// finishStop delivers Stopped, tells watchers and the parent, and routes what is left.
func (c *cell) finishStop() {
	if err := c.deliver(Stopped{}); err != nil {
		logError(c.logger(), "panic while handling Stopped", err, zap.Error(err))
	}
	c.actor = nil
	c.setLifecycle(stateDead)
	if m := c.sys.metrics; m != nil && !c.isGuardian() {
		m.stopped.Add(1)
	}
	self := Ref{c}
	// The parent hears first: system messages from one sender arrive in order, so a
	// parent that watches this child no longer lists it when Terminated arrives.
	if c.parent != nil {
		c.parent.sendSystem(sysChildTerminated{child: c})
		if c.state.Load()&stateParentWatches != 0 {
			c.parent.sendSystem(sysDeath{ref: self})
		}
	}
	if x := c.x.Load(); x != nil {
		if x.watcher.p != nil {
			x.watcher.p.sendSystem(sysDeath{ref: self})
		}
		for w := range x.watchers {
			w.p.sendSystem(sysDeath{ref: self})
		}
		for w := range x.watching {
			w.p.sendSystem(sysUnwatch{watcher: self})
		}
		x.watcher, x.watchers, x.watching, x.termQueued, x.cancelled = Ref{}, nil, nil, nil, nil
		for _, env := range x.stash {
			c.sys.deadLetter(self, env.msg, env.sender, ErrRecipientStopped)
		}
		x.stash, x.behaviors = nil, nil
	}
	c.sys.cellStopped(c)
}

// stopChildren asks every child to stop and returns how many there are.
func (c *cell) stopChildren() int {
	kids := c.childCells()
	for _, k := range kids {
		k.sendSystem(sysStop{})
	}
	return len(kids)
}

func (c *cell) childTerminated(child *cell) {
	x := c.x.Load()
	if x == nil {
		return
	}
	x.mu.Lock()
	x.children.remove(child)
	left := x.children.count()
	x.mu.Unlock()
	delete(x.stats, child)
	if left > 0 {
		return
	}
	switch c.lifecycle() {
	case stateStopping:
		c.finishStop()
	case stateRestarting:
		c.finishRestart()
	}
}

func (c *cell) hasChild(child *cell) bool {
	x := c.x.Load()
	if x == nil {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.children.has(child)
}

func (c *cell) childCells() []*cell {
	x := c.x.Load()
	if x == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.children.all()
}

// failureObserver is implemented by runtime actors (the backoff supervisor) that choose
// the strategy and watch the decisions about their children.
type failureObserver interface {
	supervisorStrategy() supervision.Strategy
	childFailed(child Ref, reason error, d supervision.Directive)
}
