package replication

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The simulation runs replicas built from this package's parts (aggregators,
// gossip, delta propagation) around a grow-only counter, over a network that
// delays, loses, duplicates and reorders messages and that partitions and heals,
// in virtual time from a seed. It checks that every request gets one reply, that
// a ReadMajority that starts after a WriteMajority was acknowledged sees the
// write, and that after the last heal every replica converges to the value of
// the model (each node's own count, the highest it wrote).
//
// TROUPE_SIM_SEEDS=n runs n seeds (default 20); TROUPE_SIM_SEED=s runs seed s.

// counter is the simulated CRDT: per node, the highest count (a GCounter), with
// the delta versions it includes per origin (as ddata's envelopes carry them).
type counter struct {
	counts   map[int]uint64
	versions map[int]uint64
}

func newCounter() *counter {
	return &counter{counts: map[int]uint64{}, versions: map[int]uint64{}}
}

func (c *counter) clone() *counter {
	return &counter{counts: maps.Clone(c.counts), versions: maps.Clone(c.versions)}
}

func (c *counter) merge(o *counter) {
	for n, v := range o.counts {
		c.counts[n] = max(c.counts[n], v)
	}
	for n, v := range o.versions {
		c.versions[n] = max(c.versions[n], v)
	}
}

// digest is the counts' hash; 0 is kept for "not found".
func (c *counter) digest() uint64 {
	h := fnv.New64a()
	var b []byte
	for _, n := range slices.Sorted(maps.Keys(c.counts)) {
		b = binary.LittleEndian.AppendUint64(b, uint64(n))
		b = binary.LittleEndian.AppendUint64(b, c.counts[n])
	}
	h.Write(b)
	return h.Sum64() | 1
}

// cdelta is a delta of the counter: the new counts of some nodes. It is causal
// when the key says so (the receiver then applies deltas in order per origin).
type cdelta struct {
	counts map[int]uint64
	causal bool
}

func (d *cdelta) Compose(later *cdelta) (*cdelta, error) {
	out := &cdelta{counts: maps.Clone(d.counts), causal: d.causal}
	for n, v := range later.counts {
		out.counts[n] = max(out.counts[n], v)
	}
	return out, nil
}

func (d *cdelta) Size() int { return len(d.counts) }

// causalKey reports whether key's deltas are causal: keys starting with "c".
func causalKey(key string) bool { return strings.HasPrefix(key, "c") }

// Messages between replicas.
type (
	mWrite struct {
		key string
		val *counter
		id  uint64
	}
	mWriteAck struct{ id uint64 }
	mRead     struct {
		key string
		id  uint64
	}
	mReadResult struct {
		id  uint64
		val *counter // nil: not found
	}
	mStatus struct{ st Status[uint64] }
	mGossip struct {
		vals     map[string]*counter
		sendBack bool
	}
	mDeltas      struct{ sends []DeltaSend[*cdelta] }
	mFullRequest struct{ keys []string }
)

type envelope struct {
	at       time.Time
	seq      uint64 // ties: delivery order of equal times
	from, to int
	msg      any
}

type queue []envelope

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if c := q[i].at.Compare(q[j].at); c != 0 {
		return c < 0
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(envelope)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// request is a client's read or write, with what it was answered.
type request struct {
	id      uint64 // the client's id
	node    int
	key     string
	write   bool
	count   uint64 // write: the writer's count after it
	started time.Time
	replies int
	ok      bool
	at      time.Time      // the (first) reply
	value   map[int]uint64 // a successful read's counts
}

type writeOp struct {
	req *request
	agg *WriteAggregator[int]
	msg mWrite
}

type readOp struct {
	req *request
	agg *ReadAggregator[int]
	acc *counter
}

// replica is one simulated node: the thin shell around the core that ddata's
// replicator is, without actors.
type replica struct {
	self   int
	s      *sim
	vals   map[string]*counter
	deltas *DeltaPropagation[int, *cdelta]
	round  uint64
	nextID uint64
	writes map[uint64]*writeOp
	reads  map[uint64]*readOp
}

type sim struct {
	t        *testing.T
	rng      *rand.Rand
	now      time.Time
	q        queue
	seq      uint64
	nodes    []*replica
	side     []int // partition side of each node; all 0 when healed
	loss     float64
	dup      float64
	requests []*request
	model    map[string]map[int]uint64
	log      []string
	checked  int
	verdicts [3]int
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%v ", s.now.Sub(simStart))+fmt.Sprintf(format, args...))
}

var simStart = time.Unix(1_700_000_000, 0)

func (s *sim) connected(a, b int) bool { return s.side[a] == s.side[b] }

// send puts msg on the network: lost, duplicated and delayed at random; a message
// across a partition is lost.
func (s *sim) send(from, to int, msg any) {
	copies := 1
	if s.rng.Float64() < s.dup {
		copies = 2
	}
	for range copies {
		if !s.connected(from, to) || s.rng.Float64() < s.loss {
			continue
		}
		s.seq++
		delay := time.Duration(1+s.rng.IntN(40)) * time.Millisecond
		heap.Push(&s.q, envelope{at: s.now.Add(delay), seq: s.seq, from: from, to: to, msg: msg})
	}
}

// peers returns r's view of the others: all members, reachable when on its side.
func (r *replica) peers() []Peer[int] {
	var out []Peer[int]
	for _, o := range r.s.nodes {
		if o.self != r.self {
			out = append(out, Peer[int]{Node: o.self, Reachable: r.s.connected(r.self, o.self)})
		}
	}
	return out
}

func (r *replica) reachableNodes() []int {
	var out []int
	for _, p := range r.peers() {
		if p.Reachable {
			out = append(out, p.Node)
		}
	}
	return out
}

func (r *replica) value(key string) *counter {
	v := r.vals[key]
	if v == nil {
		v = newCounter()
		r.vals[key] = v
	}
	return v
}

func (r *replica) digests() map[string]uint64 {
	out := make(map[string]uint64, len(r.vals))
	for k, v := range r.vals {
		out[k] = v.digest()
	}
	return out
}

// update increments this node's count of key, numbers the delta, and completes
// the write (at once for WriteLocal).
func (r *replica) update(req *request, l Level) {
	v := r.value(req.key)
	v.counts[r.self]++
	req.count = v.counts[r.self]
	d := &cdelta{counts: map[int]uint64{r.self: v.counts[r.self]}, causal: causalKey(req.key)}
	var seq uint64
	if len(r.reachableNodes()) == 0 {
		seq = r.deltas.Bump(req.key)
	} else {
		seq = r.deltas.Update(req.key, d)
	}
	v.versions[r.self] = seq
	if l.Kind == Local {
		r.s.reply(req, true, nil)
		return
	}
	agg := NewWriteAggregator(l, r.peers(), cmp.Compare[int], false, r.s.rng, false, r.s.now)
	r.nextID++
	op := &writeOp{req: req, agg: agg, msg: mWrite{key: req.key, val: v.clone(), id: r.nextID}}
	if agg.Outcome() != WritePending {
		r.finishWrite(op)
		return
	}
	r.writes[r.nextID] = op
	for _, n := range agg.Primary() {
		r.s.send(r.self, n, op.msg)
	}
}

func (r *replica) finishWrite(op *writeOp) {
	delete(r.writes, op.msg.id)
	r.s.reply(op.req, op.agg.Outcome() == WriteSucceeded, nil)
}

func (r *replica) read(req *request, l Level) {
	agg := NewReadAggregator(l, r.peers(), cmp.Compare[int], r.s.rng, r.s.now)
	r.nextID++
	op := &readOp{req: req, agg: agg}
	if agg.Outcome() != ReadPending {
		r.finishRead(op)
		return
	}
	r.reads[r.nextID] = op
	for _, n := range agg.Primary() {
		r.s.send(r.self, n, mRead{key: req.key, id: r.nextID})
	}
}

func (r *replica) finishRead(op *readOp) {
	for id, o := range r.reads {
		if o == op {
			delete(r.reads, id)
		}
	}
	if op.agg.Outcome() != ReadDone {
		r.s.reply(op.req, false, nil)
		return
	}
	if op.acc != nil {
		r.value(op.req.key).merge(op.acc) // read repair
	}
	r.s.reply(op.req, true, maps.Clone(r.value(op.req.key).counts))
}

// tick runs the operations' timers.
func (r *replica) tick() {
	for _, id := range slices.Sorted(maps.Keys(r.writes)) {
		op := r.writes[id]
		secondary, out := op.agg.Tick(r.s.now)
		for _, n := range secondary {
			r.s.send(r.self, n, op.msg)
		}
		if out != WritePending {
			r.finishWrite(op)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.reads)) {
		op := r.reads[id]
		secondary, out := op.agg.Tick(r.s.now)
		for _, n := range secondary {
			r.s.send(r.self, n, mRead{key: op.req.key, id: id})
		}
		if out != ReadPending {
			r.finishRead(op)
		}
	}
}

func (r *replica) gossip() {
	var reachable, unreachable []int
	for _, p := range r.peers() {
		if p.Reachable {
			reachable = append(reachable, p.Node)
		} else {
			unreachable = append(unreachable, p.Node)
		}
	}
	to, ok := GossipTarget(reachable, unreachable, r.round, r.s.rng)
	if !ok {
		return
	}
	st := BuildStatus(r.digests(), r.round, 2) // 2: several chunks with a few keys
	r.round++
	r.s.send(r.self, to, mStatus{st: st})
}

// propagate sends this tick's deltas.
func (r *replica) propagate() {
	r.deltas.SetNodes(r.reachableNodes())
	sends := r.deltas.Collect()
	for _, to := range slices.Sorted(maps.Keys(sends)) {
		r.s.send(r.self, to, mDeltas{sends: sends[to]})
	}
}

func (r *replica) sendValues(to int, keys []string, sendBack bool) {
	vals := make(map[string]*counter)
	for _, k := range keys {
		if v := r.vals[k]; v != nil {
			vals[k] = v.clone()
		}
	}
	if len(vals) > 0 {
		r.s.send(r.self, to, mGossip{vals: vals, sendBack: sendBack})
	}
}

func (r *replica) receive(from int, msg any) {
	switch m := msg.(type) {
	case mWrite:
		r.value(m.key).merge(m.val)
		r.s.send(r.self, from, mWriteAck{id: m.id})
	case mWriteAck:
		if op := r.writes[m.id]; op != nil && op.agg.Ack(from) != WritePending {
			r.finishWrite(op)
		}
	case mRead:
		var v *counter
		if cur := r.vals[m.key]; cur != nil {
			v = cur.clone()
		}
		r.s.send(r.self, from, mReadResult{id: m.id, val: v})
	case mReadResult:
		op := r.reads[m.id]
		if op == nil {
			return
		}
		if m.val != nil && op.agg.Accepts(from) {
			if op.acc == nil {
				op.acc = m.val.clone()
			} else {
				op.acc.merge(m.val)
			}
		}
		if op.agg.Reply(from) != ReadPending {
			r.finishRead(op)
		}
	case mStatus:
		local := r.digests()
		rep := CompareStatus(local, m.st, 0, 2)
		r.sendValues(from, rep.Send, rep.SendBack)
		if len(rep.Request) > 0 {
			r.s.send(r.self, from, mStatus{st: RequestStatus(local, rep.Request, m.st, 0)})
		}
	case mGossip:
		received := make(map[string]uint64)
		for k, v := range m.vals {
			received[k] = v.digest()
			r.value(k).merge(v)
		}
		if m.sendBack {
			r.sendValues(from, SendBackKeys(received, r.digests()), false)
		}
	case mDeltas:
		var full []string
		for _, ds := range m.sends {
			v := r.vals[ds.Key]
			rc := Received{HasDelta: !ds.Full, FromSeq: ds.FromSeq, ToSeq: ds.ToSeq}
			if !ds.Full {
				rc.Causal = ds.Delta.causal
			}
			if v != nil {
				rc.Current = v.versions[from]
			}
			verdict := CheckDelta(rc)
			r.s.verdicts[verdict]++
			switch verdict {
			case DeltaNeedFull:
				full = append(full, ds.Key)
			case DeltaApply:
				v = r.value(ds.Key)
				for n, c := range ds.Delta.counts {
					v.counts[n] = max(v.counts[n], c)
				}
				v.versions[from] = max(v.versions[from], ds.ToSeq)
			}
		}
		if len(full) > 0 {
			r.s.send(r.self, from, mFullRequest{keys: full})
		}
	case mFullRequest:
		r.sendValues(from, m.keys, false)
	}
}

// settled reports whether every request has been answered and every replica
// holds the model's value: the run is over.
func (s *sim) settled() bool {
	for _, req := range s.requests {
		if req.replies == 0 {
			return false
		}
	}
	for _, r := range s.nodes {
		for _, k := range keys {
			if !r.holds(k, s.model[k]) {
				return false
			}
		}
	}
	return true
}

// holds reports whether r's value of key is want.
func (r *replica) holds(key string, want map[int]uint64) bool {
	v := r.vals[key]
	if v == nil {
		return len(want) == 0
	}
	return maps.Equal(v.counts, want)
}

// reply records a request's answer; a second answer fails the test.
func (s *sim) reply(req *request, ok bool, value map[int]uint64) {
	req.replies++
	if req.replies > 1 {
		s.t.Errorf("request %d (node %d, key %s) answered twice", req.id, req.node, req.key)
		return
	}
	req.ok, req.at, req.value = ok, s.now, value
	s.logf("reply %d ok=%v value=%v", req.id, ok, value)
}

var keys = []string{"a", "b", "c1", "c2"}

func runSim(t *testing.T, seed uint64) {
	const nNodes = 5
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: simStart,
		side: make([]int, nNodes), loss: 0.05, dup: 0.05, model: map[string]map[int]uint64{}}
	for i := range nNodes {
		s.nodes = append(s.nodes, &replica{self: i, s: s, vals: map[string]*counter{},
			deltas: NewDeltaPropagation[int, *cdelta](3, cmp.Compare[int]), writes: map[uint64]*writeOp{}, reads: map[uint64]*readOp{}})
	}
	const (
		step       = 5 * time.Millisecond
		activeFor  = 20 * time.Second
		settleFor  = 60 * time.Second
		gossipEach = 100 * time.Millisecond
		deltaEach  = 20 * time.Millisecond
		opTimeout  = 500 * time.Millisecond
	)
	majority := Level{Kind: Majority, Timeout: opTimeout}
	var nextReq uint64
	end := simStart.Add(activeFor)
	for s.now.Before(end.Add(settleFor)) {
		active := s.now.Before(end)
		// Deliver what is due.
		for s.q.Len() > 0 && !s.q[0].at.After(s.now) {
			e := heap.Pop(&s.q).(envelope)
			if s.connected(e.from, e.to) {
				s.nodes[e.to].receive(e.from, e.msg)
			}
		}
		elapsed := s.now.Sub(simStart)
		for _, r := range s.nodes {
			r.tick()
			if elapsed%gossipEach == time.Duration(r.self)*step {
				r.gossip()
			}
			if elapsed%deltaEach == 0 {
				r.propagate()
			}
		}
		if active {
			// Partitions come and go.
			if s.rng.Float64() < 0.002 {
				healed := !slices.ContainsFunc(s.side, func(x int) bool { return x != 0 })
				if healed {
					for i := range s.side {
						s.side[i] = s.rng.IntN(2)
					}
				} else {
					clear(s.side)
				}
				s.logf("sides %v", s.side)
			}
			// Clients.
			if s.rng.Float64() < 0.2 {
				nextReq++
				node := s.rng.IntN(nNodes)
				req := &request{id: nextReq, node: node, key: keys[s.rng.IntN(len(keys))], started: s.now}
				s.requests = append(s.requests, req)
				r := s.nodes[node]
				switch x := s.rng.IntN(10); {
				case x < 4:
					req.write = true
					r.update(req, Level{})
					s.logf("request %d: node %d WriteLocal %s -> %d", req.id, node, req.key, req.count)
				case x < 7:
					req.write = true
					s.logf("request %d: node %d WriteMajority %s", req.id, node, req.key)
					r.update(req, majority)
				default:
					s.logf("request %d: node %d ReadMajority %s", req.id, node, req.key)
					r.read(req, majority)
				}
				if req.write {
					m := s.model[req.key]
					if m == nil {
						m = map[int]uint64{}
						s.model[req.key] = m
					}
					m[node] = req.count
				}
			}
		} else if s.loss != 0 {
			clear(s.side)
			s.loss, s.dup = 0, 0
			s.logf("last heal; no more loss")
		} else if elapsed%time.Second == 0 && s.settled() {
			s.logf("converged")
			break
		}
		s.now = s.now.Add(step)
	}

	// Every request was answered once (twice is reported by reply).
	for _, req := range s.requests {
		if req.replies == 0 {
			t.Errorf("request %d (node %d, key %s, write %v) was never answered", req.id, req.node, req.key, req.write)
		}
	}
	// A ReadMajority that started after a WriteMajority was acknowledged sees it.
	for _, w := range s.requests {
		if !w.write || !w.ok || w.at.Equal(w.started) {
			continue // not acknowledged by a majority (WriteLocal answers at once)
		}
		for _, rd := range s.requests {
			if rd.write || !rd.ok || rd.key != w.key || !rd.started.After(w.at) {
				continue
			}
			s.checked++
			if rd.value[w.node] < w.count {
				t.Errorf("read %d (node %d) of %s saw %d of node %d, but write %d had %d acknowledged by a majority",
					rd.id, rd.node, rd.key, rd.value[w.node], w.node, w.id, w.count)
			}
		}
	}
	// Convergence.
	for _, r := range s.nodes {
		for _, k := range keys {
			if !r.holds(k, s.model[k]) {
				var got map[int]uint64
				if v := r.vals[k]; v != nil {
					got = v.counts
				}
				t.Errorf("node %d: %s = %v after %v, want %v", r.self, k, got, settleFor, s.model[k])
			}
		}
	}
	var acked, checked, readsOK int
	for _, req := range s.requests {
		if req.write && req.ok && !req.at.Equal(req.started) {
			acked++
		}
		if !req.write && req.ok {
			readsOK++
		}
	}
	checked = s.checked
	if os.Getenv("TROUPE_SIM_VERBOSE") != "" {
		t.Logf("seed %d: %d requests, %d majority writes acknowledged, %d reads answered, %d read-after-write pairs checked, %d messages, %d delta verdicts (apply %d, full %d)",
			seed, len(s.requests), acked, readsOK, checked, s.seq, s.verdicts[0]+s.verdicts[1]+s.verdicts[2], s.verdicts[DeltaApply], s.verdicts[DeltaNeedFull])
	}
	if t.Failed() {
		t.Logf("seed %d failed (rerun: TROUPE_SIM_SEED=%d); last events:\n%s", seed, seed, strings.Join(s.log[max(0, len(s.log)-40):], "\n"))
	}
}

func TestSimulation(t *testing.T) {
	if v := os.Getenv("TROUPE_SIM_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TROUPE_SIM_SEED: %v", err)
		}
		runSim(t, seed)
		return
	}
	n := 20
	if v := os.Getenv("TROUPE_SIM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("TROUPE_SIM_SEEDS: %v", err)
		}
	}
	if testing.Short() {
		n = min(n, 3)
	}
	for seed := range uint64(n) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runSim(t, seed) })
	}
}
