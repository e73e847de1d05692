package singleton

import (
	"fmt"

	"github.com/troupe-go/troupe/cluster"
)

// ProxyCore is the singleton proxy's routing and buffering: a plain value without
// goroutines, I/O or clock. The shell (a local actor on any member, with the role or
// not) serializes each user message into a Payload, feeds it as Send, feeds the
// cluster's membership and what managers send it, and carries out the decisions.
//
// Inputs: MemberChanged, MemberRemoved, RemovalMarginPassed, Send, IdentifyAck,
// TimerFired (TimerIdentify) and ProxyStopping.
//
// Outputs: SendToManager (Identify, Envelope, Detach), StartTimer, CancelTimer,
// Dropped and ProxyStateChanged.
//
// The proxy sends to the manager on the oldest member with the role (Up or Leaving,
// not counting members whose manager said it departed). It asks that manager with
// Identify every identification interval until it answers that it hosts the
// singleton, and buffers messages meanwhile (the oldest is dropped when the buffer is
// full). When the oldest changes, or its manager departs, the proxy sends Detach to
// the manager it was sending to and identifies the new one. It numbers the messages
// it sends (Envelope.Seq) so that managers can keep them in order across a hand-over.
type ProxyCore struct {
	self     ProxyID
	cfg      ProxyConfig
	capacity int

	members  memberTable
	departed map[cluster.UniqueAddress]bool

	target     cluster.UniqueAddress
	identified bool
	timer      bool

	buf     []Payload // ring buffer of capacity entries
	head    int
	size    int
	dropped uint64

	lastSeq uint64                // the last Seq sent
	lastTo  cluster.UniqueAddress // the manager that got it
	after   uint64                // the current epoch's After
	prev    cluster.UniqueAddress // the current epoch's Prev

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
	cfg = cfg.WithDefaults()
	n := cfg.capacity()
	return &ProxyCore{
		self:     self,
		cfg:      cfg,
		capacity: n,
		members:  newMemberTable(cfg.Role),
		departed: make(map[cluster.UniqueAddress]bool),
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
			p.dropped++
			p.emit(Dropped{Proxy: p.self, Payload: e.Payload, Reason: "the proxy has stopped"})
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
		if e.Member.Status == cluster.Removed {
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
	case IdentifyAck:
		p.onAck(e)
	case ProxyStopping:
		p.stop()
	case TimerFired:
		if e.Name == TimerIdentify && p.timer && !p.identified && p.target != (cluster.UniqueAddress{}) {
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
	var next cluster.UniqueAddress
	if o, ok := p.members.oldest(func(n cluster.UniqueAddress) bool { return p.departed[n] }); ok {
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
	if next == (cluster.UniqueAddress{}) {
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
	for p.size > 0 {
		m := p.buf[p.head]
		p.buf[p.head] = Payload{}
		p.head = (p.head + 1) % p.capacity
		p.size--
		p.send(m)
	}
	p.head = 0
	p.buf = p.buf[:0]
}

func (p *ProxyCore) onSend(m Payload) {
	if p.identified {
		p.send(m)
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
	if p.target != (cluster.UniqueAddress{}) {
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

// send numbers m and sends it to the identified target.
func (p *ProxyCore) send(m Payload) {
	if p.target != p.lastTo {
		// A new epoch: the messages so far went elsewhere.
		p.after, p.prev = p.lastSeq, p.lastTo
		p.lastTo = p.target
	}
	p.lastSeq++
	p.emit(SendToManager{To: p.target, Message: Envelope{
		Proxy: p.self, Seq: p.lastSeq, After: p.after, Prev: p.prev, Payload: m,
	}})
}
