package singletoncore

import (
	"time"

	"github.com/troupe-go/troupe/member"
)

// Event is an input to ManagerCore.Handle or ProxyCore.Handle: a membership change,
// a message from another manager or a proxy (the wire messages are events too), the
// singleton's termination, a timer, a lease outcome, or a user message for a proxy.
// A core ignores the events that do not concern it.
type Event interface {
	singletonEvent()
}

// Member is one cluster member as the cores need it, filled in by the shell from the
// cluster's events: its identity, status, age and roles.
type Member struct {
	// Node is the member's identity.
	Node member.UniqueAddress
	// Status is the member's status.
	Status member.MemberStatus
	// UpNumber is the member's age: lower is older; 0 until it is Up.
	UpNumber int64
	// Roles are the member's roles.
	Roles []string
}

// MemberChanged says a member was seen, or its status changed. The shell feeds the
// current members first (one MemberChanged each, the member itself included) and then
// every change. A member only counts for the singleton while it is Up or Leaving and
// has the role; Joining members have no age yet and Exiting members are handing over.
type MemberChanged struct {
	// Member is the member as it is now.
	Member Member
}

// MemberRemoved says a member is gone for good. Downed is true when it was downed
// rather than having left: the manager then counts the removal only after
// RemovalMarginPassed, so that a downed member on the other side of a partition has
// stopped its singleton first.
type MemberRemoved struct {
	// Node is the removed member.
	Node member.UniqueAddress
	// Downed is true when the member was Down before it was removed.
	Downed bool
}

// RemovalMarginPassed says the down-removal margin has passed since a downed member
// was removed: its singleton has stopped by now, and the manager may take over.
type RemovalMarginPassed struct {
	// Node is the removed member.
	Node member.UniqueAddress
}

// SelfDowned says this member was downed: the manager stops its singleton and then
// itself (state Stopping).
type SelfDowned struct{}

// SelfLeaving says this member is leaving the cluster (coordinated shutdown): the
// manager hands the singleton over to the next oldest, and reports Finished when this
// member may leave without losing anything.
type SelfLeaving struct{}

// ChildTerminated says the singleton the manager started (StartChild) has terminated.
type ChildTerminated struct{}

// TimerFired says the timer with Name (see StartTimer) fired.
type TimerFired struct {
	// Name is the timer's name.
	Name string
}

// LeaseAcquired says AcquireLease succeeded: the manager holds the lease.
type LeaseAcquired struct{}

// LeaseFailed says AcquireLease did not succeed (another owner holds the lease, or the
// store could not be reached); the manager retries after the hand-over retry interval.
type LeaseFailed struct{}

// LeaseLost says the lease the manager held was lost (the lease's loss callback ran).
type LeaseLost struct{}

// Send is a user message for the singleton, given to the proxy.
type Send struct {
	// Payload is the message with its sender.
	Payload Payload
}

// SendMany is user messages for the singleton, given to the proxy at once, oldest
// first: the proxy handles them as one Send each, but sends those it may send now in
// one Batch. The proxy keeps Payloads (it may buffer them or send them on): the
// caller must not change the slice afterwards.
type SendMany struct {
	// Payloads are the messages with their senders.
	Payloads []Payload
}

// ProxyStopping says the proxy is stopping (its actor stops, or its member leaves):
// it detaches from the manager it sends to, which then knows that nothing more comes
// from it, and drops what is still buffered. The shell should let the buffer drain
// first (ProxyStatus.Buffered), within its shutdown timeout.
type ProxyStopping struct{}

func (MemberChanged) singletonEvent()       {}
func (MemberRemoved) singletonEvent()       {}
func (RemovalMarginPassed) singletonEvent() {}
func (SelfDowned) singletonEvent()          {}
func (SelfLeaving) singletonEvent()         {}
func (ChildTerminated) singletonEvent()     {}
func (TimerFired) singletonEvent()          {}
func (LeaseAcquired) singletonEvent()       {}
func (LeaseFailed) singletonEvent()         {}
func (LeaseLost) singletonEvent()           {}
func (Send) singletonEvent()                {}
func (SendMany) singletonEvent()            {}
func (ProxyStopping) singletonEvent()       {}

// Timer names used in StartTimer, CancelTimer and TimerFired.
const (
	// TimerHandOverRetry resends HandOverToMe while the manager is BecomingOldest.
	TimerHandOverRetry = "hand-over-retry"
	// TimerTakeOverRetry resends TakeOverFromMe while the manager is WasOldest.
	TimerTakeOverRetry = "take-over-retry"
	// TimerLeaseRetry retries acquiring the lease.
	TimerLeaseRetry = "lease-retry"
	// TimerOrderWait counts how long the manager has held messages back to restore a
	// proxy's order, and gives up after the retry limit; it also forgets, after the
	// same limit, what it knew of proxies whose member was removed.
	TimerOrderWait = "order-wait"
	// TimerIdentify resends a proxy's Identify.
	TimerIdentify = "identify"
)

// Decision is an output of ManagerCore.Handle or ProxyCore.Handle: something the
// shell must do, in the order given.
type Decision interface {
	singletonDecision()
}

// StartChild tells the manager's shell to spawn the singleton from the singleton's Props.
// Deliver decisions for it may follow in the same batch: the shell spawns at once,
// so that they are queued in the new actor's mailbox.
type StartChild struct{}

// SendTermination tells the manager's shell to send the termination message to the
// singleton. No Deliver follows until the singleton has terminated.
type SendTermination struct{}

// Deliver tells the manager's shell to decode Envelope.Payload and send it to the
// singleton with Payload.Sender as the sender. A payload that does not decode is a
// dead letter.
type Deliver struct {
	// Envelope is the message.
	Envelope Envelope
}

// DeliverBatch tells the manager's shell to deliver the messages of Batch in order, as
// one Deliver for each of Batch.Envelopes would.
type DeliverBatch struct {
	// Batch holds the messages.
	Batch Batch
}

// SendToManager tells the shell to send Message to the manager of this singleton on
// member To.
type SendToManager struct {
	// To is the member whose manager gets the message.
	To member.UniqueAddress
	// Message is one of the wire messages (HandOverToMe, Envelope, Batch, Identify, ...).
	Message any
}

// SendToProxy tells the manager's shell to send Message to the proxy To.
type SendToProxy struct {
	// To is the proxy.
	To ProxyID
	// Message is IdentifyAck.
	Message any
}

// StartTimer tells the shell to start (or restart) the repeating timer Name, which
// fires every Interval until CancelTimer: each firing is fed back as TimerFired.
type StartTimer struct {
	// Name is the timer's name, one of the Timer constants.
	Name string
	// Interval is the time between firings.
	Interval time.Duration
}

// CancelTimer tells the shell to cancel the timer Name. A firing already queued may
// still arrive; the cores ignore it.
type CancelTimer struct {
	// Name is the timer's name.
	Name string
}

// StopManager tells the manager's shell to stop the manager: its singleton has
// terminated (or never ran) and there is nothing left for it to do.
type StopManager struct{}

// AcquireLease tells the manager's shell to call Lease.Acquire and feed back
// LeaseAcquired or LeaseFailed, and later LeaseLost if the lease's loss callback runs.
type AcquireLease struct{}

// ReleaseLease tells the manager's shell to call Lease.Release.
type ReleaseLease struct{}

// Alert tells the shell to log Message at error level: something is stuck or was
// given up (a hand-over past its retry limit, order restoration given up).
type Alert struct {
	// Message says what happened.
	Message string
}

// Dropped tells the shell that a message will not reach the singleton: it publishes a
// dead letter for Payload (recipient: the singleton, the reason given), counts it, and
// logs it with a rate limit.
type Dropped struct {
	// Proxy is the proxy the message came through.
	Proxy ProxyID
	// Payload is the message.
	Payload Payload
	// Reason says why it was dropped.
	Reason string
}

// StateChanged reports a change of the manager's Status, for tests and the management
// page.
type StateChanged struct {
	// Status is the manager's status now.
	Status Status
}

// ProxyStateChanged reports a change of the proxy's ProxyStatus.
type ProxyStateChanged struct {
	// Status is the proxy's status now.
	Status ProxyStatus
}

func (StartChild) singletonDecision()        {}
func (SendTermination) singletonDecision()   {}
func (Deliver) singletonDecision()           {}
func (DeliverBatch) singletonDecision()      {}
func (SendToManager) singletonDecision()     {}
func (SendToProxy) singletonDecision()       {}
func (StartTimer) singletonDecision()        {}
func (CancelTimer) singletonDecision()       {}
func (StopManager) singletonDecision()       {}
func (AcquireLease) singletonDecision()      {}
func (ReleaseLease) singletonDecision()      {}
func (Alert) singletonDecision()             {}
func (Dropped) singletonDecision()           {}
func (StateChanged) singletonDecision()      {}
func (ProxyStateChanged) singletonDecision() {}
