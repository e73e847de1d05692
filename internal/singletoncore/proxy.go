package singletoncore

import (
	"fmt"

	"github.com/troupe-go/troupe/member"
)

// ProxyCore is the singleton proxy's routing and buffering: a plain value without
// goroutines, I/O or clock. The shell (a local actor on any member, with the role or
// not) serializes each user message into a Payload, feeds it as Send, feeds the
// cluster's membership and what managers send it, and carries out the decisions.
//
// Inputs: MemberChanged, MemberRemoved, RemovalMarginPassed, Send, SendMany,
// IdentifyAck, TimerFired (TimerIdentify) and ProxyStopping.
//
// Outputs: SendToManager (Identify, Batch, Detach), StartTimer, CancelTimer,
// Dropped and ProxyStateChanged.
//
// The proxy sends to the manager on the oldest member with the role (Up or Leaving,
// not counting members whose manager said it departed). It asks that manager with
// Identify every identification interval until it answers that it hosts the
// singleton, and buffers messages meanwhile (the oldest is dropped when the buffer is
// full). When the oldest changes, or its manager departs, the proxy sends Detach to
// the manager it was sending to and identifies the new one. It numbers the messages
// it sends (Envelope.Seq) so that managers can keep them in order across a hand-over,
// and sends what it may send at once in one Batch: the messages of one SendMany, or
// the whole buffer when the manager answers.
type ProxyCore struct {
	self     ProxyID
	cfg      ProxyConfig
	capacity int

	members  memberTable
	departed map[member.UniqueAddress]bool

	target     member.UniqueAddress
	identified bool
	timer      bool

	buf     []Payload // ring buffer of capacity entries
	head    int
	size    int
	dropped uint64

	lastSeq uint64               // the last Seq sent
	lastTo  member.UniqueAddress // the manager that got it
	after   uint64               // the current epoch's After
	prev    member.UniqueAddress // the current epoch's Prev

	stopped bool
	status  ProxyStatus
	out     []Decision
}

// NewProxyCore returns the proxy core for the proxy self.
func NewProxyCore(self ProxyID, cfg ProxyConfig) (*ProxyCore, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self.Node.Addr == "" || self.Node.UID == 0 || self.Path == "" {
		return nil, fmt.Errorf("%w: incomplete proxy id %v", ErrInvalidConfig, self)
	}
	cfg = cfg.withDefaults()
	n := cfg.capacity()
	return &ProxyCore{
		self:     self,
		cfg:      cfg,
		capacity: n,
		members:  newMemberTable(cfg.Role),
		departed: make(map[member.UniqueAddress]bool),
		buf:      make([]Payload, 0, min(n, 64)),
	}, nil
}

// Status returns the proxy's current status.
func (p *ProxyCore) Status() ProxyStatus {
	return ProxyStatus{Target: p.target, Identified: p.identified, Buffered: p.size, Dropped: p.dropped}
}

// Handle applies one event and returns the decisions the shell must carry out, in
// order. Events that do not concern the proxy are ignored; after ProxyStopping, Send
// is answered with Dropped and everything else is ignored.
func (p *ProxyCore) Handle(ev Event) []Decision {
	p.out = nil
	if p.stopped {
		switch e := ev.(type) {
		case Send:
			p.dropStopped(e.Payload)
		case SendMany:
			for _, m := range e.Payloads {
				p.dropStopped(m)
			}
		case IdentifyAck:
			if e.Accepting {
				// It counts this proxy as a client until it detaches.
				p.emit(SendToManager{To: e.From, Message: Detach{Proxy: p.self}})
			}
		}
		return p.out
	}
	switch e := ev.(type) {
	case MemberChanged:
		if e.Member.Status == member.Removed {
			p.members.remove(e.Member.Node)
		} else {
			p.members.update(e.Member)
		}
		p.retarget()
	case MemberRemoved:
		p.members.remove(e.Node)
		delete(p.departed, e.Node)
		p.retarget()
	case RemovalMarginPassed:
		p.members.remove(e.Node)
		delete(p.departed, e.Node)
		p.retarget()
	case Send:
		p.onSend(e.Payload)
	case SendMany:
		if p.identified {
			p.send(e.Payloads)
		} else {
			for _, m := range e.Payloads {
				p.onSend(m)
			}
		}
	case IdentifyAck:
		p.onAck(e)
	case ProxyStopping:
		p.stop()
	case TimerFired:
		if e.Name == TimerIdentify && p.timer && !p.identified && p.target != (member.UniqueAddress{}) {
			p.emit(SendToManager{To: p.target, Message: Identify{Proxy: p.self}})
		}
	}
	if s := p.Status(); s != p.status {
		p.status = s
		p.emit(ProxyStateChanged{Status: s})
	}
	return p.out
}

func (p *ProxyCore) emit(d Decision) { p.out = append(p.out, d) }

// retarget turns to the oldest candidate, if it changed.
func (p *ProxyCore) retarget() {
	var next member.UniqueAddress
	if o, ok := p.members.oldest(func(n member.UniqueAddress) bool { return p.departed[n] }); ok {
		next = o.Node
	}
	if next == p.target {
		return
	}
	if p.identified {
		p.emit(SendToManager{To: p.target, Message: Detach{Proxy: p.self}})
		p.identified = false
	}
	p.target = next
	if next == (member.UniqueAddress{}) {
		if p.timer {
			p.timer = false
			p.emit(CancelTimer{Name: TimerIdentify})
		}
		return
	}
	p.emit(SendToManager{To: next, Message: Identify{Proxy: p.self}})
	if !p.timer {
		p.timer = true
		p.emit(StartTimer{Name: TimerIdentify, Interval: p.cfg.IdentificationInterval})
	}
}

func (p *ProxyCore) onAck(a IdentifyAck) {
	if a.Departed {
		p.departed[a.From] = true
		p.retarget()
		return
	}
	if !a.Accepting {
		return
	}
	if a.From != p.target {
		// A late answer from a manager this proxy turned away from: it counts the
		// proxy as a client until it detaches.
		p.emit(SendToManager{To: a.From, Message: Detach{Proxy: p.self}})
		return
	}
	if p.identified {
		return
	}
	p.identified = true
	if p.timer {
		p.timer = false
		p.emit(CancelTimer{Name: TimerIdentify})
	}
	if p.size == 0 {
		return
	}
	ms := make([]Payload, 0, p.size)
	for p.size > 0 {
		ms = append(ms, p.buf[p.head])
		p.buf[p.head] = Payload{}
		p.head = (p.head + 1) % p.capacity
		p.size--
	}
	p.head = 0
	p.buf = p.buf[:0]
	p.send(ms)
}

func (p *ProxyCore) onSend(m Payload) {
	if p.identified {
		p.send([]Payload{m})
		return
	}
	if p.capacity == 0 {
		p.dropped++
		p.emit(Dropped{Proxy: p.self, Payload: m, Reason: "the singleton's location is unknown and the proxy has no buffer"})
		return
	}
	if p.size == p.capacity {
		old := p.buf[p.head]
		p.buf[p.head] = m
		p.head = (p.head + 1) % p.capacity
		p.dropped++
		p.emit(Dropped{Proxy: p.self, Payload: old,
			Reason: fmt.Sprintf("the proxy's buffer of %d messages is full", p.capacity)})
		return
	}
	if len(p.buf) < p.capacity {
		// The ring grows until it reaches its capacity; it is contiguous until then.
		p.buf = append(p.buf, m)
	} else {
		p.buf[(p.head+p.size)%p.capacity] = m
	}
	p.size++
}

// stop detaches from the target (also when its answer to Identify is still on the
// way: it may count this proxy as a client) and drops the buffer.
func (p *ProxyCore) stop() {
	p.stopped = true
	if p.target != (member.UniqueAddress{}) {
		p.emit(SendToManager{To: p.target, Message: Detach{Proxy: p.self}})
		p.identified = false
	}
	if p.timer {
		p.timer = false
		p.emit(CancelTimer{Name: TimerIdentify})
	}
	for ; p.size > 0; p.size-- {
		m := p.buf[p.head]
		p.buf[p.head] = Payload{}
		p.head = (p.head + 1) % p.capacity
		p.dropped++
		p.emit(Dropped{Proxy: p.self, Payload: m, Reason: "the proxy stopped"})
	}
	p.head = 0
	p.buf = p.buf[:0]
}

// send numbers ms and sends them to the identified target, in one Batch.
func (p *ProxyCore) send(ms []Payload) {
	if len(ms) == 0 {
		return
	}
	if p.target != p.lastTo {
		// A new epoch: the messages so far went elsewhere.
		p.after, p.prev = p.lastSeq, p.lastTo
		p.lastTo = p.target
	}
	b := Batch{Proxy: p.self, First: p.lastSeq + 1, After: p.after, Prev: p.prev, Payloads: ms}
	p.lastSeq += uint64(len(ms))
	p.emit(SendToManager{To: p.target, Message: b})
}

// dropStopped drops m, sent after the proxy stopped.
func (p *ProxyCore) dropStopped(m Payload) {
	p.dropped++
	p.emit(Dropped{Proxy: p.self, Payload: m, Reason: "the proxy has stopped"})
}
