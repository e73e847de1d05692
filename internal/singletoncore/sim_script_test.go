package singletoncore

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/member"
)

// The simulation's script: members join, send through their proxies, leave, crash and
// are cut off and downed.

func (s *sim) script() {
	initial := 3 + s.rng.Intn(3)
	for i := 0; i < initial; i++ {
		n := s.addNode(i == 0 || s.rng.Intn(4) != 0)
		s.at(int64(i)*s.between(0, 300), func() { s.join(n) })
	}
	for t := int64(2500); t < simSendUntil-2000; t += s.between(700, 3000) {
		s.at(t, s.randomAction)
	}
}

func (s *sim) addNode(role bool) *simNode {
	idx := len(s.nodes)
	n := &simNode{
		idx: idx, role: role, timerGen: map[string]int{},
		addr: member.UniqueAddress{Addr: fmt.Sprintf("10.0.0.%d:2552", idx+1), UID: uint64(1000 + idx)},
	}
	n.pid = ProxyID{Node: n.addr, Path: fmt.Sprintf("/user/proxy#%d", 7+idx)}
	if role {
		cfg := ManagerConfig{Role: "r", HandOverRetryInterval: time.Duration(simRetry) * time.Millisecond,
			UseLease: s.lease}
		m, err := NewManagerCore(n.addr, cfg, time.Duration(simMargin)*time.Millisecond)
		if err != nil {
			s.t.Fatal(err)
		}
		n.mgr = m
	}
	p, err := NewProxyCore(n.pid, ProxyConfig{Role: "r", IdentificationInterval: time.Duration(simRetry) * time.Millisecond})
	if err != nil {
		s.t.Fatal(err)
	}
	n.proxy = p
	s.nodes = append(s.nodes, n)
	s.byAddr[n.addr] = n
	return n
}

func (s *sim) join(n *simNode) {
	n.alive = true
	s.logf("n%d joins (role %v)", n.idx, n.role)
	for _, o := range s.nodes {
		if o == n || !o.joined {
			continue
		}
		switch {
		case o.status == member.Removed && o.margin:
			s.view(n, MemberChanged{Member: Member{Node: o.addr, Status: member.Down, UpNumber: o.upNumber, Roles: o.member().Roles}})
			s.view(n, MemberRemoved{Node: o.addr, Downed: true})
		case o.status != member.Removed:
			s.view(n, MemberChanged{Member: o.member()})
		}
	}
	n.joined = true
	s.upNo++
	n.upNumber = s.upNo
	n.status = member.Up
	s.broadcast(MemberChanged{Member: n.member()})
	s.after(s.between(10, 100), func() { s.sendLoop(n) })
}

func (s *sim) sendLoop(n *simNode) {
	if !n.alive || n.leaving || n.downed || s.now >= simSendUntil {
		return
	}
	// One message (Send) or a few at once (SendMany, as the shell batches a backlog).
	ms := make([]Payload, 1+s.rng.Intn(3))
	for i := range ms {
		n.sent++
		id := fmt.Sprintf("%d:%d", n.idx, n.sent)
		s.sent[id] = true
		ms[i] = Payload{Manifest: "test", Data: []byte(id)}
	}
	if len(ms) == 1 {
		s.feedProxy(n, Send{Payload: ms[0]})
	} else {
		s.feedProxy(n, SendMany{Payloads: ms})
	}
	s.after(s.between(20, 150), func() { s.sendLoop(n) })
}

// serving reports the nodes that may host the singleton at the end.
func (s *sim) serving(n *simNode) bool {
	return n.alive && n.role && !n.leaving && !n.downed && n.status == member.Up
}

func (s *sim) randomAction() {
	var live, servers []*simNode
	for _, n := range s.nodes {
		if n.alive && !n.leaving && !n.downed {
			live = append(live, n)
			if s.serving(n) {
				servers = append(servers, n)
			}
		}
	}
	pick := func(ns []*simNode) *simNode {
		// Half of the time the oldest, so that the singleton moves.
		if s.rng.Intn(2) == 0 {
			var o *simNode
			for _, n := range ns {
				if n.role && n.status == member.Up && (o == nil || n.upNumber < o.upNumber) {
					o = n
				}
			}
			if o != nil {
				return o
			}
		}
		return ns[s.rng.Intn(len(ns))]
	}
	// The role members by age, for actions that overlap a hand-over.
	byAge := slices.Clone(servers)
	slices.SortFunc(byAge, func(a, b *simNode) int { return cmp.Compare(a.upNumber, b.upNumber) })
	if len(byAge) >= 3 && s.rng.Intn(6) == 0 {
		// The oldest leaves and, while it hands over, so does (or crashes, or is cut
		// off) the next oldest.
		s.leave(byAge[0])
		next := byAge[1]
		s.after(s.between(0, 300), func() {
			switch r := s.rng.Intn(3); {
			case r == 0 || !s.crashes:
				s.leave(next)
			case r == 1:
				s.crash(next)
			default:
				s.downAlive(next)
			}
		})
		return
	}
	r := s.rng.Intn(10)
	switch {
	case s.lease && r == 0 && s.leaseHolder >= 0 && !s.leaseRevoking:
		h := s.nodes[s.leaseHolder]
		s.logf("lease revoked from n%d", h.idx)
		s.stats.LeaseRevoked++
		s.leaseRevoking = true
		s.local(h, LeaseLost{})
		s.pollLeaseFree(h)
	case len(live) < 3 || r <= 3 || len(servers) <= 1:
		s.join(s.addNode(s.rng.Intn(5) != 0))
	case r <= 6 || !s.crashes:
		n := pick(live)
		if n.role && len(servers) <= 1 {
			return
		}
		s.leave(n)
	case r <= 8:
		n := pick(live)
		if n.role && len(servers) <= 1 {
			return
		}
		s.crash(n)
	default:
		n := pick(live)
		if n.role && len(servers) <= 1 {
			return
		}
		s.downAlive(n)
	}
}

func (s *sim) leave(n *simNode) {
	s.logf("n%d leaves", n.idx)
	n.leaving = true
	if n.mgr != nil {
		s.local(n, SelfLeaving{})
	}
	deadline := s.now + 30000
	var poll func()
	poll = func() {
		if !n.alive {
			return
		}
		ready := (n.mgr == nil || n.mgr.Status().Finished) && n.proxy.Status().Buffered == 0
		if !ready && s.now < deadline {
			s.after(50, poll)
			return
		}
		if !ready {
			s.forced++
			s.logf("n%d leaves before it is finished", n.idx)
		}
		s.feedProxy(n, ProxyStopping{})
		n.status = member.Leaving
		s.broadcast(MemberChanged{Member: n.member()})
		n.status = member.Exiting
		s.broadcast(MemberChanged{Member: n.member()})
		n.status = member.Removed
		s.broadcast(MemberRemoved{Node: n.addr})
		s.after(s.between(1, 50), func() { s.die(n, "left") })
	}
	s.after(50, poll)
}

func (s *sim) crash(n *simNode) {
	s.logf("n%d crashes", n.idx)
	s.takenOver = true
	s.die(n, "crashed")
	s.after(s.between(2000, 4000), func() {
		n.status = member.Down
		s.broadcast(MemberChanged{Member: n.member()})
		s.after(s.between(100, 500), func() { s.removeDowned(n) })
	})
}

// downAlive cuts n off from the others, which down and remove it; n keeps running
// (its singleton too) until it learns that it was downed, which the split-brain
// resolver promises within the removal margin.
func (s *sim) downAlive(n *simNode) {
	s.logf("n%d is cut off", n.idx)
	s.stats.PartitionsDowned++
	s.takenOver = true
	n.downed, n.partitioned = true, true
	s.after(s.between(1000, 3000), func() {
		n.status = member.Down
		s.broadcast(MemberChanged{Member: n.member()})
		s.after(s.between(100, 500), func() {
			s.removeDowned(n)
			s.after(s.between(0, simMargin/2), func() {
				s.logf("n%d learns it was downed", n.idx)
				s.view(n, MemberChanged{Member: n.member()})
				var poll func()
				poll = func() {
					if n.childRunning || n.mgr != nil && !n.mgrStopped {
						s.after(50, poll)
						return
					}
					s.die(n, "downed")
				}
				s.after(50, poll)
			})
		})
	})
}

func (s *sim) removeDowned(n *simNode) {
	n.status = member.Removed
	n.margin = true
	s.broadcast(MemberRemoved{Node: n.addr, Downed: true})
	s.after(simMargin, func() {
		n.margin = false
		s.broadcast(RemovalMarginPassed{Node: n.addr})
	})
}

// die stops the node's process: what it holds is lost.
func (s *sim) die(n *simNode, why string) {
	if !n.alive {
		return
	}
	n.alive = false
	n.childRunning, n.childAlive = false, false
	for _, it := range n.mailbox {
		if e, ok := it.(Envelope); ok {
			s.excuse(e, why)
		}
	}
	n.mailbox = nil
	if n.mgr != nil {
		for _, e := range n.mgr.ready {
			s.excuse(e, why)
		}
		for _, e := range n.mgr.seq.heldList() {
			s.excuse(e, why)
		}
	}
	for i := 0; i < n.proxy.size; i++ {
		s.excuseID(string(n.proxy.buf[(n.proxy.head+i)%n.proxy.capacity].Data), why)
	}
	if s.leaseHolder == n.idx {
		// The lease expires some time after its holder died.
		s.after(2000, func() {
			if s.leaseHolder == n.idx {
				s.leaseHolder, s.leaseRevoking = -1, false
			}
		})
	}
}

func (s *sim) excuse(e Envelope, why string) { s.excuseID(string(e.Payload.Data), why) }

func (s *sim) excuseID(id, why string) {
	if _, ok := s.excused[id]; !ok {
		s.excused[id] = why
	}
}

func (s *sim) excuseMsg(msg any, why string) {
	switch m := msg.(type) {
	case Envelope:
		s.excuse(m, why)
	case Batch:
		for i := range m.Payloads {
			s.excuse(m.Envelope(i), why)
		}
	case HandOverDone:
		for _, e := range append(append([]Envelope{}, m.Ordered...), m.Held...) {
			s.excuse(e, why)
		}
	case Relay:
		for _, e := range append(append([]Envelope{}, m.Ordered...), m.Held...) {
			s.excuse(e, why)
		}
	}
}
