package remote

import (
	"context"
	"errors"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// This file is the transport's interface to the cluster layer and to fault-injection
// tests (testkit/multinode), reached through internal/hooks rather than exported.

// hookAdapter exposes the transport's internal interface to internal/hooks.
type hookAdapter struct{ r *Remote }

func (h hookAdapter) Quarantine(addr actor.Address, uid uint64, reason string, left bool) {
	h.r.quarantine(addr, uid, reason, left)
}
func (h hookAdapter) SetMembership(managed func(actor.Address) bool) { h.r.setMembership(managed) }
func (h hookAdapter) OnQuarantinedBy(f func(by actor.Address)) {
	if f == nil {
		h.r.onQuarantined.Store(nil)
		return
	}
	h.r.onQuarantined.Store(&f)
}
func (h hookAdapter) Abort()                                      { h.r.abort() }
func (h hookAdapter) SetBlocked(addr actor.Address, blocked bool) { h.r.setBlocked(addr, blocked) }
func (h hookAdapter) Serialization() (*serialization.Registry, serialization.RefResolver) {
	return h.r.cfg.Registry, localResolver(h)
}
func (h hookAdapter) MaxFrameSize() int { return h.r.cfg.MaxFrameSize }

// quarantine ends communication with incarnation uid of the system at addr, as if the
// transport had decided it itself: actors watched there are reported terminated with
// AddressTerminated, its watches of local actors are removed, and it is refused from
// now on. The cluster calls it when a member is removed; left says the member left
// gracefully, and the quarantine is then logged at info rather than as a warning.
func (r *Remote) quarantine(addr actor.Address, uid uint64, reason string, left bool) {
	p, err := r.peerFor(addr)
	if err != nil {
		return
	}
	how := endQuarantined
	if left {
		how = endLeft
	}
	p.end(uid, reason, how)
}

// setMembership hands failure detection for some addresses to the cluster: for an
// address where managed returns true, the transport's own heartbeats and phi detector
// are off, and the cluster quarantines the incarnation when it removes the member.
// nil gives all addresses back to the transport.
func (r *Remote) setMembership(managed func(actor.Address) bool) {
	if managed == nil {
		r.managed.Store(nil)
		return
	}
	r.managed.Store(&managed)
}

// quarantinedBy reports to the cluster (OnQuarantinedBy) that the system at addr
// refused a connection from this incarnation because it has quarantined it: for a
// cluster member, that member removed this one from the cluster.
func (r *Remote) quarantinedBy(addr actor.Address) {
	if f := r.onQuarantined.Load(); f != nil {
		(*f)(addr)
	}
}

func (r *Remote) isManaged(addr actor.Address) bool {
	f := r.managed.Load()
	return f != nil && (*f)(addr)
}

// setBlocked cuts (blocked true) or restores the connections with the system at addr:
// while cut, open connections are closed, dials fail and handshakes from it are
// refused, as in a network partition. It exists for fault-injection tests.
func (r *Remote) setBlocked(addr actor.Address, blocked bool) {
	r.mu.Lock()
	if blocked {
		r.blocked[addr] = struct{}{}
	} else {
		delete(r.blocked, addr)
	}
	var conns []*inConn
	for c := range r.inbound {
		if blocked && c.from == addr {
			conns = append(conns, c)
		}
	}
	p := r.peers[addr]
	r.mu.Unlock()
	for _, c := range conns {
		_ = c.conn.Close()
	}
	if p != nil && blocked {
		p.user.closeConn()
		p.sys.closeConn()
	}
	if p != nil && !blocked {
		p.user.signal()
		p.sys.signal()
	}
}

func (r *Remote) isBlocked(addr actor.Address) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b := r.blocked[addr]
	return b
}

// abort stops the transport at once, as a crashed process would: the listener and
// every connection close without flushing what is queued. It exists for
// fault-injection tests; Shutdown of the actor system closes the transport cleanly.
func (r *Remote) abort() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.close(ctx); err != nil {
		r.log.Debug("abort", zap.Error(err))
	}
	r.wg.Wait()
}

var errBlocked = errors.New("remote: address blocked")
