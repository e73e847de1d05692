package remote

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/phi"
	"go.uber.org/zap"
)

// peer is everything this system knows about another system at one address: the two
// outbound lanes, the incarnation (uid) last seen there, and the remote watches in
// both directions.
type peer struct {
	r    *Remote
	addr actor.Address
	self string // addr.String()
	user *outLane
	sys  *outLane

	// blocked is set while the incarnation at addr is quarantined and no newer one
	// has answered: sends go to dead letters.
	blocked atomic.Bool
	// retired is set when the peer, known only from inbound refs, was dropped from
	// the transport's map to make room (see Remote.admitUnverified).
	retired atomic.Bool
	// unverified: known only from inbound refs, never reached, since admitted;
	// guarded by r.mu.
	unverified bool
	admitted   time.Time
	stats      peerCounters
	hbSent     atomic.Int64 // Unix nanoseconds of the heartbeat awaiting an answer, with metrics on

	mu        sync.Mutex
	uid       uint64                               // incarnation last handshaken with; 0 before
	watchees  map[remoteRef]map[actor.Ref]struct{} // actors there -> our watchers of them
	watchedBy map[actor.Ref]map[actor.Ref]struct{} // our actors -> their watchers there
	fd        *phi.Detector                        // while watchees is non-empty
}

func newPeer(r *Remote, addr actor.Address) *peer {
	p := &peer{r: r, addr: addr, self: addr.String()}
	p.user = newOutLane(p, laneUser)
	p.sys = newOutLane(p, laneSystem)
	return p
}

// currentUID returns the incarnation last handshaken with, 0 before the first.
func (p *peer) currentUID() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.uid
}

// idle reports whether the peer holds nothing: no lane running, no watches.
func (p *peer) idle() bool {
	if p.user.started.Load() || p.sys.started.Load() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watchees) == 0 && len(p.watchedBy) == 0
}

// observe records the uid a handshake with addr revealed, proven to live at addr
// (this side dialled it, or checked a claim by dialling back). A new uid means the
// system at addr restarted: the previous incarnation is quarantined. It reports
// false when uid itself is quarantined.
func (p *peer) observe(uid uint64) bool {
	if p.r.isQuarantined(uid) {
		p.blocked.Store(true)
		return false
	}
	p.r.reached(p)
	p.mu.Lock()
	old := p.uid
	p.uid = uid
	p.mu.Unlock()
	if old != 0 && old != uid {
		p.quarantine(old, "the system restarted with a new incarnation")
	}
	p.blocked.Store(false)
	return true
}

// quarantine ends all communication with incarnation uid: its watched actors are
// reported terminated, its watches of our actors are removed, unacknowledged system
// messages for it are dropped, and its connections are closed. A later handshake
// from the same uid is refused; a new incarnation at the address starts afresh.
func (p *peer) quarantine(uid uint64, reason string) {
	p.end(uid, reason, endQuarantined)
}

// retire ends communication with incarnation uid, which said it shuts down: as
// quarantine, but its connections are left to be read to their end (it closes them
// itself once this side has acknowledged), and it is logged as news, not trouble.
func (p *peer) retire(uid uint64) {
	p.end(uid, "the system shut down", endShutDown)
}

// endKind is how communication with an incarnation ends.
type endKind int

const (
	// endQuarantined: a quarantine the operator must know of (a member downed, a
	// failure detector that gave up, a restart), logged as a warning.
	endQuarantined endKind = iota
	// endLeft: the quarantine of a member that left the cluster gracefully, logged
	// at info.
	endLeft
	// endShutDown: the peer said it shuts down (retire).
	endShutDown
)

// end is quarantine, or retire when how is endShutDown.
func (p *peer) end(uid uint64, reason string, how endKind) {
	shutDown := how == endShutDown
	r := p.r
	r.mu.Lock()
	if _, done := r.quarantined[uid]; done {
		r.mu.Unlock()
		return
	}
	r.quarantined[uid] = reason
	delete(r.inState, uid) // a reader of a retired peer's system lane holds its own
	var conns []*inConn
	if !shutDown {
		for c := range r.inbound {
			if c.uid == uid {
				conns = append(conns, c)
			}
		}
	}
	r.mu.Unlock()
	switch how {
	case endShutDown:
		r.log.Info("peer shut down", zap.String("peer", p.self), zap.Uint64("uid", uid))
	case endLeft:
		r.stats.quarantines.Add(1)
		r.log.Info("peer quarantined", zap.String("peer", p.self), zap.Uint64("uid", uid), zap.String("reason", reason))
	default:
		r.stats.quarantines.Add(1)
		r.log.Warn("peer quarantined", zap.String("peer", p.self), zap.Uint64("uid", uid), zap.String("reason", reason))
	}
	for _, c := range conns {
		_ = c.conn.Close()
	}
	p.mu.Lock()
	current := p.uid == uid
	p.mu.Unlock()
	if current {
		p.blocked.Store(true)
		p.user.closeConn()
		p.sys.closeConn()
		p.user.wakeWaiters()
	}
	p.sys.dropUnacked()
	p.user.mu.Lock()
	p.user.gate.forget(uid)
	p.user.mu.Unlock()
	p.addressTerminated()
}

// addressTerminated tells every local watcher of an actor at this peer that it is
// gone, and withdraws the peer's watches of local actors.
func (p *peer) addressTerminated() {
	p.mu.Lock()
	watchees, watchedBy := p.watchees, p.watchedBy
	p.watchees, p.watchedBy, p.fd = nil, nil, nil
	p.mu.Unlock()
	host := p.r.host
	for rr, watchers := range watchees {
		dead := rr.ref()
		for w := range watchers {
			host.Terminated(w, dead, true)
		}
	}
	for local, watchers := range watchedBy {
		for w := range watchers {
			host.Unwatch(local, w)
		}
	}
}

// watch registers local watcher's interest in rr and tells the peer.
func (p *peer) watch(rr remoteRef, watcher actor.Ref) {
	p.mu.Lock()
	if p.watchees == nil {
		p.watchees = make(map[remoteRef]map[actor.Ref]struct{})
	}
	ws := p.watchees[rr]
	if ws == nil {
		ws = make(map[actor.Ref]struct{})
		p.watchees[rr] = ws
	}
	_, dup := ws[watcher]
	ws[watcher] = struct{}{}
	if p.fd == nil {
		fdc := p.r.cfg.FailureDetector
		p.fd = phi.New(phi.Config{AcceptablePause: fdc.AcceptablePause, MinStdDeviation: fdc.MinStdDeviation, MaxSamples: fdc.MaxSamples})
		p.fd.Start(time.Now(), fdc.HeartbeatInterval, true)
	}
	p.mu.Unlock()
	if dup {
		return
	}
	if p.blocked.Load() && !p.r.isManaged(p.addr) {
		// The incarnation is gone: answer at once, as for a dead local actor. (At a
		// member's address the watch waits for the transport's look, as a send does:
		// see outLane.sendUser and connectFailed.)
		p.dropWatch(rr, watcher)
		p.r.host.Terminated(watcher, rr.ref(), true)
		return
	}
	p.sys.sendSystem(sysMessage{op: opWatch, target: rr.wire, other: watcher.URI()})
}

// unwatch withdraws a watch.
func (p *peer) unwatch(rr remoteRef, watcher actor.Ref) {
	if p.dropWatch(rr, watcher) {
		p.sys.sendSystem(sysMessage{op: opUnwatch, target: rr.wire, other: watcher.URI()})
	}
}

func (p *peer) dropWatch(rr remoteRef, watcher actor.Ref) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropWatchLocked(rr, watcher)
}

// dropWatchLocked removes one watch, and the failure detector with the last one.
func (p *peer) dropWatchLocked(rr remoteRef, watcher actor.Ref) bool {
	ws := p.watchees[rr]
	if _, ok := ws[watcher]; !ok {
		return false
	}
	delete(ws, watcher)
	if len(ws) == 0 {
		delete(p.watchees, rr)
	}
	if len(p.watchees) == 0 {
		p.fd = nil
	}
	return true
}

// deathOf handles a death notice from the peer: the actor at uri, which local watcher
// watched, has stopped. The watcher hears of every Ref it used for that actor.
func (p *peer) deathOf(watcher actor.Ref, uri string, addressTerminated bool) {
	_, path, uid, err := actor.ParsePath(uri)
	if err != nil {
		return
	}
	var dead []remoteRef
	p.mu.Lock()
	for rr := range p.watchees {
		if rr.path == path && (rr.uid == 0 || rr.uid == uid) && p.dropWatchLocked(rr, watcher) {
			dead = append(dead, rr)
		}
	}
	p.mu.Unlock()
	for _, rr := range dead {
		p.r.host.Terminated(watcher, rr.ref(), addressTerminated)
	}
}

// watchedByPeer records (or with add false, removes) the peer's watcher of a local
// actor, so that its watches can be withdrawn if the peer is lost.
func (p *peer) watchedByPeer(local, watcher actor.Ref, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ws := p.watchedBy[local]
	if !add {
		delete(ws, watcher)
		if len(ws) == 0 {
			delete(p.watchedBy, local)
		}
		return
	}
	if p.watchedBy == nil {
		p.watchedBy = make(map[actor.Ref]map[actor.Ref]struct{})
	}
	if ws == nil {
		ws = make(map[actor.Ref]struct{})
		p.watchedBy[local] = ws
	}
	ws[watcher] = struct{}{}
}

// heartbeatFrom records a heartbeat response from incarnation uid.
func (p *peer) heartbeatFrom(uid uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd != nil && uid == p.uid {
		p.fd.Heartbeat(now, p.r.cfg.FailureDetector.HeartbeatInterval)
		p.heartbeatAnswered(now)
	}
}

// tick runs on the transport's timer: heartbeats and the failure detector for a peer
// with watched actors, resends of unacknowledged system messages, and death notices
// whose flush has not been acknowledged in time.
func (p *peer) tick(now time.Time) {
	p.sys.tickSystem(now)
	p.user.expireNotices(now)
	if p.r.isManaged(p.addr) {
		return // the cluster decides when this member is gone
	}
	p.mu.Lock()
	fd, uid := p.fd, p.uid
	gone := fd != nil && !fd.Available(now, p.r.cfg.FailureDetector.Threshold)
	p.mu.Unlock()
	if fd == nil {
		return
	}
	if !gone {
		p.heartbeatSent(now)
		p.sys.sendControl(kindHeartbeat)
		return
	}
	p.r.log.Warn("peer unreachable: failure detector gave up; its watched actors are terminated",
		zap.String("peer", p.self), zap.Uint64("uid", uid))
	if uid != 0 {
		p.quarantine(uid, "deemed unreachable by the failure detector")
		return
	}
	p.addressTerminated()
}
