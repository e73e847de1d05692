package actor

import "time"

// timer is one keyed timer. Its message is delivered only while gen matches the current
// entry for its key, so a cancelled or replaced timer never delivers, even if its fire
// is already queued.
type timer struct {
	gen      uint64
	msg      any
	interval time.Duration // > 0 for periodic timers
	t        *time.Timer
}

func (c *cell) StartSingleTimer(key, msg any, d time.Duration) {
	c.startTimer(key, msg, d, 0)
}

func (c *cell) StartPeriodicTimer(key, msg any, interval time.Duration) {
	c.startTimer(key, msg, interval, interval)
}

func (c *cell) startTimer(key, msg any, d, interval time.Duration) {
	switch c.lifecycle() {
	case stateStopping, stateDead:
		return
	}
	if msg == nil {
		return
	}
	x := c.extras()
	c.CancelTimer(key)
	if x.timers == nil {
		x.timers = make(map[any]*timer)
	}
	x.timerGen++
	gen := x.timerGen
	fire := timerFire{key: key, gen: gen}
	tm := &timer{gen: gen, msg: msg, interval: interval}
	tm.t = time.AfterFunc(max(d, 0), func() { c.pushInternal(fire, Ref{}) })
	x.timers[key] = tm
}

func (c *cell) CancelTimer(key any) {
	x := c.x.Load()
	if x == nil {
		return
	}
	if tm, ok := x.timers[key]; ok {
		tm.t.Stop()
		delete(x.timers, key)
	}
}

func (c *cell) IsTimerActive(key any) bool {
	x := c.x.Load()
	if x == nil {
		return false
	}
	_, ok := x.timers[key]
	return ok
}

func (c *cell) CancelAllTimers() { c.cancelAllTimers() }

func (c *cell) cancelAllTimers() {
	x := c.x.Load()
	if x == nil {
		return
	}
	for _, tm := range x.timers {
		tm.t.Stop()
	}
	x.timers = nil
}

// timerFired returns the message of a current timer, re-arming periodic ones.
func (c *cell) timerFired(f timerFire) (any, bool) {
	x := c.x.Load()
	if x == nil {
		return nil, false
	}
	tm, ok := x.timers[f.key]
	if !ok || tm.gen != f.gen {
		return nil, false
	}
	if tm.interval > 0 {
		tm.t.Reset(tm.interval)
	} else {
		delete(x.timers, f.key)
	}
	return tm.msg, true
}

// receiveTimeout tracks Context.SetReceiveTimeout. One timer per actor checks, when it
// fires, whether the actor has really been idle for d; handling a message only records
// the time, which is cheaper than resetting a timer per message.
type receiveTimeout struct {
	d     time.Duration
	last  time.Time
	gen   uint64
	timer *time.Timer
}

func (rt *receiveTimeout) touch() { rt.last = time.Now() }

func (c *cell) SetReceiveTimeout(d time.Duration) {
	if d <= 0 {
		c.cancelReceiveTimeout()
		return
	}
	switch c.lifecycle() {
	case stateStopping, stateDead:
		return
	}
	rt := &c.extras().rt
	rt.d = d
	rt.touch()
	c.armReceiveTimeout(d)
}

func (c *cell) armReceiveTimeout(after time.Duration) {
	rt := &c.extras().rt
	if rt.timer != nil {
		rt.timer.Stop()
	}
	rt.gen++
	tick := receiveTimeoutTick{gen: rt.gen}
	rt.timer = time.AfterFunc(after, func() { c.pushInternal(tick, Ref{}) })
}

func (c *cell) CancelReceiveTimeout() { c.cancelReceiveTimeout() }

func (c *cell) cancelReceiveTimeout() {
	x := c.x.Load()
	if x == nil || x.rt.d == 0 {
		return
	}
	x.rt.d = 0
	x.rt.gen++
	if x.rt.timer != nil {
		x.rt.timer.Stop()
		x.rt.timer = nil
	}
}

// receiveTimeoutFired reports whether ReceiveTimeout is due now, and re-arms the timer.
func (c *cell) receiveTimeoutFired(t receiveTimeoutTick) bool {
	x := c.x.Load()
	if x == nil || x.rt.d == 0 || t.gen != x.rt.gen {
		return false
	}
	idle := time.Since(x.rt.last)
	if idle < x.rt.d {
		c.armReceiveTimeout(x.rt.d - idle)
		return false
	}
	x.rt.touch()
	c.armReceiveTimeout(x.rt.d)
	return true
}
