package actor

// Watch registers interest in ref's termination; see Context.Watch.
func (c *cell) Watch(ref Ref) {
	if ref.p == nil || ref == (Ref{c}) {
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
	delete(x.termQueued, ref)
	if _, ok := x.watching[ref]; !ok {
		return
	}
	delete(x.watching, ref)
	ref.p.sendSystem(sysUnwatch{watcher: Ref{c}})
}

// addWatcher handles a watch request from another actor.
func (c *cell) addWatcher(w Ref) {
	if w.p == nil || w == (Ref{c}) {
		return
	}
	if c.parent != nil && w == (Ref{c.parent}) {
		c.state.Store(c.state.Load() | stateParentWatches)
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
		c.state.Store(c.state.Load() &^ stateParentWatches)
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
	if _, ok := x.watching[m.ref]; !ok {
		return
	}
	delete(x.watching, m.ref)
	switch c.lifecycle() {
	case stateStopping, stateDead:
		return
	}
	if x.termQueued == nil {
		x.termQueued = make(map[Ref]struct{})
	}
	x.termQueued[m.ref] = struct{}{}
	c.pushInternal(deathNote{t: Terminated{Ref: m.ref, AddressTerminated: m.addressTerminated}}, m.ref)
}
