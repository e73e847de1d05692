package singletoncore

import (
	"slices"
	"strings"

	"github.com/troupe-go/troupe/member"
)

// sequencer restores each proxy's order at the manager that hosts (or will host) the
// singleton. Messages from one proxy can reach it by several routes during a hand-over:
// directly, in HandOverDone or Relay from the previous host, and forwarded by the
// previous host after its hand-over. Each carries its proxy's Seq and the epoch
// bounds (After, Prev), which is all the sequencer needs to put them back in order.
//
// A proxy's next message to deliver is released when:
//   - its Seq is the next expected (or lower: a late straggler after a loss, delivered
//     at once rather than dropped);
//   - its epoch started at or before the next expected Seq (After < next), so the ones
//     missing between were sent to this epoch's manager before it and were lost;
//   - the proxy is unknown here and this is its first epoch (After == 0);
//   - released(Prev) says nothing more can come from the previous epoch's manager (it
//     was downed and removed, and the margin passed), or Prev is zero;
//   - or a wait for it was given up (force, after the order-wait limit or when the
//     manager's buffer is full).
type sequencer struct {
	next  map[ProxyID]uint64     // next Seq to put in order; absent: unknown
	held  map[ProxyID][]Envelope // kept back, sorted by Seq
	waits map[ProxyID]int        // ticks spent waiting on a blocked proxy
	count int                    // messages held, over all proxies
	// retiring counts the ticks since the member of a proxy with a row was removed:
	// the row is kept a while for its messages still on their way.
	retiring map[ProxyID]int
	one      [1]Envelope // add's result in the common case
}

func newSequencer() sequencer {
	return sequencer{
		next:     make(map[ProxyID]uint64),
		held:     make(map[ProxyID][]Envelope),
		waits:    make(map[ProxyID]int),
		retiring: make(map[ProxyID]int),
	}
}

// add takes e and returns the messages now in order, oldest first (possibly none).
func (s *sequencer) add(e Envelope, released func(member.UniqueAddress) bool) []Envelope {
	h := s.held[e.Proxy]
	if len(h) == 0 && s.releasable(e, released) {
		// The common case, a message in order with nothing held: no copy. The
		// returned slice is valid until the next call.
		s.advance(e.Proxy, e.Seq)
		delete(s.waits, e.Proxy)
		s.one[0] = e
		return s.one[:]
	}
	i, _ := slices.BinarySearchFunc(h, e.Seq, func(x Envelope, seq uint64) int {
		switch {
		case x.Seq < seq:
			return -1
		case x.Seq > seq:
			return 1
		}
		return 0
	})
	s.held[e.Proxy] = slices.Insert(h, i, e)
	s.count++
	return s.drain(e.Proxy, released, nil)
}

// inOrder reports whether e would be released at once by add, nothing of its proxy
// being held back; it changes nothing.
func (s *sequencer) inOrder(e Envelope, released func(member.UniqueAddress) bool) bool {
	return len(s.held[e.Proxy]) == 0 && s.releasable(e, released)
}

// drain appends to out the messages of p that are now in order.
func (s *sequencer) drain(p ProxyID, released func(member.UniqueAddress) bool, out []Envelope) []Envelope {
	h := s.held[p]
	for len(h) > 0 {
		e := h[0]
		if !s.releasable(e, released) {
			break
		}
		h = h[1:]
		s.count--
		s.advance(p, e.Seq)
		s.waits[p] = 0
		out = append(out, e)
	}
	s.store(p, h)
	return out
}

// releasable reports whether e, the first held message of its proxy, may be
// delivered now (see the type's documentation).
func (s *sequencer) releasable(e Envelope, released func(member.UniqueAddress) bool) bool {
	n, known := s.next[e.Proxy]
	return known && (e.Seq <= n || e.After < n) ||
		!known && e.After == 0 ||
		e.Prev == (member.UniqueAddress{}) || released(e.Prev)
}

// drainAll drains every proxy, in a stable order.
func (s *sequencer) drainAll(released func(member.UniqueAddress) bool) []Envelope {
	var out []Envelope
	for _, p := range s.blockedProxies() {
		out = s.drain(p, released, out)
	}
	return out
}

// force gives up the wait for p's missing messages: its first held message becomes the
// next expected, and everything then in order is returned.
func (s *sequencer) force(p ProxyID, released func(member.UniqueAddress) bool) []Envelope {
	h := s.held[p]
	if len(h) == 0 {
		return nil
	}
	s.next[p] = h[0].Seq
	return s.drain(p, released, nil)
}

// tick counts one interval for each blocked proxy, and forces those that have waited
// limit intervals; it forgets the rows of proxies that have been retiring for limit
// intervals. It returns the released messages and the proxies given up on.
func (s *sequencer) tick(limit int, released func(member.UniqueAddress) bool) ([]Envelope, []ProxyID) {
	var out []Envelope
	var gaveUp []ProxyID
	for p, n := range s.retiring {
		if len(s.held[p]) > 0 {
			continue
		}
		if n+1 >= limit {
			delete(s.retiring, p)
			delete(s.next, p)
		} else {
			s.retiring[p] = n + 1
		}
	}
	for _, p := range s.blockedProxies() {
		s.waits[p]++
		if s.waits[p] >= limit {
			gaveUp = append(gaveUp, p)
			s.next[p] = s.held[p][0].Seq
			out = s.drain(p, released, out)
		}
	}
	return out, gaveUp
}

// advance records that Seq seq of p is in order.
func (s *sequencer) advance(p ProxyID, seq uint64) {
	if n, ok := s.next[p]; !ok || seq+1 > n {
		s.next[p] = seq + 1
	}
}

// merge takes another manager's delivery table; rows of proxies on members that gone
// start retiring.
func (s *sequencer) merge(rows []ProxyNext, gone func(member.UniqueAddress) bool) {
	for _, r := range rows {
		if r.Proxy.IsZero() || r.Next == 0 {
			continue
		}
		if _, ok := s.retiring[r.Proxy]; !ok && gone(r.Proxy.Node) {
			s.retiring[r.Proxy] = 0
		}
		if n, ok := s.next[r.Proxy]; !ok || r.Next > n {
			s.next[r.Proxy] = r.Next
		}
	}
}

func (s *sequencer) store(p ProxyID, h []Envelope) {
	if len(h) == 0 {
		delete(s.held, p)
		delete(s.waits, p)
		return
	}
	s.held[p] = h
}

// blocked reports whether any message is held back.
func (s *sequencer) blocked() bool { return s.count > 0 }

// needsTicks reports whether the sequencer has something to count: held messages or
// retiring rows.
func (s *sequencer) needsTicks() bool { return s.count > 0 || len(s.retiring) > 0 }

// largest returns the proxy with the most held messages.
func (s *sequencer) largest() (ProxyID, bool) {
	var best ProxyID
	n := 0
	for _, p := range s.blockedProxies() {
		if len(s.held[p]) > n {
			best, n = p, len(s.held[p])
		}
	}
	return best, n > 0
}

// blockedProxies returns the proxies with held messages, in a stable order.
func (s *sequencer) blockedProxies() []ProxyID {
	ps := make([]ProxyID, 0, len(s.held))
	for p := range s.held {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, compareProxy)
	return ps
}

// table returns the delivery table, in a stable order.
func (s *sequencer) table() []ProxyNext {
	rows := make([]ProxyNext, 0, len(s.next))
	for p, n := range s.next {
		rows = append(rows, ProxyNext{Proxy: p, Next: n})
	}
	slices.SortFunc(rows, func(a, b ProxyNext) int { return compareProxy(a.Proxy, b.Proxy) })
	return rows
}

// heldList returns the held messages, proxy by proxy in Seq order.
func (s *sequencer) heldList() []Envelope {
	out := make([]Envelope, 0, s.count)
	for _, p := range s.blockedProxies() {
		out = append(out, s.held[p]...)
	}
	return out
}

// retire starts retiring the rows of the proxies on node, which was removed: they are
// forgotten after the order-wait limit, when their last messages have arrived.
func (s *sequencer) retire(node member.UniqueAddress) {
	for p := range s.next {
		if _, ok := s.retiring[p]; !ok && p.Node == node {
			s.retiring[p] = 0
		}
	}
}

// reset forgets everything.
func (s *sequencer) reset() { *s = newSequencer() }

func compareProxy(a, b ProxyID) int {
	if c := member.CompareAddress(a.Node, b.Node); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}
