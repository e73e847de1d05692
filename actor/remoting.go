package actor

import (
	"fmt"
	"strconv"
)

// This file is the seam between the runtime and a transport such as package remote.
// Applications do not need it: they use Refs, and Refs to actors in other systems
// behave like local ones.

// Process stands behind a Ref to an actor this runtime does not host, such as an actor
// in another system. A transport implements it and wraps it with NewRef. Its values
// must be comparable: two Refs are equal when their Processes are.
type Process interface {
	// SendUser queues msg for the actor. It must not block; an error means the message
	// could not be sent (for example it cannot be serialised) and has been handed to
	// dead letters.
	SendUser(msg any, sender Ref) error
	// SendSystem delivers a runtime message: WatchRequest, UnwatchRequest or
	// DeathNotice.
	SendSystem(m SystemMessage)
	// Path is the actor's path within its system, such as "/user/a".
	Path() string
	// Address is the address of the actor's system.
	Address() Address
	// UID is the actor's incarnation uid, or 0 when it is not known.
	UID() uint64
	// System is the local system the Ref belongs to (asks made through the Ref create
	// their futures there).
	System() *System
}

// NewRef returns a Ref delivering to p.
func NewRef(p Process) Ref {
	if p == nil {
		return Ref{}
	}
	return Ref{foreign{p}}
}

// SystemMessage is a runtime message a transport carries between systems.
type SystemMessage interface{ systemMessage() }

// WatchRequest asks the recipient to tell Watcher when it stops.
type WatchRequest struct{ Watcher Ref }

// UnwatchRequest withdraws a WatchRequest.
type UnwatchRequest struct{ Watcher Ref }

// DeathNotice tells the recipient, a watcher, that Ref has stopped. AddressTerminated
// is set when the stop was inferred from the loss of Ref's whole system.
type DeathNotice struct {
	Ref               Ref
	AddressTerminated bool
}

func (WatchRequest) systemMessage()   {}
func (UnwatchRequest) systemMessage() {}
func (DeathNotice) systemMessage()    {}

// SendSystem delivers a runtime message to the actor. It is meant for transports: a
// remote watch arrives as a WatchRequest, the end of a remote watched actor as a
// DeathNotice. Applications use Context.Watch instead.
func (r Ref) SendSystem(m SystemMessage) {
	if r.p == nil || m == nil {
		return
	}
	if f, ok := r.p.(foreign); ok {
		f.p.SendSystem(m)
		return
	}
	switch m := m.(type) {
	case WatchRequest:
		r.p.sendSystem(sysWatch{watcher: m.Watcher})
	case UnwatchRequest:
		r.p.sendSystem(sysUnwatch{watcher: m.Watcher})
	case DeathNotice:
		r.p.sendSystem(sysDeath{ref: m.Ref, addressTerminated: m.AddressTerminated})
	}
}

// IsLocal reports whether the actor lives in this process's system (or is the zero
// Ref).
func (r Ref) IsLocal() bool {
	_, remote := r.p.(foreign)
	return !remote
}

// Process returns the transport's Process behind a non-local Ref.
func (r Ref) Process() (Process, bool) {
	f, ok := r.p.(foreign)
	return f.p, ok
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

// UID returns the actor's incarnation uid: a spawned actor gets a random nonzero uid,
// so a path plus uid names one incarnation. It is 0 for the zero Ref and for Refs
// whose incarnation is not known (a remote path resolved without a uid).
func (r Ref) UID() uint64 {
	switch p := r.p.(type) {
	case *cell:
		return p.uid
	case *Future:
		return p.id
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
	if s.provider.Load() != nil { // final once the provider is set
		s.addrStr.Store(&a)
	}
	return a
}

// foreign adapts a transport's Process to the runtime.
type foreign struct{ p Process }

func (f foreign) sendUser(msg any, sender Ref) error { return f.p.SendUser(msg, sender) }
func (f foreign) path() string                       { return f.p.Path() }
func (f foreign) system() *System                    { return f.p.System() }
func (f foreign) isDead() bool                       { return false }

func (f foreign) sendSystem(m sysMsg) {
	switch m := m.(type) {
	case sysWatch:
		f.p.SendSystem(WatchRequest{Watcher: m.watcher})
	case sysUnwatch:
		f.p.SendSystem(UnwatchRequest{Watcher: m.watcher})
	case sysDeath:
		f.p.SendSystem(DeathNotice{Ref: m.ref, AddressTerminated: m.addressTerminated})
	}
}

// Provider connects a System to a transport: it gives the system its network address
// and resolves paths in other systems.
type Provider interface {
	// Address is the local system's address.
	Address() Address
	// ResolveRemote returns a Ref to the actor at path (and uid, 0 for any incarnation)
	// in the system at addr, which is not the local one.
	ResolveRemote(addr Address, path string, uid uint64) (Ref, error)
}

// SetProvider installs the transport. It can be set once; package remote calls it.
func (s *System) SetProvider(p Provider) error {
	if p == nil {
		return fmt.Errorf("%w: nil provider", ErrInvalidConfig)
	}
	if !s.provider.CompareAndSwap(nil, &p) {
		return fmt.Errorf("%w: a provider is already set", ErrInvalidConfig)
	}
	return nil
}

// Address returns the system's address: with remoting, the address it is reached at;
// without, troupe://name.
func (s *System) Address() Address {
	if p := s.provider.Load(); p != nil {
		return (*p).Address()
	}
	return Address{System: s.name}
}

// PublishDeadLetter hands a message that could not be delivered to dead letters: it is
// published on the event stream, logged at a bounded rate, and an Ask waiting on it
// fails. Transports use it for messages they cannot deliver.
func (s *System) PublishDeadLetter(recipient Ref, msg any, sender Ref) {
	s.deadLetter(recipient, msg, sender)
}
