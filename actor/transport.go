package actor

import (
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// This file is the runtime's one extension point: the seam between a System and a
// transport that reaches actors in other systems, such as package remote. Applications
// never need it; Refs to actors elsewhere behave like local ones. The extension point
// is four names: Transport (what the transport gives the system), RemoteProcess (what
// stands behind a Ref to an actor elsewhere), InstallTransport, and the TransportHost
// it returns (what the system gives the transport).

// Transport connects a System to other systems: it gives the system its network
// address and resolves paths in other systems.
type Transport interface {
	// Address is the local system's address.
	Address() Address
	// ResolveRemote returns a Ref to the actor at path (and uid, 0 for any incarnation)
	// in the system at addr, which is not the local one.
	ResolveRemote(addr Address, path string, uid uint64) (Ref, error)
}

// RemoteProcess stands behind a Ref to an actor that this system does not host. A
// transport implements it and wraps it with TransportHost.NewRef. Its values must be
// comparable: two Refs are equal when their RemoteProcesses are.
type RemoteProcess interface {
	// Send queues msg for the actor, with sender as its sender. It must not block,
	// unless the application chose backpressure in the transport's configuration. An
	// error means the message was not sent; the transport has also published it as a
	// dead letter.
	Send(msg any, sender Ref) error
	// SendTraced is Send for a message that carries the trace context sc (valid), to
	// be handed over with it by the other system's TransportHost.SendTraced. The
	// runtime calls it only while tracing is on.
	SendTraced(msg any, sender Ref, sc trace.SpanContext) error
	// Watch asks the actor to report its termination to watcher, a local actor.
	Watch(watcher Ref)
	// Unwatch withdraws Watch.
	Unwatch(watcher Ref)
	// Terminated tells the actor, a watcher, that the local actor ref it watches has
	// stopped.
	Terminated(ref Ref)
	// Stop asks the actor to stop, as System.Stop does for a local one.
	Stop()
	// Path is the actor's path within its system, such as "/user/a".
	Path() string
	// Address is the address of the actor's system.
	Address() Address
	// UID is the actor's incarnation uid, or 0 when it is not known.
	UID() uint64
}

// TransportHost is what a System offers the transport installed in it: Refs to remote
// actors, the delivery of remote watches and deaths to local actors, and dead letters.
type TransportHost struct {
	sys *System
}

// InstallTransport installs t as sys's transport and returns the host through which
// the transport reaches the runtime. A system takes one transport, once.
func InstallTransport(sys *System, t Transport) (*TransportHost, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil transport", ErrInvalidConfig)
	}
	if !sys.transport.CompareAndSwap(nil, &t) {
		return nil, fmt.Errorf("%w: a transport is already installed", ErrInvalidConfig)
	}
	return &TransportHost{sys: sys}, nil
}

// NewRef returns a Ref delivering to p.
func (h *TransportHost) NewRef(p RemoteProcess) Ref {
	if p == nil {
		return Ref{}
	}
	return Ref{foreign{p: p, sys: h.sys}}
}

// Remote returns the RemoteProcess behind ref, or false for a local actor.
func (h *TransportHost) Remote(ref Ref) (RemoteProcess, bool) {
	f, ok := ref.p.(foreign)
	return f.p, ok
}

// Watch delivers a watch request from a remote watcher to the local actor target:
// when target stops, watcher's RemoteProcess hears Terminated.
func (h *TransportHost) Watch(target, watcher Ref) {
	if target.p != nil && watcher.p != nil {
		target.p.sendSystem(sysWatch{watcher: watcher})
	}
}

// Unwatch withdraws a watch that Watch delivered.
func (h *TransportHost) Unwatch(target, watcher Ref) {
	if target.p != nil && watcher.p != nil {
		target.p.sendSystem(sysUnwatch{watcher: watcher})
	}
}

// Terminated tells the local actor watcher that ref, an actor it watches, has stopped.
// addressTerminated is set when the stop is inferred from the loss of ref's system.
func (h *TransportHost) Terminated(watcher, ref Ref, addressTerminated bool) {
	if watcher.p != nil {
		watcher.p.sendSystem(sysDeath{ref: ref, addressTerminated: addressTerminated})
	}
}

// DeadLetter publishes a message the transport cannot deliver, with the reason: on
// the event stream as a DeadLetter, in the log at a bounded rate, and as the failure
// of an Ask waiting for it.
func (h *TransportHost) DeadLetter(recipient Ref, msg any, sender Ref, reason error) {
	h.sys.deadLetter(recipient, msg, sender, reason)
}

// IsLocal reports whether the actor lives in this process's system (or is the zero
// Ref).
func (r Ref) IsLocal() bool {
	_, remote := r.p.(foreign)
	return !remote
}

// Address returns the address of the actor's system; for a local actor, its system's
// address.
func (r Ref) Address() Address {
	switch p := r.p.(type) {
	case nil:
		return Address{}
	case foreign:
		return p.p.Address()
	default:
		return p.system().Address()
	}
}

// UID returns the actor's incarnation uid: a spawned actor gets a nonzero uid that
// looks random and differs between systems, and that no other actor of its system
// ever gets, so a path plus uid names one incarnation. It is 0 for the zero Ref and for Refs
// whose incarnation is not known (a remote path resolved without a uid).
func (r Ref) UID() uint64 {
	switch p := r.p.(type) {
	case *cell:
		return p.uid()
	case *Future:
		return p.uid()
	case foreign:
		return p.p.UID()
	}
	return 0
}

// URI returns the actor's full path with its system's address and uid, as in
// troupe://sys@127.0.0.1:2552/user/a#1234: the form a transport sends and
// System.Resolve accepts. A Future gets a temporary path that resolves until it
// completes.
func (r Ref) URI() string {
	if r.p == nil {
		return ""
	}
	var prefix string
	if f, ok := r.p.(foreign); ok {
		prefix = f.p.Address().String()
	} else {
		prefix = r.p.system().addressString()
	}
	path := r.p.path()
	buf := make([]byte, 0, 96)
	buf = append(append(buf, prefix...), path...)
	if uid := r.UID(); uid != 0 {
		buf = strconv.AppendUint(append(buf, '#'), uid, 10)
	}
	return string(buf)
}

// addressString is Address().String(), computed once.
func (s *System) addressString() string {
	if p := s.addrStr.Load(); p != nil {
		return *p
	}
	a := s.Address().String()
	if s.transport.Load() != nil { // final once the transport is installed
		s.addrStr.Store(&a)
	}
	return a
}

// foreign adapts a transport's RemoteProcess to the runtime.
type foreign struct {
	p   RemoteProcess
	sys *System
}

func (f foreign) sendUser(msg any, sender Ref) error { return f.p.Send(msg, sender) }
func (f foreign) path() string                       { return f.p.Path() }
func (f foreign) system() *System                    { return f.sys }
func (f foreign) isDead() bool                       { return false }

func (f foreign) sendSystem(m sysMsg) {
	switch m := m.(type) {
	case sysWatch:
		f.p.Watch(m.watcher)
	case sysUnwatch:
		f.p.Unwatch(m.watcher)
	case sysDeath:
		f.p.Terminated(m.ref)
	case sysStop:
		f.p.Stop()
	}
}

// Address returns the system's address: with a transport, the address it is reached
// at; without, troupe://name.
func (s *System) Address() Address {
	if t := s.transport.Load(); t != nil {
		return (*t).Address()
	}
	return Address{System: s.name}
}
