package singletoncore

import (
	"fmt"
	"slices"

	"github.com/troupe-go/troupe/member"
)

// How the manager delivers, holds and passes on the messages proxies send to the
// singleton, and reports its status.

// accepting reports whether the singleton runs here and takes messages.
func (m *ManagerCore) accepting() bool {
	return (m.state == StateOldest || m.state == StateWasOldest) && m.child == childRunning
}

// homeish reports whether messages for the singleton stay here (delivered, or held in
// order) rather than being passed on.
func (m *ManagerCore) homeish() bool {
	switch m.state {
	case StateBecomingOldest, StateOldest, StateWasOldest, StateHandingOver:
		return true
	case StateEnd:
		return m.successor == (member.UniqueAddress{})
	}
	return false
}

// released reports whether nothing more can come from the manager on n (the Prev of a
// held message): it was downed and removed and the margin passed, or it left (or was
// removed before this member joined: this member knew every member when it became
// Up) and nothing is owed to this manager any more (the managers that hand over to it
// confirmed they passed everything on, see HandOverComplete).
func (m *ManagerCore) released(n member.UniqueAddress) bool {
	if m.downedGone[n] {
		return true
	}
	_, known := m.members.get(n)
	_, waiting := m.awaitingMargin[n]
	gone := m.exitedGone[n] || !known && !waiting && !m.members.removed[n]
	return gone && len(m.awaiting) == 0 && len(m.feeders) == 0
}

func (m *ManagerCore) gone(n member.UniqueAddress) bool { return m.members.removed[n] }

func (m *ManagerCore) onIdentify(p ProxyID) {
	if m.members.removed[p.Node] {
		return // a late message from a member that is gone
	}
	switch {
	case m.accepting():
		m.clients[p] = true
		m.emit(SendToProxy{To: p, Message: IdentifyAck{From: m.self, Accepting: true}})
	case m.state == StateEnd || m.state == StateStopping:
		m.emit(SendToProxy{To: p, Message: IdentifyAck{From: m.self, Departed: true}})
	default:
		m.pending[p] = true
	}
}

func (m *ManagerCore) onEnvelope(e Envelope) {
	switch {
	case m.state == StateStopping:
		m.drop(e, "this member was downed or removed")
	case m.state == StateEnd && m.successor != (member.UniqueAddress{}):
		m.sendTo(m.successor, e)
	case m.homeish():
		m.dispatch(m.seq.add(e, m.released))
		m.enforceLimit()
		m.checkOrderWait()
	default:
		m.drop(e, "the singleton is not hosted by this member")
	}
}

// onBatch handles b as its envelopes, one after the other. When the singleton runs
// here, nothing is queued and nothing of the proxy is held back, and b's first
// message is in order, all of b is (its Seqs follow each other): it is delivered in
// one decision.
func (m *ManagerCore) onBatch(b Batch) {
	if len(b.Payloads) == 0 {
		return
	}
	if m.accepting() && len(m.ready) == 0 && m.seq.inOrder(b.Envelope(0), m.released) {
		m.seq.advance(b.Proxy, b.First+uint64(len(b.Payloads))-1)
		m.emit(DeliverBatch{Batch: b})
		m.checkOrderWait()
		return
	}
	for i := range b.Payloads {
		m.onEnvelope(b.Envelope(i))
	}
}

// receiveData takes a delivery table and messages handed over by another manager.
func (m *ManagerCore) receiveData(next []ProxyNext, ordered, held []Envelope) {
	if len(next) == 0 && len(ordered) == 0 && len(held) == 0 {
		return
	}
	switch {
	case m.homeish():
		for _, e := range ordered {
			m.seq.advance(e.Proxy, e.Seq)
			m.dispatch([]Envelope{e})
		}
		m.seq.merge(next, m.gone)
		for _, e := range held {
			m.dispatch(m.seq.add(e, m.released))
		}
		m.dispatch(m.seq.drainAll(m.released))
		m.enforceLimit()
		m.checkOrderWait()
	case m.state == StateEnd:
		m.sendTo(m.successor, Relay{From: m.self, Next: next, Ordered: ordered, Held: held})
	case m.state == StateStopping:
		for _, e := range append(slices.Clone(ordered), held...) {
			m.drop(e, "this member was downed or removed")
		}
	default:
		if m.oldest != (member.UniqueAddress{}) && m.oldest != m.self {
			m.sendTo(m.oldest, Relay{From: m.self, Next: next, Ordered: ordered, Held: held})
			return
		}
		for _, e := range append(slices.Clone(ordered), held...) {
			m.drop(e, "the singleton is not hosted by this member")
		}
	}
}

// dispatch delivers messages that are in order, or queues them until the singleton
// runs.
func (m *ManagerCore) dispatch(es []Envelope) {
	for _, e := range es {
		switch {
		case m.accepting():
			m.emit(Deliver{Envelope: e})
		case m.childGone && (m.state == StateOldest || m.state == StateWasOldest):
			m.drop(e, "the singleton stopped")
		default:
			m.ready = append(m.ready, e)
		}
	}
}

// enforceLimit keeps what the manager holds within ManagerConfig.BufferSize: it gives up
// restoring the order of the proxy with the most held messages first, then drops the
// oldest queued messages.
func (m *ManagerCore) enforceLimit() {
	for len(m.ready)+m.seq.count > m.cfg.BufferSize && m.seq.blocked() {
		p, _ := m.seq.largest()
		m.emit(Alert{Message: fmt.Sprintf("singleton %q: buffer of %d full; gave up waiting for earlier messages "+
			"from proxy %v/%s", m.cfg.Name, m.cfg.BufferSize, p.Node, p.Path)})
		m.dispatch(m.seq.force(p, m.released))
	}
	for len(m.ready) > m.cfg.BufferSize {
		e := m.ready[0]
		m.ready = m.ready[1:]
		m.drop(e, fmt.Sprintf("the manager's buffer of %d messages is full", m.cfg.BufferSize))
	}
}

// checkOrderWait runs the order-wait timer while messages are held back or rows of
// departed proxies are retiring.
func (m *ManagerCore) checkOrderWait() {
	if m.seq.needsTicks() && m.homeish() {
		m.startTimer(TimerOrderWait)
	} else {
		m.cancelTimer(TimerOrderWait)
	}
}

// takeData removes and returns everything the manager holds for the singleton.
func (m *ManagerCore) takeData() (next []ProxyNext, ordered, held []Envelope) {
	next, ordered, held = m.seq.table(), m.ready, m.seq.heldList()
	m.seq.reset()
	m.ready = nil
	m.cancelTimer(TimerOrderWait)
	return next, ordered, held
}

// handData sends HandOverDone with everything the manager holds to to, its
// successor.
func (m *ManagerCore) handData(to member.UniqueAddress) {
	next, ordered, held := m.takeData()
	final := m.drained()
	m.finalSent = final
	m.sendTo(to, HandOverDone{From: m.self, Final: final, Next: next, Ordered: ordered, Held: held})
}

// drained reports whether nothing more can reach this manager for the singleton: no
// proxy is attached to it, and no manager it asked or that handed over to it may
// still send data.
func (m *ManagerCore) drained() bool {
	return len(m.clients) == 0 && len(m.awaiting) == 0 && len(m.feeders) == 0
}

// maybeFinal tells the successor that nothing more will come, once that is so.
func (m *ManagerCore) maybeFinal() {
	if m.state == StateEnd && m.successor != (member.UniqueAddress{}) && !m.finalSent && m.drained() {
		m.finalSent = true
		m.sendTo(m.successor, Relay{From: m.self, Final: true})
	}
}

// relayData passes everything the manager holds to the manager on member to.
func (m *ManagerCore) relayData(to member.UniqueAddress) {
	next, ordered, held := m.takeData()
	if len(next) > 0 || len(ordered) > 0 || len(held) > 0 {
		m.sendTo(to, Relay{From: m.self, Next: next, Ordered: ordered, Held: held})
	}
}

func (m *ManagerCore) drop(e Envelope, reason string) {
	m.emit(Dropped{Proxy: e.Proxy, Payload: e.Payload, Reason: reason})
}

// ---- status ----

func (m *ManagerCore) computeStatus() Status {
	held := len(m.ready) > 0 || m.seq.blocked()
	noSuccessor := m.successor == (member.UniqueAddress{})
	finished := m.stopped || m.leaving && m.child == childNone && (m.state == StateStart ||
		m.state == StateYounger && len(m.awaiting) == 0 ||
		m.state == StateEnd && !noSuccessor && m.finalSent && m.finalAcked ||
		// Nothing held, or nobody left to take it (it is dropped at the removal).
		m.state == StateEnd && noSuccessor && m.drained() && (!held || m.oldest == (member.UniqueAddress{})))
	return Status{State: m.state, Oldest: m.oldest, ChildRunning: m.child != childNone, Finished: finished}
}

func (m *ManagerCore) report() {
	if s := m.computeStatus(); s != m.status {
		m.status = s
		m.emit(StateChanged{Status: s})
	}
}

func sortedNodes(set map[member.UniqueAddress]bool) []member.UniqueAddress {
	out := make([]member.UniqueAddress, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.SortFunc(out, member.CompareAddress)
	return out
}

func sortedProxies(set map[ProxyID]bool) []ProxyID {
	out := make([]ProxyID, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.SortFunc(out, compareProxy)
	return out
}
