package actor

import "strings"

// process is what a Ref delivers to: a local actor cell, an ask future, the dead-letter
// sink, and later the remote layer's proxies.
type process interface {
	// sendUser queues an ordinary message. It returns an error only for a full bounded
	// mailbox that rejects; delivery to a stopped actor becomes a dead letter.
	sendUser(msg any, sender Ref) error
	// sendSystem queues a runtime message (watch, stop, failure, ...).
	sendSystem(m sysMsg)
	// path is the actor's path, such as "/user/a/b".
	path() string
	// system is the actor system the process belongs to.
	system() *System
	// isDead reports whether the process can no longer receive messages.
	isDead() bool
}

// Ref is a handle to an actor. It is a small comparable value: use it as a map key,
// compare it with ==, and send it inside messages. Two Refs are equal when they denote
// the same actor incarnation: an actor spawned again under the same name gets a new,
// different Ref. The zero Ref denotes nobody (see IsZero).
type Ref struct {
	p process
}

// IsZero reports whether r is the zero Ref, which denotes no actor.
func (r Ref) IsZero() bool { return r.p == nil }

// Path returns the actor's path, such as "/user/orders/o-17", or "" for the zero Ref.
func (r Ref) Path() string {
	if r.p == nil {
		return ""
	}
	return r.p.path()
}

// Name returns the last element of the actor's path: the name it was spawned with, or
// the one the system gave an anonymous actor; "" for the zero Ref. For a local actor it
// reads the name without building the path.
func (r Ref) Name() string {
	switch p := r.p.(type) {
	case nil:
		return ""
	case *cell:
		return p.nameOf()
	}
	path := r.p.path()
	return path[strings.LastIndexByte(path, '/')+1:]
}

// String returns the path of a local actor, the full path (see URI) of an actor in
// another system, or "nobody" for the zero Ref.
func (r Ref) String() string {
	switch r.p.(type) {
	case nil:
		return "nobody"
	case foreign:
		return r.URI()
	}
	return r.p.path()
}

// Tell sends msg with no sender. It never blocks. A message for a stopped actor goes to
// dead letters and Tell returns nil, as delivery is never guaranteed; Tell returns an
// error only for a nil message, the zero Ref, or a bounded mailbox that rejects.
func (r Ref) Tell(msg any) error {
	return r.Send(msg, Ref{})
}

// Send sends msg with sender as the sender, so that the recipient's Respond reaches it.
// It behaves as Tell otherwise.
func (r Ref) Send(msg any, sender Ref) error {
	if r.p == nil {
		return ErrNoRecipient
	}
	if msg == nil {
		return ErrNilMessage
	}
	return r.p.sendUser(msg, sender)
}
