package remote

import (
	"time"

	"go.uber.org/zap"
)

// This file runs a peer's deathGate (see deathgate.go) on its user lane.

// deathNotice sends m, the notice that a local actor stopped, to its watcher at the
// peer once the user messages sent to the peer before it have been delivered there.
func (p *peer) deathNotice(m sysMessage) {
	r, u := p.r, p.user
	if r.cfg.DeathNoticeFlushTimeout < 0 || r.closing.Load() || p.blocked.Load() {
		p.sys.sendSystem(m)
		return
	}
	uid := p.currentUID()
	u.mu.Lock()
	flush, send := u.gate.hold(m, uid, u.q.added, time.Now())
	if send {
		u.mu.Unlock()
		p.sys.sendSystem(m)
		return
	}
	if flush != 0 {
		u.q.addFlush(flush)
		u.queued() // unlocks u.mu
	} else {
		u.mu.Unlock()
	}
	if r.closing.Load() {
		// The transport began to close after the check above, and may have released
		// the held notices before this one was held: release it.
		u.releaseNotices()
	}
}

// flushAcked takes the peer's acknowledgement of flush id and sends the notices it
// releases.
func (l *outLane) flushAcked(id uint64) {
	l.mu.Lock()
	ms := l.handingLocked(l.gate.acknowledged(id))
	l.mu.Unlock()
	l.sendNotices(ms)
}

// expireNotices sends the notices whose flush was not acknowledged in time.
func (l *outLane) expireNotices(now time.Time) {
	l.mu.Lock()
	ms := l.handingLocked(l.gate.expired(now))
	l.mu.Unlock()
	if len(ms) > 0 {
		r := l.p.r
		r.connectLog.info(r.log, "death notices sent without confirmation that the messages sent before them arrived",
			zap.String("peer", l.p.self), zap.Int("count", len(ms)), zap.Duration("waited", r.cfg.DeathNoticeFlushTimeout))
	}
	l.sendNotices(ms)
}

// releaseNotices sends every held notice at once: the transport closes.
func (l *outLane) releaseNotices() {
	l.mu.Lock()
	ms := l.handingLocked(l.gate.emptied(l.q.added))
	l.mu.Unlock()
	l.sendNotices(ms)
}

// handingLocked counts notices released by the gate as on their way to the system
// lane, until sendNotices has queued them there: a closing transport that sees the
// lane delivered (shutdownflush.go) then finds them on the system lane, and says its
// goodbye after them.
func (l *outLane) handingLocked(ms []sysMessage) []sysMessage {
	if len(ms) > 0 {
		l.handing++
	}
	return ms
}

// sendNotices queues notices the gate released (through handingLocked) on the
// system lane.
func (l *outLane) sendNotices(ms []sysMessage) {
	if len(ms) == 0 {
		return
	}
	for _, m := range ms {
		l.p.sys.sendSystem(m)
	}
	l.mu.Lock()
	l.handing--
	l.mu.Unlock()
}
