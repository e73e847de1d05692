package singleton

import (
	"cmp"
	"container/heap"
	"context"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
)

// The never-two simulation runs several managers' and proxies' cores against one
// simulated membership, in virtual time, from a seed: members join, leave gracefully,
// crash (and are downed, removed and, after the margin, forgotten) or are downed while
// alive; messages between cores are delayed at random, and reordered between
// different pairs of actors (never within one pair, as the transport guarantees);
// timers fire, and cancelled ones sometimes still fire once; an optional lease is
// granted, refused and revoked. After every step it checks that at most one manager
// has a running singleton. At the end it checks that the system converged to exactly
// one singleton, on the oldest member, with every proxy attached to it, and accounts
// for every message sent through the proxies.
//
// Even seeds run joins and graceful leaves only: every message must be delivered
// exactly once, in each sender's order. Odd seeds add crashes and downing: a message
// may be lost only with a member that crashed or was downed while it was there (or
// when a manager or proxy reported it Dropped); all others are delivered exactly once.
//
// A failing seed reproduces the run: go test ./singleton -run TestNeverTwo -singleton.seed=N
// More seeds: -singleton.seeds=10000 (80 by default, 20 with -short); -singleton.trace
// prints every run's trace.

var (
	flagSeeds = flag.Int("singleton.seeds", 80, "number of seeds the never-two simulation runs")
	flagSeed  = flag.Int64("singleton.seed", 0, "run the never-two simulation for this seed only")
	flagTrace = flag.Bool("singleton.trace", false, "print the simulation's trace")
)

func TestNeverTwo(t *testing.T) {
	var st simStats
	if *flagSeed != 0 {
		runSim(t, *flagSeed, &st)
		return
	}
	n := *flagSeeds
	if testing.Short() {
		n = 20
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		if !runSim(t, seed, &st) {
			return
		}
	}
	t.Logf("%d runs: %+v", n, st)
	// The runs must exercise what they claim to test.
	if st.HandOvers == 0 || st.TakeOvers == 0 || st.HeldBack == 0 || st.Relayed == 0 ||
		st.LostWithMembers == 0 || st.LeaseRevoked == 0 || st.PartitionsDowned == 0 {
		t.Errorf("the simulation did not exercise every path: %+v", st)
	}
}

// simStats sums what the runs exercised.
type simStats struct {
	Messages         int // sent through proxies
	HandOvers        int // HandOverDone received with a delivery table or messages
	TakeOvers        int // a singleton started after a crash or a downing
	HeldBack         int // messages a manager held back to restore a proxy's order
	Relayed          int // Relay messages and envelopes passed on by a manager in End
	LostWithMembers  int // messages lost with crashed or downed members (odd seeds)
	LeaseRevoked     int
	PartitionsDowned int
	Alerts           int
}

const (
	simNet = iota
	simView
	simLocal
	simTimer
	simChild
	simAction
)

const (
	simRetry     = int64(1000) // hand-over retry and identification interval, ms
	simMargin    = int64(3000) // down-removal margin, ms
	simSendUntil = int64(24000)
	simEnd       = int64(70000)
)

type simItem struct {
	at      int64
	seq     uint64
	kind    int
	node    int
	toProxy bool
	msg     any
	name    string
	gen     int
	fn      func()
}

type simQueue []*simItem

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simItem)) }
func (q *simQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

type simLink struct {
	from, to           int
	fromProxy, toProxy bool
}

type simTerm struct{}

type simNode struct {
	idx      int
	addr     cluster.UniqueAddress
	role     bool
	mgr      *ManagerCore
	proxy    *ProxyCore
	pid      ProxyID
	alive    bool
	joined   bool
	upNumber int64
	status   cluster.MemberStatus // the truth
	margin   bool                 // removed after Down, margin not passed

	childRunning bool // from StartChild until ChildTerminated is fed back
	childAlive   bool // the simulated actor exists and processes its mailbox
	mailbox      []any
	termQueued   bool
	stepPending  bool
	mgrStopped   bool

	timerGen    map[string]int
	leaving     bool // no more user sends
	downed      bool
	partitioned bool // cut off from the others
	sent        int
}

func (n *simNode) member() Member {
	var roles []string
	if n.role {
		roles = []string{"r"}
	}
	return Member{Node: n.addr, Status: n.status, UpNumber: n.upNumber, Roles: roles}
}

type sim struct {
	t       *testing.T
	seed    int64
	rng     *rand.Rand
	crashes bool
	lease   bool

	now    int64
	seqNo  uint64
	q      simQueue
	nodes  []*simNode
	byAddr map[cluster.UniqueAddress]*simNode
	links  map[simLink]int64
	views  map[int]int64 // last scheduled view event per node
	locals map[int]int64
	upNo   int64

	leaseHolder   int
	leaseRevoking bool

	sent      map[string]bool
	delivered map[string]int
	order     map[int][]int
	excused   map[string]string
	dropped   map[string]string
	alerts    []string
	forced    int
	trace     []string
	failed    string
	stats     simStats
	takenOver bool // a member crashed or was downed since the last StartChild
}

func (a *simStats) add(b simStats) {
	a.Messages += b.Messages
	a.HandOvers += b.HandOvers
	a.TakeOvers += b.TakeOvers
	a.HeldBack += b.HeldBack
	a.Relayed += b.Relayed
	a.LostWithMembers += b.LostWithMembers
	a.LeaseRevoked += b.LeaseRevoked
	a.PartitionsDowned += b.PartitionsDowned
	a.Alerts += b.Alerts
}

func runSim(t *testing.T, seed int64, st *simStats) bool {
	s := &sim{
		t: t, seed: seed, rng: rand.New(rand.NewSource(seed)),
		crashes: seed%2 == 1,
		byAddr:  map[cluster.UniqueAddress]*simNode{},
		links:   map[simLink]int64{}, views: map[int]int64{}, locals: map[int]int64{},
		upNo: 1000, leaseHolder: -1,
		sent: map[string]bool{}, delivered: map[string]int{}, order: map[int][]int{},
		excused: map[string]string{}, dropped: map[string]string{},
	}
	s.lease = s.rng.Intn(3) == 0
	s.script()
	for s.q.Len() > 0 && s.failed == "" {
		it := heap.Pop(&s.q).(*simItem)
		if it.at > simEnd {
			break
		}
		s.now = it.at
		s.step(it)
		s.checkNeverTwo()
	}
	if s.failed == "" {
		s.checkEnd()
	}
	if *flagTrace {
		for _, n := range s.nodes {
			if n.mgr != nil {
				m := n.mgr
				t.Logf("n%d %v succ=%s final=%v/%v clients=%v awaiting=%v feeders=%v", n.idx, m.state, s.name(m.successor), m.finalSent, m.finalAcked, m.clients, m.awaiting, m.feeders)
			}
		}
	}
	if len(s.alerts) > 0 && testing.Verbose() {
		t.Logf("seed %d alerts: %q", seed, s.alerts)
	}
	s.stats.Messages = len(s.sent)
	s.stats.Alerts = len(s.alerts)
	st.add(s.stats)
	if *flagTrace || s.failed != "" {
		t.Logf("seed %d (crashes %v, lease %v) trace:\n%s", seed, s.crashes, s.lease, strings.Join(s.trace, "\n"))
	}
	if s.failed != "" {
		t.Errorf("seed %d (crashes %v, lease %v): %s\nreproduce: go test ./singleton -run TestNeverTwo -singleton.seed=%d",
			seed, s.crashes, s.lease, s.failed, seed)
		return false
	}
	return true
}

func (s *sim) fail(format string, args ...any) {
	if s.failed == "" {
		s.failed = fmt.Sprintf("t=%dms: ", s.now) + fmt.Sprintf(format, args...)
	}
}

func (s *sim) logf(format string, args ...any) {
	line := fmt.Sprintf("%6d ", s.now) + fmt.Sprintf(format, args...)
	s.trace = append(s.trace, line)
	if !*flagTrace && len(s.trace) > 400 {
		s.trace = s.trace[len(s.trace)-300:]
	}
}

func (s *sim) push(it *simItem) {
	s.seqNo++
	it.seq = s.seqNo
	heap.Push(&s.q, it)
}

func (s *sim) at(t int64, fn func()) { s.push(&simItem{at: t, kind: simAction, fn: fn}) }

func (s *sim) after(d int64, fn func()) { s.at(s.now+d, fn) }

func (s *sim) between(lo, hi int64) int64 { return lo + s.rng.Int63n(hi-lo+1) }

// ---- script ----

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
		addr: cluster.UniqueAddress{Addr: fmt.Sprintf("10.0.0.%d:2552", idx+1), UID: uint64(1000 + idx)},
	}
	n.pid = ProxyID{Node: n.addr, Path: fmt.Sprintf("/user/proxy#%d", 7+idx)}
	if role {
		cfg := Config{Props: actor.PropsFunc(func(actor.Context) {}), Role: "r",
			HandOverRetryInterval: time.Duration(simRetry) * time.Millisecond}
		if s.lease {
			cfg.Lease = nopLease{}
		}
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
		case o.status == cluster.Removed && o.margin:
			s.view(n, MemberChanged{Member: Member{Node: o.addr, Status: cluster.Down, UpNumber: o.upNumber, Roles: o.member().Roles}})
			s.view(n, MemberRemoved{Node: o.addr, Downed: true})
		case o.status != cluster.Removed:
			s.view(n, MemberChanged{Member: o.member()})
		}
	}
	n.joined = true
	s.upNo++
	n.upNumber = s.upNo
	n.status = cluster.Up
	s.broadcast(MemberChanged{Member: n.member()})
	s.after(s.between(10, 100), func() { s.sendLoop(n) })
}

func (s *sim) sendLoop(n *simNode) {
	if !n.alive || n.leaving || n.downed || s.now >= simSendUntil {
		return
	}
	n.sent++
	id := fmt.Sprintf("%d:%d", n.idx, n.sent)
	s.sent[id] = true
	s.feedProxy(n, Send{Payload: Payload{Manifest: "test", Data: []byte(id)}})
	s.after(s.between(20, 150), func() { s.sendLoop(n) })
}

// serving reports the nodes that may host the singleton at the end.
func (s *sim) serving(n *simNode) bool {
	return n.alive && n.role && !n.leaving && !n.downed && n.status == cluster.Up
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
				if n.role && n.status == cluster.Up && (o == nil || n.upNumber < o.upNumber) {
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
		n.status = cluster.Leaving
		s.broadcast(MemberChanged{Member: n.member()})
		n.status = cluster.Exiting
		s.broadcast(MemberChanged{Member: n.member()})
		n.status = cluster.Removed
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
		n.status = cluster.Down
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
		n.status = cluster.Down
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
	n.status = cluster.Removed
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

// ---- transport ----

func (s *sim) broadcast(ev Event) {
	for _, n := range s.nodes {
		if n.alive && !n.partitioned {
			s.view(n, ev)
		}
	}
}

func (s *sim) view(n *simNode, ev Event) {
	at := max(s.now+s.between(5, 200), s.views[n.idx])
	s.views[n.idx] = at
	s.push(&simItem{at: at, kind: simView, node: n.idx, msg: ev})
}

func (s *sim) local(n *simNode, ev Event) {
	at := max(s.now+1, s.locals[n.idx])
	s.locals[n.idx] = at
	s.push(&simItem{at: at, kind: simLocal, node: n.idx, msg: ev})
}

func (s *sim) net(from *simNode, fromProxy bool, to cluster.UniqueAddress, toProxy bool, msg any) {
	dst, ok := s.byAddr[to]
	if !ok {
		s.fail("n%d sends %T to unknown member %v", from.idx, msg, to)
		return
	}
	d := s.between(1, 30)
	if s.rng.Intn(10) == 0 {
		d = s.between(100, 400)
	}
	if from != dst && (from.partitioned || dst.partitioned) {
		s.excuseMsg(msg, "sent across a partition")
		return
	}
	k := simLink{from: from.idx, to: dst.idx, fromProxy: fromProxy, toProxy: toProxy}
	at := max(s.now+d, s.links[k])
	s.links[k] = at
	s.push(&simItem{at: at, kind: simNet, node: dst.idx, toProxy: toProxy, msg: msg})
}

func (s *sim) startTimer(n *simNode, owner, name string, every time.Duration) {
	key := owner + "/" + name
	n.timerGen[key]++
	gen := n.timerGen[key]
	s.push(&simItem{at: s.now + every.Milliseconds(), kind: simTimer, node: n.idx, toProxy: owner == "p", name: name, gen: gen})
}

func (s *sim) step(it *simItem) {
	if it.kind == simAction {
		it.fn()
		return
	}
	n := s.nodes[it.node]
	if !n.alive {
		if it.kind == simNet {
			s.excuseMsg(it.msg, "sent to a member that is gone")
		}
		return
	}
	switch it.kind {
	case simNet:
		if it.toProxy {
			s.feedProxy(n, it.msg.(Event))
		} else {
			s.feedMgr(n, it.msg.(Event))
		}
	case simView:
		ev := it.msg.(Event)
		if n.mgr != nil {
			s.feedMgr(n, ev)
		}
		s.feedProxy(n, ev)
	case simLocal:
		if _, ok := it.msg.(ChildTerminated); ok {
			n.childRunning = false
		}
		s.feedMgr(n, it.msg.(Event))
	case simTimer:
		owner := "m"
		if it.toProxy {
			owner = "p"
		}
		key := owner + "/" + it.name
		if it.gen != n.timerGen[key] {
			// Cancelled or restarted: a firing already queued may still arrive.
			if s.rng.Intn(3) != 0 {
				return
			}
		} else {
			s.push(&simItem{at: s.now + simRetry, kind: simTimer, node: n.idx, toProxy: it.toProxy, name: it.name, gen: it.gen})
		}
		if it.toProxy {
			s.feedProxy(n, TimerFired{Name: it.name})
		} else {
			s.feedMgr(n, TimerFired{Name: it.name})
		}
	case simChild:
		n.stepPending = false
		if !n.childAlive || len(n.mailbox) == 0 {
			return
		}
		head := n.mailbox[0]
		n.mailbox = n.mailbox[1:]
		switch m := head.(type) {
		case Envelope:
			s.deliver(n, m)
		case simTerm:
			n.childAlive = false
			s.logf("n%d singleton terminated", n.idx)
			s.local(n, ChildTerminated{})
		}
		s.scheduleChild(n)
	}
}

func (s *sim) scheduleChild(n *simNode) {
	if !n.stepPending && n.childAlive && len(n.mailbox) > 0 {
		n.stepPending = true
		s.push(&simItem{at: s.now + s.between(1, 5), kind: simChild, node: n.idx})
	}
}

func (s *sim) deliver(n *simNode, e Envelope) {
	id := string(e.Payload.Data)
	s.delivered[id]++
	if s.delivered[id] > 1 {
		s.fail("message %s delivered twice (now at n%d)", id, n.idx)
	}
	parts := strings.SplitN(id, ":", 2)
	sender, _ := strconv.Atoi(parts[0])
	num, _ := strconv.Atoi(parts[1])
	s.order[sender] = append(s.order[sender], num)
}

// ---- cores ----

func (s *sim) feedMgr(n *simNode, ev Event) {
	if n.mgr == nil {
		if _, ok := ev.(MemberChanged); !ok {
			s.fail("n%d has no manager but got %T", n.idx, ev)
		}
		return
	}
	switch e := ev.(type) {
	case Envelope:
		if *flagTrace {
			s.logf("n%d mgr <- Envelope(%s seq=%d after=%d prev=%s)", n.idx, e.Payload.Data, e.Seq, e.After, s.name(e.Prev))
		}
	case MemberChanged, MemberRemoved, RemovalMarginPassed:
	default:
		s.logf("n%d mgr <- %s", n.idx, brief(ev))
	}
	switch e := ev.(type) {
	case HandOverDone:
		if len(e.Next)+len(e.Ordered)+len(e.Held) > 0 {
			s.stats.HandOvers++
		}
	case Relay:
		s.stats.Relayed++
	}
	before := n.mgr.seq.count
	for _, d := range n.mgr.Handle(ev) {
		s.execMgr(n, d)
	}
	if n.mgr.seq.count > before {
		s.stats.HeldBack += n.mgr.seq.count - before
	}
}

func (s *sim) execMgr(n *simNode, d Decision) {
	switch d := d.(type) {
	case StartChild:
		s.logf("n%d StartChild", n.idx)
		if n.childRunning {
			s.fail("n%d: StartChild while its singleton runs", n.idx)
		}
		if s.lease && s.leaseHolder != n.idx {
			s.fail("n%d: StartChild without the lease (held by %d)", n.idx, s.leaseHolder)
		}
		n.childRunning, n.childAlive, n.termQueued, n.mailbox = true, true, false, nil
		if s.takenOver {
			s.takenOver = false
			s.stats.TakeOvers++
		}
	case SendTermination:
		s.logf("n%d SendTermination", n.idx)
		if !n.childAlive || n.termQueued {
			s.fail("n%d: SendTermination without a running singleton", n.idx)
		}
		n.mailbox = append(n.mailbox, simTerm{})
		n.termQueued = true
		s.scheduleChild(n)
	case Deliver:
		if !n.childAlive || n.termQueued {
			s.fail("n%d: Deliver %s to a singleton that does not run", n.idx, d.Envelope.Payload.Data)
		}
		n.mailbox = append(n.mailbox, d.Envelope)
		s.scheduleChild(n)
	case SendToManager:
		if _, ok := d.Message.(Envelope); ok {
			s.stats.Relayed++
		}
		s.net(n, false, d.To, false, d.Message)
	case SendToProxy:
		s.net(n, false, d.To.Node, true, d.Message)
	case StartTimer:
		s.startTimer(n, "m", d.Name, d.Interval)
	case CancelTimer:
		n.timerGen["m/"+d.Name]++
	case StopManager:
		s.logf("n%d StopManager", n.idx)
		if n.childRunning {
			s.fail("n%d: StopManager while its singleton runs", n.idx)
		}
		n.mgrStopped = true
	case AcquireLease:
		s.after(s.between(5, 50), func() {
			if !n.alive {
				return
			}
			// The store is sometimes unavailable.
			if (s.leaseHolder == -1 || s.leaseHolder == n.idx) && !s.leaseRevoking && s.rng.Intn(10) != 0 {
				s.leaseHolder = n.idx
				s.local(n, LeaseAcquired{})
			} else {
				s.local(n, LeaseFailed{})
			}
		})
	case ReleaseLease:
		if s.leaseHolder == n.idx {
			s.leaseHolder, s.leaseRevoking = -1, false
		}
	case Alert:
		s.logf("n%d ALERT %s", n.idx, d.Message)
		s.alerts = append(s.alerts, fmt.Sprintf("n%d: %s", n.idx, d.Message))
	case Dropped:
		s.logf("n%d dropped %s: %s", n.idx, d.Payload.Data, d.Reason)
		s.dropped[string(d.Payload.Data)] = d.Reason
	case StateChanged:
		s.logf("n%d %v oldest=%s child=%v finished=%v", n.idx, d.Status.State, s.name(d.Status.Oldest), d.Status.ChildRunning, d.Status.Finished)
	}
}

func (s *sim) feedProxy(n *simNode, ev Event) {
	for _, d := range n.proxy.Handle(ev) {
		switch d := d.(type) {
		case SendToManager:
			s.net(n, true, d.To, false, d.Message)
		case StartTimer:
			s.startTimer(n, "p", d.Name, d.Interval)
		case CancelTimer:
			n.timerGen["p/"+d.Name]++
		case Dropped:
			s.logf("n%d proxy dropped %s: %s", n.idx, d.Payload.Data, d.Reason)
			s.dropped[string(d.Payload.Data)] = d.Reason
		case ProxyStateChanged:
			if d.Status.Target != n.proxy.status.Target || d.Status.Identified {
				s.logf("n%d proxy target=%s identified=%v buffered=%d", n.idx, s.name(d.Status.Target), d.Status.Identified, d.Status.Buffered)
			}
		}
	}
}

func (s *sim) pollLeaseFree(h *simNode) {
	s.after(50, func() {
		if !s.leaseRevoking || s.leaseHolder != h.idx {
			return
		}
		if h.childRunning && h.alive {
			s.pollLeaseFree(h)
			return
		}
		s.leaseHolder, s.leaseRevoking = -1, false
	})
}

func (s *sim) name(u cluster.UniqueAddress) string {
	if n, ok := s.byAddr[u]; ok {
		return fmt.Sprintf("n%d", n.idx)
	}
	return "-"
}

func brief(ev Event) string {
	switch e := ev.(type) {
	case HandOverDone:
		return fmt.Sprintf("HandOverDone(final=%v next=%d ordered=%d held=%d)", e.Final, len(e.Next), len(e.Ordered), len(e.Held))
	case Relay:
		return fmt.Sprintf("Relay(final=%v next=%d ordered=%d held=%d)", e.Final, len(e.Next), len(e.Ordered), len(e.Held))
	case Identify:
		return "Identify(" + e.Proxy.Path + ")"
	case Detach:
		return "Detach(" + e.Proxy.Path + ")"
	}
	return fmt.Sprintf("%T%+v", ev, ev)
}

// ---- checks ----

func (s *sim) checkNeverTwo() {
	var running []int
	for _, n := range s.nodes {
		if n.alive && n.childRunning {
			running = append(running, n.idx)
		}
	}
	if len(running) > 1 {
		s.fail("two singletons run: nodes %v", running)
	}
}

func (s *sim) checkEnd() {
	var oldest *simNode
	for _, n := range s.nodes {
		if s.serving(n) && (oldest == nil || n.upNumber < oldest.upNumber) {
			oldest = n
		}
	}
	if oldest == nil {
		s.fail("no member left to host the singleton")
		return
	}
	for _, n := range s.nodes {
		if n.alive && n.childRunning != (n == oldest) {
			s.fail("at the end n%d runs a singleton: %v; the oldest is n%d", n.idx, n.childRunning, oldest.idx)
			return
		}
		if n.alive && !n.leaving && !n.downed {
			st := n.proxy.Status()
			if st.Target != oldest.addr || !st.Identified || st.Buffered != 0 {
				s.fail("at the end n%d's proxy is %+v; the oldest is n%d", n.idx, st, oldest.idx)
				return
			}
		}
	}
	lost := 0
	for id := range s.sent {
		if s.delivered[id] == 1 {
			continue
		}
		why, excused := s.excused[id]
		if !excused {
			why, excused = s.dropped[id]
		}
		if !excused || !s.crashes {
			s.fail("message %s was not delivered (%s)", id, why)
			return
		}
		lost++
	}
	s.stats.LostWithMembers = lost
	if !s.crashes {
		if len(s.dropped) > 0 || len(s.excused) > 0 || s.forced > 0 || len(s.alerts) > 0 {
			s.fail("graceful run: %d dropped, %d lost, %d forced leaves, alerts %q", len(s.dropped), len(s.excused), s.forced, s.alerts)
			return
		}
		for sender, nums := range s.order {
			for i, num := range nums {
				if num != i+1 {
					s.fail("sender n%d: delivery %d is message %d (order %v)", sender, i+1, num, nums)
					return
				}
			}
		}
	}
	s.logf("end: %d messages sent, %d lost with crashed members, %d alerts", len(s.sent), lost, len(s.alerts))
}

// nopLease satisfies Lease for the simulation, which grants the lease itself.
type nopLease struct{}

func (nopLease) Acquire(_ context.Context, _ func(error)) (bool, error) { return true, nil }
func (nopLease) Release(context.Context) (bool, error)                  { return true, nil }
