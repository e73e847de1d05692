package remote

import (
	"github.com/troupe-go/troupe/actor"
)

// remoteRef is the actor.Process behind a Ref to an actor in another system. It is a
// comparable value: Refs to the same path and uid at the same peer are equal.
type remoteRef struct {
	peer *peer
	path string
	wire string // path#uid: how the hosting system names the actor
	uid  uint64
}

func newRemoteRef(p *peer, path string, uid uint64) remoteRef {
	return remoteRef{peer: p, path: path, wire: localWire(path, uid), uid: uid}
}

// SendUser queues msg for the peer. Errors (unregistered type, too large) are also
// reported as dead letters.
func (rr remoteRef) SendUser(msg any, sender actor.Ref) error {
	return rr.peer.user.sendUser(rr, msg, sender)
}

// SendSystem carries watch, unwatch and death notices to the peer.
func (rr remoteRef) SendSystem(m actor.SystemMessage) {
	switch m := m.(type) {
	case actor.WatchRequest:
		rr.peer.watch(rr, m.Watcher)
	case actor.UnwatchRequest:
		rr.peer.unwatch(rr, m.Watcher)
	case actor.DeathNotice:
		// A local actor that rr watched has stopped; rr is the watcher.
		rr.peer.watchedByPeer(m.Ref, actor.NewRef(rr), false)
		rr.peer.sys.sendSystem(sysMessage{op: opDeath, target: rr.wire, other: m.Ref.URI(), addressTerminated: m.AddressTerminated})
	}
}

// Path returns the actor's path in its system.
func (rr remoteRef) Path() string { return rr.path }

// Address returns the actor's system address.
func (rr remoteRef) Address() actor.Address { return rr.peer.addr }

// UID returns the actor's incarnation uid, 0 if unknown.
func (rr remoteRef) UID() uint64 { return rr.uid }

// System returns the local system the Ref belongs to.
func (rr remoteRef) System() *actor.System { return rr.peer.r.sys }
