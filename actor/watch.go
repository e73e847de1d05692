package actor

// Watch registers interest in ref's termination; see Context.Watch.
func (c *cell) Watch(ref Ref) {
	if ref.p == nil || ref == (Ref{c}) {
		return
	}
	if kid := c.childOf(ref); kid != nil {
		if kid.state.Or(stateWatchedByParent)&stateWatchedByParent == 0 {
			kid.sendSystem(sysWatch{watcher: Ref{c}})
		}
		return
	}
	x := c.extras()
	if _, ok := x.watching[ref]; ok {
		return
	}
	if x.watching == nil {
		x.watching = make(map[Ref]struct{})
	}
	x.watching[ref] = struct{}{}
	ref.p.sendSystem(sysWatch{watcher: Ref{c}})
}

// Unwatch cancels Watch; see Context.Unwatch.
func (c *cell) Unwatch(ref Ref) {
	x := c.x.Load()
	if x == nil || ref.p == nil {
		return
	}
	if _, queued := x.termQueued[ref]; queued {
		delete(x.termQueued, ref)
		x.cancel(ref)
	}
	if kid := c.childOf(ref); kid != nil {
		was := kid.state.And(^(stateWatchedByParent | stateTermQueued))
		if was&stateTermQueued != 0 {
			x.cancel(ref)
		}
		if was&stateWatchedByParent != 0 {
			kid.sendSystem(sysUnwatch{watcher: Ref{c}})
		}
		return
	}
	if _, ok := x.watching[ref]; !ok {
		return
	}
	delete(x.watching, ref)
	ref.p.sendSystem(sysUnwatch{watcher: Ref{c}})
}

// cancel notes that a Terminated for ref, queued and not yet delivered, is cancelled.
func (x *extras) cancel(ref Ref) {
	if x.cancelled == nil {
		x.cancelled = make(map[Ref]int)
	}
	x.cancelled[ref]++
}

// takeCancelled reports whether the Terminated for ref just taken from the queue is
// one that an Unwatch cancelled, and forgets it.
func (x *extras) takeCancelled(ref Ref) bool {
	n := x.cancelled[ref]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(x.cancelled, ref)
	default:
		x.cancelled[ref] = n - 1
	}
	return true
}

// addWatcher handles a watch request from another actor.
func (c *cell) addWatcher(w Ref) {
	if w.p == nil || w == (Ref{c}) {
		return
	}
	if c.parent != nil && w == (Ref{c.parent}) {
		c.state.Or(stateParentWatches)
		return
	}
	x := c.extras()
	if x.watcher == w {
		return
	}
	if _, ok := x.watchers[w]; ok {
		return
	}
	if x.watcher.p == nil {
		x.watcher = w
		return
	}
	if x.watchers == nil {
		x.watchers = make(map[Ref]struct{})
	}
	x.watchers[w] = struct{}{}
}

// removeWatcher forgets watcher w.
func (c *cell) removeWatcher(w Ref) {
	if c.parent != nil && w == (Ref{c.parent}) {
		c.state.And(^stateParentWatches)
		return
	}
	if x := c.x.Load(); x != nil {
		x.removeWatcher(w)
	}
}

// removeWatcher forgets watcher w (not the parent, whose watch is a state flag).
func (x *extras) removeWatcher(w Ref) {
	if x.watcher == w {
		x.watcher = Ref{}
		return
	}
	delete(x.watchers, w)
}

// watchedDied queues Terminated for a watched actor through the user lane, so it is
// ordered after messages already queued and respects suspension and stashing.
func (c *cell) watchedDied(m sysDeath) {
	x := c.x.Load()
	if x == nil {
		return
	}
	if kid := c.childOf(m.ref); kid != nil {
		// The first notice after a Watch counts. One that comes after Unwatch finds
		// the flag clear, and so does the second of two (an Unwatch and a new Watch
		// while the child was dying: the dead child answers that Watch too).
		if kid.state.And(^stateWatchedByParent)&stateWatchedByParent == 0 {
			return
		}
	} else {
		if _, ok := x.watching[m.ref]; !ok {
			return
		}
		delete(x.watching, m.ref)
	}
	switch c.lifecycle() {
	case stateStopping, stateDead:
		return
	}
	if kid := c.childOf(m.ref); kid != nil {
		kid.state.Or(stateTermQueued)
	} else {
		if x.termQueued == nil {
			x.termQueued = make(map[Ref]struct{})
		}
		x.termQueued[m.ref] = struct{}{}
	}
	c.pushInternal(deathNote{t: Terminated{Ref: m.ref, AddressTerminated: m.addressTerminated}}, m.ref)
}

// childOf returns ref's cell when ref is a child of c (running or not), else nil. The
// parent's watch of a child lives in the child's state (stateWatchedByParent) rather
// than in extras.watching.
func (c *cell) childOf(ref Ref) *cell {
	if kid, ok := ref.p.(*cell); ok && kid.parent == c {
		return kid
	}
	return nil
}
