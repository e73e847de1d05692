package singletoncore

import (
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/member"
)

// The messages in this file cross the wire between managers, and between proxies and
// managers. They are plain structs with exported fields, registered as Troupe's own
// wire types (see init), which every serialization.Registry knows. Each is also an
// Event for the core that receives
// it: the shell hands what it receives to ManagerCore.Handle or ProxyCore.Handle as is.

// ProxyID identifies one incarnation of a proxy: the member it runs on and its actor
// path there, including the actor's uid (so that a restarted proxy is a new proxy and
// numbers its messages from 1 again). The shell reaches the proxy at Node.Addr + Path.
type ProxyID struct {
	// Node is the member the proxy runs on.
	Node member.UniqueAddress
	// Path is the proxy actor's path on Node, with its uid.
	Path string
}

// IsZero reports whether id is the zero ProxyID.
func (id ProxyID) IsZero() bool { return id == ProxyID{} }

// Payload is one user message on its way to the singleton, serialized by the proxy's
// shell with the system's serialization.Registry so that managers can hold and pass it
// on without knowing its type. Sender is the original sender, so that the singleton's
// replies (and asks through the proxy) reach it, and Trace the trace context it was
// sent in, so that the singleton handles it in that trace.
type Payload struct {
	// Sender is the actor that sent the message to the proxy; zero for none.
	Sender actor.Ref
	// Manifest is the message's registered type name.
	Manifest string
	// Data is the message's encoding.
	Data []byte
	// Trace is the W3C trace context the message was sent to the proxy in, in the
	// shell's binary encoding (internal/tracewire); nil for none, always while
	// tracing is off. The core only carries it; it is left out of the wire
	// encoding when nil, so an untraced message encodes as it did without it.
	Trace []byte `msgpack:",omitempty"`
}

// Envelope carries a Payload from a proxy to the manager that hosts the singleton (and
// from that manager to its successor if the singleton moved meanwhile).
//
// Seq numbers one proxy's messages 1, 2, 3, ... in the order it sent them, without
// gaps: the proxy numbers a message when it sends it, not when it buffers it. The
// messages a proxy sends to one manager, one after the other, form an epoch; After is
// the last Seq the proxy sent before this epoch (0 for its first) and Prev the manager
// it sent that one to. A manager delivers a proxy's messages in Seq order and holds
// back an epoch until the messages before After have been delivered (they come from
// Prev, or from the manager that took over from Prev), or are known to be lost.
type Envelope struct {
	// Proxy is the sending proxy.
	Proxy ProxyID
	// Seq is this message's number in the proxy's sequence, from 1.
	Seq uint64
	// After is the last Seq the proxy sent to another manager before it started to
	// send to this one; 0 when there was none.
	After uint64
	// Prev is the manager that received message After; zero when After is 0.
	Prev member.UniqueAddress
	// Payload is the user message.
	Payload Payload
}

// Batch carries consecutive messages of one proxy in one epoch: Payloads[i] has Seq
// First+i, and every one has the same After and Prev (see Envelope). A proxy sends its
// messages in batches, so that a stream of them costs one wire message per batch; a
// manager handles a Batch exactly as the Envelopes it stands for, one after the other.
// It crosses the wire in the shell's own compact form, not as a registered type.
type Batch struct {
	// Proxy is the sending proxy.
	Proxy ProxyID
	// First is the Seq of Payloads[0], from 1.
	First uint64
	// After is the epoch's After, as in Envelope.
	After uint64
	// Prev is the epoch's Prev, as in Envelope.
	Prev member.UniqueAddress
	// Payloads are the user messages, oldest first.
	Payloads []Payload
}

// Envelope returns the envelope of the i-th message.
func (b Batch) Envelope(i int) Envelope {
	return Envelope{Proxy: b.Proxy, Seq: b.First + uint64(i), After: b.After, Prev: b.Prev, Payload: b.Payloads[i]}
}

// Slice returns the batch of the messages i to j-1.
func (b Batch) Slice(i, j int) Batch {
	b.First += uint64(i)
	b.Payloads = b.Payloads[i:j:j]
	return b
}

// ProxyNext is one row of a manager's delivery table: the next Seq the singleton will
// get from Proxy (every message before it was delivered, or is known to be lost).
type ProxyNext struct {
	// Proxy is the proxy.
	Proxy ProxyID
	// Next is the Seq of the next message to deliver from it.
	Next uint64
}

// HandOverToMe is sent by a manager that has become the oldest to each older member
// that has not yet certified that it stopped the singleton for good; it is resent
// every hand-over retry interval until answered by HandOverInProgress or
// HandOverDone, or until that member is removed.
//
// To names the incarnation it is meant for: a manager of another incarnation on the
// same address (the member restarted) ignores it, as it must not step down for a
// claim that was never meant for it.
type HandOverToMe struct {
	// From is the sending manager's member.
	From member.UniqueAddress
	// To is the member the claim is sent to; zero for any (only in tests).
	To member.UniqueAddress
}

// HandOverInProgress answers HandOverToMe from a manager that is stopping its
// singleton: HandOverDone follows when it has terminated.
type HandOverInProgress struct {
	// From is the sending manager's member.
	From member.UniqueAddress
}

// HandOverDone answers HandOverToMe. It certifies that the sender's singleton has
// terminated and that the sender will never start it again. The manager the sender
// hands over to (its successor) gets everything it held for the singleton (the
// delivery table and the messages, in order); other requesters get the certificate
// alone.
type HandOverDone struct {
	// From is the sending manager's member.
	From member.UniqueAddress
	// Final is false when the sender may still pass on messages that reach it later
	// (Envelope, Relay); a Relay with Final set follows when it has nothing more to
	// pass on. It is always true for a certificate alone.
	Final bool
	// Next is the sender's delivery table.
	Next []ProxyNext
	// Ordered holds messages that are in order and were not yet delivered, oldest
	// first; the receiver delivers them before anything later from the same proxies.
	Ordered []Envelope
	// Held holds messages kept back to restore a proxy's order.
	Held []Envelope
}

// TakeOverFromMe is sent by the manager that hosts the singleton when it stops being
// the oldest (its member is leaving): it asks the new oldest to claim the singleton
// with HandOverToMe. It is resent every hand-over retry interval, a limited number of
// times. The receiver stops counting the sender as a candidate for the oldest.
type TakeOverFromMe struct {
	// From is the sending manager's member.
	From member.UniqueAddress
}

// Relay carries messages from a manager that no longer hosts the singleton to the
// manager it handed over to, when they reach it after its HandOverDone (a delivery
// table and messages that another manager handed to it late). The last Relay a
// manager sends to its successor has Final set: nothing more will come from it.
type Relay struct {
	// From is the sending manager's member.
	From member.UniqueAddress
	// Final is true when the sender has nothing more to pass on.
	Final bool
	// Next is a delivery table, as in HandOverDone.
	Next []ProxyNext
	// Ordered holds messages in order, as in HandOverDone.
	Ordered []Envelope
	// Held holds messages kept back, as in HandOverDone.
	Held []Envelope
}

// HandOverComplete is sent by a manager when it got the Final message (HandOverDone or
// Relay) of a manager that handed over to it: everything that manager passed on has
// arrived. A leaving manager waits for it before its member leaves, so that its
// removal tells the others that nothing it sent is still on the way.
type HandOverComplete struct {
	// From is the sending manager's member.
	From member.UniqueAddress
}

// Identify is sent by a proxy to the manager on the member it believes is the oldest,
// every identification interval until the manager answers that it hosts the
// singleton.
type Identify struct {
	// Proxy is the asking proxy.
	Proxy ProxyID
}

// IdentifyAck is sent by a manager to a proxy: Accepting when the singleton runs
// there and the proxy may send to it (the proxy is then one of the manager's clients
// until it detaches); Departed when the manager will never host the singleton again
// (it handed it over or is stopping), also unsolicited to its clients at that moment,
// so that they look for the new host at once.
type IdentifyAck struct {
	// From is the manager's member.
	From member.UniqueAddress
	// Accepting is true when the manager hosts the singleton now.
	Accepting bool
	// Departed is true when the manager will never host it again.
	Departed bool
}

// Detach is a proxy's last message to a manager it sent to: the proxy turned to
// another manager. A manager whose member is leaving waits until every client has
// detached (or its member is removed), so that nothing a proxy sent it is lost.
type Detach struct {
	// Proxy is the detaching proxy.
	Proxy ProxyID
}

// The messages managers and proxies exchange are Troupe's own wire types, under names
// "troupe.singleton.<Type>.v1": every registry knows them, so they cross remote without
// the application registering them.
func init() {
	wiretypes.MustRegister[Envelope]("troupe.singleton.Envelope.v1")
	wiretypes.MustRegister[HandOverToMe]("troupe.singleton.HandOverToMe.v1")
	wiretypes.MustRegister[HandOverInProgress]("troupe.singleton.HandOverInProgress.v1")
	wiretypes.MustRegister[HandOverDone]("troupe.singleton.HandOverDone.v1")
	wiretypes.MustRegister[TakeOverFromMe]("troupe.singleton.TakeOverFromMe.v1")
	wiretypes.MustRegister[Relay]("troupe.singleton.Relay.v1")
	wiretypes.MustRegister[HandOverComplete]("troupe.singleton.HandOverComplete.v1")
	wiretypes.MustRegister[Identify]("troupe.singleton.Identify.v1")
	wiretypes.MustRegister[IdentifyAck]("troupe.singleton.IdentifyAck.v1")
	wiretypes.MustRegister[Detach]("troupe.singleton.Detach.v1")
}

func (Envelope) singletonEvent()           {}
func (Batch) singletonEvent()              {}
func (HandOverToMe) singletonEvent()       {}
func (HandOverInProgress) singletonEvent() {}
func (HandOverDone) singletonEvent()       {}
func (TakeOverFromMe) singletonEvent()     {}
func (Relay) singletonEvent()              {}
func (HandOverComplete) singletonEvent()   {}
func (Identify) singletonEvent()           {}
func (IdentifyAck) singletonEvent()        {}
func (Detach) singletonEvent()             {}
