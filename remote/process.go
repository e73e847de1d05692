package remote

import (
	"fmt"
	"strings"

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

// newRemoteRefIn is newRemoteRef for the path and uid parsed from uri, a full path
// whose tail, when its uid is spelled canonically, is already the wire name.
func newRemoteRefIn(p *peer, uri, path string, uid uint64) remoteRef {
	if i := strings.LastIndexByte(uri, '#'); uid != 0 && i >= len(path) && i+1 < len(uri) &&
		uri[i+1] != '0' && uri[i-len(path):i] == path {
		return remoteRef{peer: p, path: path, wire: uri[i-len(path):], uid: uid}
	}
	return newRemoteRef(p, path, uid)
}

// ref returns the actor.Ref for rr.
func (rr remoteRef) ref() actor.Ref { return rr.peer.r.host.NewRef(rr) }

// live returns rr on the peer that now stands for its address: its own, unless that
// one was retired (see Remote.admitUnverified) and the bound on unverified peers
// leaves no room to bring it back.
func (rr remoteRef) live() (remoteRef, error) {
	if !rr.peer.retired.Load() {
		return rr, nil
	}
	p, err := rr.peer.r.revive(rr.peer)
	if err != nil {
		return rr, err
	}
	rr.peer = p
	return rr, nil
}

// Send queues msg for the peer. Errors (unregistered type, too large, queue full,
// peer quarantined) are also reported as dead letters.
func (rr remoteRef) Send(msg any, sender actor.Ref) error {
	live, err := rr.live()
	if err != nil {
		rr.peer.r.deadLetter(rr, msg, sender, err)
		return err
	}
	return live.peer.user.sendUser(live, msg, sender, nil, nil)
}

// Watch asks the peer to report the actor's termination to watcher; when the peer
// cannot be kept (see live), the actor is reported terminated at once.
func (rr remoteRef) Watch(watcher actor.Ref) {
	live, err := rr.live()
	if err != nil {
		rr.peer.r.host.Terminated(watcher, rr.ref(), true)
		return
	}
	live.peer.watch(live, watcher)
}

// Unwatch withdraws Watch.
func (rr remoteRef) Unwatch(watcher actor.Ref) {
	if live, err := rr.live(); err == nil {
		live.peer.unwatch(live, watcher)
	}
}

// Terminated tells the actor, a watcher, that the local actor ref it watched stopped.
func (rr remoteRef) Terminated(ref actor.Ref) {
	live, err := rr.live()
	if err != nil {
		return // the watch was withdrawn with the peer
	}
	live.peer.watchedByPeer(ref, live.ref(), false)
	live.peer.deathNotice(sysMessage{op: opDeath, target: live.wire, other: ref.URI()})
}

// Stop asks the peer to stop the actor, over the reliable system lane.
func (rr remoteRef) Stop() {
	if live, err := rr.live(); err == nil {
		live.peer.sys.sendSystem(sysMessage{op: opStop, target: live.wire})
	}
}

// Path returns the actor's path in its system.
func (rr remoteRef) Path() string { return rr.path }

// Address returns the actor's system address.
func (rr remoteRef) Address() actor.Address { return rr.peer.addr }

// UID returns the actor's incarnation uid, 0 if unknown.
func (rr remoteRef) UID() uint64 { return rr.uid }

// absentRef names a path in this system where no actor lives, when a message or a
// ref from another system names it: the recipient of the dead letter such a message
// becomes, or a ref inside a message to an actor that has stopped. Messages to it are
// dead letters; a watch of it is answered at once.
type absentRef struct {
	r    *Remote
	path string
	uid  uint64
}

func (a absentRef) ref() actor.Ref { return a.r.host.NewRef(a) }

// Send publishes msg as a dead letter.
func (a absentRef) Send(msg any, sender actor.Ref) error {
	a.r.stats.deadLetters.Add(1)
	a.r.host.DeadLetter(a.ref(), msg, sender, fmt.Errorf("%w: %s", actor.ErrNotFound, localWire(a.path, a.uid)))
	return nil
}

// Watch answers at once: the actor is gone.
func (a absentRef) Watch(watcher actor.Ref) { a.r.host.Terminated(watcher, a.ref(), false) }

func (a absentRef) Unwatch(actor.Ref)      {}
func (a absentRef) Terminated(actor.Ref)   {}
func (a absentRef) Stop()                  {}
func (a absentRef) Path() string           { return a.path }
func (a absentRef) Address() actor.Address { return a.r.addr }
func (a absentRef) UID() uint64            { return a.uid }
