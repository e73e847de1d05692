package remote

import (
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// This file is the interface the cluster layer (and the layers above it that pack
// their own messages) uses of the running transport, which they find with Get. An
// application that runs a cluster has no need of it: the cluster calls these methods
// itself.

// Quarantine ends communication with incarnation uid of the system at addr, as if the
// transport had decided it itself: actors watched there are reported terminated with
// AddressTerminated, its watches of local actors are removed, and it is refused from
// now on. The cluster calls it when it removes a member; left says the member left the
// cluster gracefully, and the quarantine is then logged at info rather than as a
// warning. An address that cannot be a peer (no host) is ignored.
func (r *Remote) Quarantine(addr actor.Address, uid uint64, reason string, left bool) {
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

// SetMembership hands failure detection for some addresses to the cluster: for an
// address where managed returns true, the transport's own heartbeats and phi detector
// are off, and the cluster quarantines the incarnation (Quarantine) when it removes
// the member. managed is called on the transport's goroutines and must not block. nil
// gives every address back to the transport.
func (r *Remote) SetMembership(managed func(actor.Address) bool) {
	if managed == nil {
		r.managed.Store(nil)
		return
	}
	r.managed.Store(&managed)
}

// OnQuarantinedBy registers f, which the transport calls whenever the system at an
// address refuses a connection from this incarnation because it has quarantined it
// (for a cluster member: that member removed this one from the cluster); nil
// unregisters. f runs on one of the transport's goroutines and must not block.
func (r *Remote) OnQuarantinedBy(f func(by actor.Address)) {
	if f == nil {
		r.onQuarantined.Store(nil)
		return
	}
	r.onQuarantined.Store(&f)
}

// Serialization returns the transport's registry and a resolver for the actor refs
// inside messages it encoded itself, for layers that carry serialized messages inside
// their own (the singleton's proxies and managers).
func (r *Remote) Serialization() (*serialization.Registry, serialization.RefResolver) {
	return r.cfg.Registry, localResolver{r}
}

// MaxFrameSize returns the largest frame the transport sends (Config.MaxFrameSize,
// with the default applied), for layers that pack several messages into one. On a nil
// Remote (Get of a system without remoting) it returns the default, 256 KiB.
func (r *Remote) MaxFrameSize() int {
	if r == nil {
		return defaultMaxFrameSize
	}
	return r.cfg.MaxFrameSize
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
