package singletoncore

import (
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/member"
)

// childState tracks the singleton the manager started.
type childState uint8

const (
	childNone        childState = iota
	childRunning                // started, not asked to stop
	childTerminating            // sent the termination message, not yet terminated
)

// ManagerCore is the singleton manager's state machine: a plain value without
// goroutines, I/O or clock. The shell (an actor on every member with the role) feeds
// it events with Handle and carries out the decisions it returns, in order.
//
// Inputs: MemberChanged, MemberRemoved, RemovalMarginPassed, SelfDowned, SelfLeaving,
// ChildTerminated, TimerFired, LeaseAcquired, LeaseFailed, LeaseLost, and the wire
// messages HandOverToMe, HandOverInProgress, HandOverDone, TakeOverFromMe, Relay,
// HandOverComplete (from other managers) and Identify, Envelope, Batch, Detach (from
// proxies; managers forward Envelopes too).
//
// Outputs: StartChild, SendTermination, Deliver, DeliverBatch, SendToManager, SendToProxy,
// StartTimer, CancelTimer, StopManager, AcquireLease, ReleaseLease, Alert, Dropped and
// StateChanged.
//
// What it promises: it decides StartChild only in StateOldest, and it enters that state
// only when every member with the role that is older than this one has either been
// removed (a downed one: and the removal margin has passed) or certified with
// HandOverDone that its singleton terminated and will never start again. With a
// lease, StartChild also waits for LeaseAcquired. It delivers each proxy's messages in
// the order the proxy sent them (see Envelope).
type ManagerCore struct {
	self  member.UniqueAddress
	cfg   ManagerConfig
	limit int // hand-over retry limit

	members        memberTable
	awaitingMargin map[member.UniqueAddress]Member // downed and removed, margin not passed
	downedGone     map[member.UniqueAddress]bool   // downed, removed, margin passed
	exitedGone     map[member.UniqueAddress]bool   // removed after leaving
	certified      map[member.UniqueAddress]bool   // sent HandOverDone: never hosts again
	abdicated      map[member.UniqueAddress]bool   // sent TakeOverFromMe: leaving

	state   State
	leaving bool
	downed  bool
	stopped bool
	oldest  member.UniqueAddress

	child        childState
	childGone    bool // the singleton stopped by itself while hosted; not restarted
	leaseHeld    bool
	leasePending bool

	successor  member.UniqueAddress          // the manager this one hands (or handed) over to
	finalSent  bool                          // the successor was told nothing more follows
	finalAcked bool                          // and confirmed it got everything
	requesters map[member.UniqueAddress]bool // others that asked HandOverToMe meanwhile
	inProgress map[member.UniqueAddress]bool // blockers that answered HandOverInProgress
	awaiting   map[member.UniqueAddress]bool // asked HandOverToMe, no HandOverDone yet
	feeders    map[member.UniqueAddress]bool // handed over to this one, may still relay
	takeOverTo member.UniqueAddress          // WasOldest: the member asked to take over
	announced  map[member.UniqueAddress]bool // told that this manager will not host
	retries    int
	alerted    bool
	timers     map[string]bool

	seq     sequencer
	ready   []Envelope // in order, waiting for the singleton to run
	clients map[ProxyID]bool
	pending map[ProxyID]bool // asked Identify while the singleton did not run here

	status Status
	out    []Decision
}

// NewManagerCore returns the manager core for the member self, with the singleton's
// configuration and the cluster's down-removal margin (which sets the retry limit:
// max(cfg.MinHandOverRetries, margin/interval + 3)). It starts in state Start and
// does nothing until self is Up (MemberChanged).
func NewManagerCore(self member.UniqueAddress, cfg ManagerConfig, removalMargin time.Duration) (*ManagerCore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self.Addr == "" || self.UID == 0 {
		return nil, fmt.Errorf("%w: the manager's member %v has no address or uid", ErrInvalidConfig, self)
	}
	if removalMargin < 0 {
		return nil, fmt.Errorf("%w: negative removal margin %v", ErrInvalidConfig, removalMargin)
	}
	cfg = cfg.withDefaults()
	return &ManagerCore{
		self:           self,
		cfg:            cfg,
		limit:          retryLimit(cfg.MinHandOverRetries, cfg.HandOverRetryInterval, removalMargin),
		members:        newMemberTable(cfg.Role),
		awaitingMargin: make(map[member.UniqueAddress]Member),
		downedGone:     make(map[member.UniqueAddress]bool),
		exitedGone:     make(map[member.UniqueAddress]bool),
		certified:      make(map[member.UniqueAddress]bool),
		abdicated:      make(map[member.UniqueAddress]bool),
		requesters:     make(map[member.UniqueAddress]bool),
		inProgress:     make(map[member.UniqueAddress]bool),
		awaiting:       make(map[member.UniqueAddress]bool),
		feeders:        make(map[member.UniqueAddress]bool),
		announced:      make(map[member.UniqueAddress]bool),
		timers:         make(map[string]bool),
		seq:            newSequencer(),
		clients:        make(map[ProxyID]bool),
		pending:        make(map[ProxyID]bool),
	}, nil
}

// RetryLimit returns the number of hand-over retries after which the manager raises
// an Alert; a manager that was the oldest gives up asking for a take-over after
// max(1, RetryLimit()-3) retries.
func (m *ManagerCore) RetryLimit() int { return m.limit }

// Status returns the manager's current status.
func (m *ManagerCore) Status() Status { return m.computeStatus() }

// Handle applies one event and returns the decisions the shell must carry out, in
// order. Events that do not concern the manager are ignored. After StopManager it
// returns nothing, except Dropped for an Envelope or a Batch.
func (m *ManagerCore) Handle(ev Event) []Decision {
	m.out = nil
	if m.stopped {
		switch e := ev.(type) {
		case Envelope:
			m.drop(e, "the singleton's manager has stopped")
		case Batch:
			for i := range e.Payloads {
				m.drop(e.Envelope(i), "the singleton's manager has stopped")
			}
		}
		return m.out
	}
	switch e := ev.(type) {
	case MemberChanged:
		m.onMember(e.Member)
	case MemberRemoved:
		m.onRemoved(e.Node, e.Downed)
	case RemovalMarginPassed:
		m.onMargin(e.Node)
	case SelfDowned:
		m.shutdown()
	case SelfLeaving:
		m.leaving = true
		m.evaluate()
	case ChildTerminated:
		m.onChildTerminated()
	case TimerFired:
		m.onTimer(e.Name)
	case LeaseAcquired:
		m.onLeaseAcquired()
	case LeaseFailed:
		m.leasePending = false
		if m.state == StateOldest && !m.leaseHeld {
			m.startTimer(TimerLeaseRetry)
		}
	case LeaseLost:
		m.onLeaseLost()
	case HandOverToMe:
		if !m.members.removed[e.From] && (e.To == (member.UniqueAddress{}) || e.To == m.self) {
			m.onHandOverToMe(e.From)
		}
	case HandOverInProgress:
		if m.state == StateBecomingOldest && slices.Contains(m.blockers(), e.From) {
			m.inProgress[e.From] = true
			m.checkResends()
		}
	case HandOverDone:
		delete(m.inProgress, e.From)
		delete(m.awaiting, e.From)
		switch gone := m.members.removed[e.From]; {
		case gone:
			// Late from a member that is gone: only its messages matter.
		case e.Final:
			m.certified[e.From] = true
			m.sendTo(e.From, HandOverComplete{From: m.self})
		default:
			m.certified[e.From] = true
			m.feeders[e.From] = true
		}
		m.receiveData(e.Next, e.Ordered, e.Held)
		m.evaluate()
	case TakeOverFromMe:
		if !m.members.removed[e.From] {
			m.onTakeOverFromMe(e.From)
		}
	case Relay:
		m.receiveData(e.Next, e.Ordered, e.Held)
		if e.Final && m.feeders[e.From] {
			delete(m.feeders, e.From)
			m.sendTo(e.From, HandOverComplete{From: m.self})
		}
	case HandOverComplete:
		if e.From == m.successor && m.finalSent {
			m.finalAcked = true
		}
	case Identify:
		m.onIdentify(e.Proxy)
	case Envelope:
		m.onEnvelope(e)
	case Batch:
		m.onBatch(e)
	case Detach:
		delete(m.clients, e.Proxy)
		delete(m.pending, e.Proxy)
	}
	m.maybeFinal()
	if m.homeish() && m.seq.blocked() {
		// What releases held messages may have changed.
		m.dispatch(m.seq.drainAll(m.released))
		m.checkOrderWait()
	}
	m.report()
	return m.out
}

func (m *ManagerCore) emit(d Decision) { m.out = append(m.out, d) }

func (m *ManagerCore) sendTo(to member.UniqueAddress, msg any) {
	switch msg.(type) {
	case HandOverDone, TakeOverFromMe:
		m.announced[to] = true // it knows this manager steps down
	}
	m.emit(SendToManager{To: to, Message: msg})
}

// ---- membership ----

func (m *ManagerCore) onMember(mem Member) {
	if mem.Status == member.Removed {
		prev, known := m.members.get(mem.Node)
		m.onRemoved(mem.Node, known && prev.Status == member.Down)
		return
	}
	if !m.members.update(mem) {
		return
	}
	if mem.Node == m.self {
		switch mem.Status {
		case member.Leaving, member.Exiting:
			m.leaving = true
		case member.Down:
			m.shutdown()
			return
		}
	}
	m.evaluate()
}

func (m *ManagerCore) onRemoved(n member.UniqueAddress, downed bool) {
	if n == m.self {
		m.shutdown()
		return
	}
	mem, known := m.members.remove(n)
	downed = downed || known && mem.Status == member.Down
	if downed && known && !m.downedGone[n] {
		m.awaitingMargin[n] = mem
	}
	if !downed {
		m.exitedGone[n] = true
		m.forgetMarks(n)
	}
	if n == m.successor && m.state == StateEnd {
		// What was sent to it and not yet passed on is lost with it; keep what comes
		// now for whoever asks next.
		m.successor = member.UniqueAddress{}
		m.finalSent, m.finalAcked = false, false
	}
	// The clients on a member that left are forgotten now: what they sent has arrived
	// or is lost with the member's connections, and a proxy that stops after its
	// member left cannot detach any more. Those on a downed member are forgotten
	// after the margin.
	m.forgetProxies(n, !downed)
	delete(m.awaiting, n)
	delete(m.feeders, n)
	m.seq.retire(n)
	m.checkOrderWait()
	m.evaluate()
}

func (m *ManagerCore) onMargin(n member.UniqueAddress) {
	if n == m.self {
		return
	}
	delete(m.awaitingMargin, n)
	m.members.remove(n)
	m.downedGone[n] = true
	m.forgetMarks(n)
	m.forgetProxies(n, true)
	delete(m.awaiting, n)
	delete(m.feeders, n)
	m.seq.retire(n)
	if m.homeish() {
		m.dispatch(m.seq.drainAll(m.released))
	}
	m.checkOrderWait()
	m.evaluate()
}

// forgetMarks forgets what this manager noted about member n, once its removal
// counts and it can be neither a candidate nor a blocker any more.
func (m *ManagerCore) forgetMarks(n member.UniqueAddress) {
	delete(m.certified, n)
	delete(m.abdicated, n)
	delete(m.announced, n)
	delete(m.inProgress, n)
	delete(m.requesters, n)
}

// forgetProxies forgets the proxies on member n that asked Identify, and its clients
// too when clients is set.
func (m *ManagerCore) forgetProxies(n member.UniqueAddress, clients bool) {
	for p := range m.clients {
		if clients && p.Node == n {
			delete(m.clients, p)
		}
	}
	for p := range m.pending {
		if p.Node == n {
			delete(m.pending, p)
		}
	}
}

// excluded reports whether member n may not be taken as the oldest: it certified or
// announced that it will not host the singleton, or it is this member and this member
// is leaving, downed or done.
func (m *ManagerCore) excluded(n member.UniqueAddress) bool {
	if n == m.self {
		return m.leaving || m.downed || m.state == StateEnd || m.state == StateStopping || m.state == StateWasOldest
	}
	return m.certified[n] || m.abdicated[n]
}

// blockers returns the members with the role that are older than this one and have
// neither been removed (for a downed one: with the margin passed) nor certified
// HandOverDone, oldest first.
func (m *ManagerCore) blockers() []member.UniqueAddress {
	self, ok := m.members.get(m.self)
	if !ok {
		return nil
	}
	var bl []Member
	add := func(mem Member) {
		if mem.Node != m.self && mem.UpNumber > 0 && m.members.hasRole(mem) &&
			compareAge(mem, self) < 0 && !m.certified[mem.Node] {
			bl = append(bl, mem)
		}
	}
	for _, mem := range m.members.members {
		add(mem)
	}
	for _, mem := range m.awaitingMargin {
		add(mem)
	}
	slices.SortFunc(bl, compareAge)
	out := make([]member.UniqueAddress, len(bl))
	for i, mem := range bl {
		out[i] = mem.Node
	}
	return out
}

// evaluate recomputes the oldest member and moves the state machine on.
func (m *ManagerCore) evaluate() {
	if m.stopped {
		return
	}
	o, ok := m.members.oldest(m.excluded)
	m.oldest = member.UniqueAddress{}
	if ok {
		m.oldest = o.Node
	}
	isSelf := ok && o.Node == m.self
	switch m.state {
	case StateStart:
		self, known := m.members.get(m.self)
		if !known || self.Status != member.Up || m.leaving || m.downed {
			return
		}
		if isSelf {
			m.claim()
		} else {
			m.state = StateYounger
		}
	case StateYounger:
		if isSelf {
			m.claim()
		}
	case StateBecomingOldest:
		switch {
		case isSelf:
			if len(m.blockers()) == 0 {
				m.becomeOldest()
			}
		case ok && m.leaving:
			// Hand what this manager holds to the new oldest when it asks.
			m.cancelTimer(TimerHandOverRetry)
			m.toWasOldest(o.Node)
		case !ok:
			m.cancelTimer(TimerHandOverRetry)
			m.toEnd(member.UniqueAddress{})
		default:
			// An older member appeared: pass on what this manager holds.
			m.cancelTimer(TimerHandOverRetry)
			m.state = StateYounger
			m.relayData(o.Node)
		}
	case StateOldest:
		switch {
		case isSelf:
		case ok:
			m.toWasOldest(o.Node)
		default:
			m.toHandingOver(member.UniqueAddress{})
		}
	case StateWasOldest:
		switch {
		case ok && !isSelf && o.Node != m.takeOverTo:
			m.takeOverTo = o.Node
			m.retries = 0
			m.sendTo(o.Node, TakeOverFromMe{From: m.self})
		case !ok:
			m.toHandingOver(member.UniqueAddress{})
		}
	}
	m.announce()
}

// announce tells every candidate that this manager will never host the singleton,
// once it is so and it does not host it (End, or leaving in Start or Younger): its
// member may stay Up in the others' eyes for a while (until the singleton phase of its
// shutdown is over), and they must not wait for it as the oldest.
func (m *ManagerCore) announce() {
	if m.state != StateEnd && !(m.leaving && (m.state == StateStart || m.state == StateYounger)) {
		return
	}
	var to []member.UniqueAddress
	for n, mem := range m.members.members {
		// The successor knows, and members that stepped down do not need to.
		if n != m.self && n != m.successor && !m.announced[n] && !m.certified[n] && !m.abdicated[n] &&
			m.members.candidate(mem) {
			to = append(to, n)
		}
	}
	slices.SortFunc(to, member.CompareAddress)
	for _, n := range to {
		m.announced[n] = true
		m.sendTo(n, TakeOverFromMe{From: m.self})
	}
}

// claim is called when this member has become the oldest (from Start or Younger).
func (m *ManagerCore) claim() {
	m.retries, m.alerted = 0, false
	clear(m.inProgress)
	bl := m.blockers()
	if len(bl) == 0 {
		m.becomeOldest()
		return
	}
	m.state = StateBecomingOldest
	for _, b := range bl {
		if _, gone := m.awaitingMargin[b]; !gone {
			m.awaiting[b] = true
			m.sendTo(b, HandOverToMe{From: m.self, To: b})
		}
	}
	m.startTimer(TimerHandOverRetry)
}

func (m *ManagerCore) becomeOldest() {
	m.cancelTimer(TimerHandOverRetry)
	m.state = StateOldest
	m.tryStartChild()
}

// checkResends stops the hand-over retries while every blocker has answered
// HandOverInProgress.
func (m *ManagerCore) checkResends() {
	for _, b := range m.blockers() {
		if !m.inProgress[b] {
			return
		}
	}
	m.cancelTimer(TimerHandOverRetry)
}

func (m *ManagerCore) tryStartChild() {
	if m.state != StateOldest || m.child != childNone || m.childGone {
		return
	}
	if m.cfg.UseLease && !m.leaseHeld {
		if !m.leasePending {
			m.leasePending = true
			m.emit(AcquireLease{})
		}
		return
	}
	m.cancelTimer(TimerLeaseRetry)
	m.emit(StartChild{})
	m.child = childRunning
	for _, e := range m.ready {
		m.emit(Deliver{Envelope: e})
	}
	m.ready = nil
	for _, p := range sortedProxies(m.pending) {
		m.clients[p] = true
		m.emit(SendToProxy{To: p, Message: IdentifyAck{From: m.self, Accepting: true}})
	}
	clear(m.pending)
}

func (m *ManagerCore) toWasOldest(o member.UniqueAddress) {
	m.state = StateWasOldest
	m.takeOverTo = o
	m.retries, m.alerted = 0, false
	m.sendTo(o, TakeOverFromMe{From: m.self})
	m.startTimer(TimerTakeOverRetry)
}

// toHandingOver stops the singleton for a hand-over to succ (zero: to whoever asks).
func (m *ManagerCore) toHandingOver(succ member.UniqueAddress) {
	m.cancelTimer(TimerTakeOverRetry)
	m.cancelTimer(TimerHandOverRetry)
	m.cancelTimer(TimerLeaseRetry)
	m.state = StateHandingOver
	if succ != (member.UniqueAddress{}) {
		m.successor = succ
		m.sendTo(succ, HandOverInProgress{From: m.self})
	}
	switch m.child {
	case childRunning:
		m.emit(SendTermination{})
		m.child = childTerminating
	case childNone:
		m.finishHandOver()
	}
}

// finishHandOver runs once the singleton has terminated in HandingOver.
func (m *ManagerCore) finishHandOver() {
	m.releaseLease()
	if m.successor != (member.UniqueAddress{}) {
		m.handData(m.successor)
	}
	for _, r := range sortedNodes(m.requesters) {
		if r != m.successor {
			m.sendTo(r, HandOverDone{From: m.self, Final: true})
		}
	}
	clear(m.requesters)
	m.toEnd(m.successor)
}

// toEnd makes this manager one that will never host the singleton again.
func (m *ManagerCore) toEnd(succ member.UniqueAddress) {
	m.cancelTimers()
	m.state = StateEnd
	m.successor = succ
	m.notifyDeparted()
	m.announce()
	if succ != (member.UniqueAddress{}) {
		m.relayData(succ)
	} else {
		m.checkOrderWait()
	}
}

// notifyDeparted tells the clients and the proxies waiting for an answer that this
// manager will not host the singleton again.
func (m *ManagerCore) notifyDeparted() {
	ps := make(map[ProxyID]bool, len(m.clients)+len(m.pending))
	for p := range m.clients {
		ps[p] = true
	}
	for p := range m.pending {
		ps[p] = true
	}
	for _, p := range sortedProxies(ps) {
		m.emit(SendToProxy{To: p, Message: IdentifyAck{From: m.self, Departed: true}})
	}
	clear(m.pending)
}

// shutdown handles this member being downed or removed: stop the singleton, then the
// manager.
func (m *ManagerCore) shutdown() {
	if m.downed {
		return
	}
	m.downed = true
	m.cancelTimers()
	m.state = StateStopping
	m.notifyDeparted()
	switch m.child {
	case childRunning:
		m.emit(SendTermination{})
		m.child = childTerminating
	case childNone:
		m.stop()
	}
}

// stop ends the manager: what it still holds is dropped.
func (m *ManagerCore) stop() {
	_, ordered, held := m.takeData()
	for _, e := range append(ordered, held...) {
		m.drop(e, "this member was downed or removed")
	}
	for _, r := range sortedNodes(m.requesters) {
		m.sendTo(r, HandOverDone{From: m.self, Final: true})
	}
	clear(m.requesters)
	m.releaseLease()
	m.emit(StopManager{})
	m.stopped = true
}

// ---- hand-over messages ----

func (m *ManagerCore) onHandOverToMe(from member.UniqueAddress) {
	switch m.state {
	case StateStart, StateYounger, StateBecomingOldest:
		// from counts this member as gone (leaving, downed or done): it never hosted
		// the singleton and never will. Pass on what older managers handed over so
		// far; what they hand over later is relayed from End.
		m.cancelTimer(TimerHandOverRetry)
		m.handData(from)
		m.toEnd(from)
	case StateOldest, StateWasOldest:
		m.toHandingOver(from)
	case StateHandingOver:
		if m.successor == (member.UniqueAddress{}) {
			m.successor = from
		} else if from != m.successor {
			m.requesters[from] = true
		}
		m.sendTo(from, HandOverInProgress{From: m.self})
	case StateStopping:
		m.requesters[from] = true
		m.sendTo(from, HandOverInProgress{From: m.self})
	case StateEnd:
		switch m.successor {
		case member.UniqueAddress{}:
			m.successor = from
			m.handData(from)
			m.checkOrderWait()
		case from:
			// The successor asks again (it collects from every member that steps
			// down): Final only once it was sent, which this follows.
			m.sendTo(from, HandOverDone{From: m.self, Final: m.finalSent})
		default:
			m.sendTo(from, HandOverDone{From: m.self, Final: true})
		}
	}
}

func (m *ManagerCore) onTakeOverFromMe(from member.UniqueAddress) {
	m.abdicated[from] = true
	switch m.state {
	case StateBecomingOldest:
		if slices.Contains(m.blockers(), from) {
			delete(m.inProgress, from)
			m.awaiting[from] = true
			m.sendTo(from, HandOverToMe{From: m.self, To: from})
			m.startTimer(TimerHandOverRetry)
		}
	case StateOldest:
		// from holds messages for the singleton (it was becoming the oldest when it
		// started to leave): collect them.
		m.awaiting[from] = true
		m.sendTo(from, HandOverToMe{From: m.self, To: from})
	}
	m.evaluate()
}
