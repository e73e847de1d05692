package remote

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// This file holds the transport's last act before it closes: waiting, bounded by
// Config.ShutdownFlushTimeout, for its peers to have what it sent them.

// flushPoll is how often a closing transport looks whether its peers have everything.
// It only runs while the transport closes with something still on its way.
const flushPoll = 5 * time.Millisecond

// flushPeers waits until every reachable peer has what this system sent it (see
// outLane.delivered), then tells each peer it knows that this incarnation shuts down
// and waits for that to be acknowledged too; all of it for at most
// Config.ShutdownFlushTimeout, and while ctx lasts. The system's actors have stopped
// when it runs, so the death notices of all of them are among what it waits for, and
// the goodbye comes after them on each system lane: a peer then ends this incarnation
// (see peer.retire) at once, rather than when a failure detector gives it up.
func (r *Remote) flushPeers(ctx context.Context) {
	if r.cfg.ShutdownFlushTimeout < 0 {
		return
	}
	deadline := time.NewTimer(r.cfg.ShutdownFlushTimeout)
	defer deadline.Stop()
	for _, p := range r.peerList() {
		if !p.blocked.Load() {
			p.user.flushForClose()
		}
	}
	if !r.awaitDelivered(ctx, deadline.C) {
		return
	}
	for _, p := range r.peerList() {
		if p.currentUID() != 0 && !p.blocked.Load() {
			p.sys.sendSystem(sysMessage{op: opTerminating})
		}
	}
	r.awaitDelivered(ctx, deadline.C)
}

// awaitDelivered waits until no reachable peer is owed anything, and reports whether
// that came before the deadline or the end of ctx.
func (r *Remote) awaitDelivered(ctx context.Context, deadline <-chan time.Time) bool {
	left := r.undelivered()
	if left == 0 {
		return true
	}
	poll := time.NewTicker(flushPoll)
	defer poll.Stop()
	for left > 0 {
		select {
		case <-poll.C:
			left = r.undelivered()
		case <-deadline:
			r.log.Info("closing before every peer confirmed what was sent to it", zap.Int("lanes", left),
				zap.Duration("waited", r.cfg.ShutdownFlushTimeout))
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// undelivered counts the lanes of reachable peers that still hold something for them.
func (r *Remote) undelivered() int {
	n := 0
	for _, p := range r.peerList() {
		if p.blocked.Load() {
			continue
		}
		for _, l := range []*outLane{p.user, p.sys} {
			if !l.delivered() {
				n++
			}
		}
	}
	return n
}

// flushForClose queues a flush behind the user frames sent to the peer since the
// latest one, so that delivered waits until the peer has handed them all to their
// recipients, not only until they are written: a peer that has read them to their
// end loses none when this side closes the connection.
func (l *outLane) flushForClose() {
	l.mu.Lock()
	if flush := l.gate.closing(l.q.added); flush != 0 {
		l.q.addFlush(flush)
		l.queued() // unlocks l.mu
		return
	}
	l.mu.Unlock()
}

// delivered reports whether the lane has nothing left for its peer, or cannot reach
// it: user lane, no frame queued or being written, every flush acknowledged and every
// death notice it held queued on the system lane; system lane, no message unsent or
// unacknowledged. undelivered asks the user lane first, so a notice is never missed
// between the two.
func (l *outLane) delivered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing {
		return true
	}
	if l.outOff < len(l.out) || len(l.q.buf) > 0 || !l.gate.settled() || l.handing > 0 {
		return false
	}
	return l.sys == nil || l.sys.Unacked() == 0 && !l.sys.HasNext()
}
