package remote

import (
	"github.com/troupe-go/troupe/actor"
)

// remoteRef is the actor.RemoteProcess behind a Ref to an actor in another system. It
// is a comparable value: Refs to the same path and uid at the same peer are equal.
type remoteRef struct {
	peer *peer
	path string
	wire string // path#uid: how the hosting system names the actor
	uid  uint64
}

func newRemoteRef(p *peer, path string, uid uint64) remoteRef {
	return remoteRef{peer: p, path: path, wire: localWire(path, uid), uid: uid}
}

// ref returns the actor.Ref for rr.
func (rr remoteRef) ref() actor.Ref { return rr.peer.r.host.NewRef(rr) }

// Send queues msg for the peer. Errors (unregistered type, too large) are also
// reported as dead letters.
func (rr remoteRef) Send(msg any, sender actor.Ref) error {
	return rr.peer.user.sendUser(rr, msg, sender)
}

// Watch asks the peer to report the actor's termination to watcher.
func (rr remoteRef) Watch(watcher actor.Ref) { rr.peer.watch(rr, watcher) }

// Unwatch withdraws Watch.
func (rr remoteRef) Unwatch(watcher actor.Ref) { rr.peer.unwatch(rr, watcher) }

// Terminated tells the actor, a watcher, that the local actor ref it watched stopped.
func (rr remoteRef) Terminated(ref actor.Ref) {
	rr.peer.watchedByPeer(ref, rr.ref(), false)
	rr.peer.sys.sendSystem(sysMessage{op: opDeath, target: rr.wire, other: ref.URI()})
}

// Stop asks the peer to stop the actor, over the reliable system lane.
func (rr remoteRef) Stop() {
	rr.peer.sys.sendSystem(sysMessage{op: opStop, target: rr.wire})
}

// Path returns the actor's path in its system.
func (rr remoteRef) Path() string { return rr.path }

// Address returns the actor's system address.
func (rr remoteRef) Address() actor.Address { return rr.peer.addr }

// UID returns the actor's incarnation uid, 0 if unknown.
func (rr remoteRef) UID() uint64 { return rr.uid }
