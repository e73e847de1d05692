package remote

import "time"

// Death notices and the user lane. A death notice (an actor here stopped; a watcher
// at the peer hears of it) travels on the system lane, a connection of its own, so it
// could arrive before user messages sent to the peer earlier, by the dead actor among
// others: a watcher would see Terminated and then a message from the actor it buried.
// So a notice waits for a flush: a flush frame queued on the user lane behind those
// messages, which the peer acknowledges once it has handed every message before it to
// its recipients. The notice goes when the flush is acknowledged, or after
// Config.DeathNoticeFlushTimeout when it is not. Akka's Artery does the same.

// deathGate decides when the death notices for one peer may go. It is a plain value
// without locks, clocks or I/O: the user lane holds its mutex around every call, and
// passes in the count of user frames ever queued and the time.
//
// Flushes are numbered from 1. A notice waits for the latest flush, unless a user
// frame was queued after it: then a new one is queued. When the lane has queued
// nothing since a flush that is acknowledged, a notice goes at once.
type deathGate struct {
	timeout time.Duration
	last    uint64 // the latest flush queued
	acked   uint64 // the latest flush acknowledged
	addedAt uint64 // user frames ever queued when the latest flush was
	held    []heldNotice
}

// heldNotice is a death notice waiting for flush, for a watcher in incarnation uid
// of the peer.
type heldNotice struct {
	flush    uint64
	deadline time.Time
	uid      uint64
	m        sysMessage
}

// hold decides for the death notice m, for a watcher in incarnation uid of the peer,
// when added user frames have been queued in all: send reports whether it may go now;
// otherwise it is held, and flush, when not zero, is the number of a flush frame the
// caller must queue.
func (g *deathGate) hold(m sysMessage, uid, added uint64, now time.Time) (flush uint64, send bool) {
	if added == g.addedAt && g.acked == g.last {
		return 0, true
	}
	if added != g.addedAt {
		flush = g.next(added)
	}
	g.held = append(g.held, heldNotice{flush: g.last, deadline: now.Add(g.timeout), uid: uid, m: m})
	return flush, false
}

// acknowledged records the peer's acknowledgement of flush id and returns the
// notices it releases, in the order they were held.
func (g *deathGate) acknowledged(id uint64) []sysMessage {
	if id <= g.acked || id > g.last {
		return nil // a duplicate, or not a flush of ours
	}
	g.acked = id
	n := 0
	for n < len(g.held) && g.held[n].flush <= id {
		n++
	}
	return g.release(n)
}

// expired returns the notices whose flush has not been acknowledged by their
// deadline. Notices are held in order of deadline.
func (g *deathGate) expired(now time.Time) []sysMessage {
	n := 0
	for n < len(g.held) && !now.Before(g.held[n].deadline) {
		n++
	}
	return g.release(n)
}

// requeued is called when a connection broke and the frames not written on it were
// queued again, without the flush frames among them: when a flush is outstanding, it
// returns the number of a new one for the caller to queue at the end, which every
// held notice now waits for.
func (g *deathGate) requeued() (flush uint64) {
	if g.acked == g.last {
		return 0
	}
	g.last++
	for i := range g.held {
		g.held[i].flush = g.last
	}
	return g.last
}

// emptied is called when the user frames queued were dropped (to dead letters): no
// message is ahead of the held notices any more, so it returns them all.
func (g *deathGate) emptied(added uint64) []sysMessage {
	g.acked, g.addedAt = g.last, added
	return g.release(len(g.held))
}

// closing is called when the transport is about to close, after added user frames
// were queued in all: when some were queued since the latest flush, it returns the
// number of a new flush for the caller to queue, so that once the gate is settled
// the peer has had every user frame handed to its recipients.
func (g *deathGate) closing(added uint64) (flush uint64) {
	if added == g.addedAt {
		return 0
	}
	return g.next(added)
}

// next numbers a new flush, queued after added user frames in all.
func (g *deathGate) next(added uint64) uint64 {
	g.last++
	g.addedAt = added
	return g.last
}

// settled reports whether every flush queued has been acknowledged and no notice
// waits.
func (g *deathGate) settled() bool { return g.acked == g.last && len(g.held) == 0 }

// forget drops the held notices for incarnation uid of the peer, which is gone. The
// flushes stay outstanding: the frames ahead of them may be for a newer incarnation.
func (g *deathGate) forget(uid uint64) {
	kept := g.held[:0]
	for _, h := range g.held {
		if h.uid != uid {
			kept = append(kept, h)
		}
	}
	clear(g.held[len(kept):])
	g.held = kept
}

// release removes the first n held notices and returns them.
func (g *deathGate) release(n int) []sysMessage {
	if n == 0 {
		return nil
	}
	out := make([]sysMessage, n)
	for i := range n {
		out[i] = g.held[i].m
	}
	rest := copy(g.held, g.held[n:])
	clear(g.held[rest:])
	g.held = g.held[:rest]
	return out
}
