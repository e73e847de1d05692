package singletoncore

import (
	"container/heap"
	"flag"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/member"
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
	addr     member.UniqueAddress
	role     bool
	mgr      *ManagerCore
	proxy    *ProxyCore
	pid      ProxyID
	alive    bool
	joined   bool
	upNumber int64
	status   member.MemberStatus // the truth
	margin   bool                // removed after Down, margin not passed

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
	byAddr map[member.UniqueAddress]*simNode
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
		byAddr:  map[member.UniqueAddress]*simNode{},
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

func (s *sim) net(from *simNode, fromProxy bool, to member.UniqueAddress, toProxy bool, msg any) {
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
	case Batch:
		if *flagTrace {
			s.logf("n%d mgr <- Batch(%d from %s seq=%d after=%d prev=%s)", n.idx, len(e.Payloads), e.Payloads[0].Data, e.First, e.After, s.name(e.Prev))
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
	case DeliverBatch:
		if !n.childAlive || n.termQueued {
			s.fail("n%d: Deliver %s to a singleton that does not run", n.idx, d.Batch.Payloads[0].Data)
		}
		for i := range d.Batch.Payloads {
			n.mailbox = append(n.mailbox, d.Batch.Envelope(i))
		}
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

func (s *sim) name(u member.UniqueAddress) string {
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
