package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/sharding"
	"go.uber.org/zap"
)

// Options configure a simulation. Zero fields mean the documented defaults.
type Options struct {
	// Seed gives the fault schedule and every random choice of the workload.
	Seed uint64
	// Nodes is how many nodes start. Default 5.
	Nodes int
	// Faults is how many fault events the schedule has before its final heal.
	// Default 6.
	Faults int
	// Span is the virtual time the faults are spread over. Default 5 minutes.
	Span time.Duration
	// Schedule, when set, replaces the schedule Seed would give.
	Schedule []Event
	// Entities is how many entities the workload writes to; Shards how many shards
	// they are spread over. Defaults 20 and 10.
	Entities, Shards int
	// Settle is how long after a failure ends it may still have effects: requests
	// that fail within it are not violations. Default 2 minutes.
	Settle time.Duration
	// ConvergeWithin bounds the time from the last event of the schedule until
	// every node sees every other Up and every entity answers from every node.
	// Default 3 minutes.
	ConvergeWithin time.Duration
	// Logger receives the nodes' logs. Default: what they log at Debug and above is
	// kept in memory for the report (Report.NodeLog).
	Logger *zap.Logger
}

func (o *Options) defaults() {
	if o.Nodes == 0 {
		o.Nodes = 5
	}
	if o.Faults == 0 {
		o.Faults = 6
	}
	if o.Span == 0 {
		o.Span = 5 * time.Minute
	}
	if o.Entities == 0 {
		o.Entities = 20
	}
	if o.Shards == 0 {
		o.Shards = 10
	}
	if o.Settle == 0 {
		o.Settle = 2 * time.Minute
	}
	if o.ConvergeWithin == 0 {
		o.ConvergeWithin = 3 * time.Minute
	}
	if o.Schedule == nil {
		o.Schedule = Generate(o.Seed, o.Nodes, o.Faults, o.Span)
	}
}

// Report is what a simulation did.
type Report struct {
	Seed       uint64
	Schedule   []Event
	Log        []string      // what happened, with virtual times
	NodeLog    []string      // the nodes' log lines (unless Options.Logger is set)
	Violations []string      // empty when every checker passed
	Virtual    time.Duration // virtual time simulated
	Converged  time.Duration // from the last event to convergence (see Options.ConvergeWithin)
	Acked      int           // requests acknowledged
	Failed     int           // requests that failed (each allowed by a fault, or a violation)
}

// run is one simulation in progress.
type run struct {
	opts    Options
	net     *Network
	journal *memjournal.Store
	reg     *serialization.Registry
	chk     *Checker
	logger  *zap.Logger
	logs    *nodeLog // the nodes' log, when Options.Logger is not set
	start   time.Time
	stop    chan struct{} // closed when the workload must end
	wg      sync.WaitGroup

	mu        sync.Mutex
	nodes     []*node
	deferred  int               // restarts of the first seed waiting for a reachable seed
	heals     int               // heals so far: a partition's way back is not cut after a heal
	attempted map[string]bool   // elements of the replicated set a node tried to add
	added     map[string]string // element -> incarnation that added it to its own replica
	log       []string
}

func (s *run) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%9v  ", time.Since(s.start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

// Run runs one simulation in a testing/synctest bubble, and returns its report. It
// fails t with the seed, the schedule, the log and the command that replays it when
// a checker finds a violation.
func Run(t *testing.T, opts Options) *Report {
	t.Helper()
	replay := fmt.Sprintf("go test -run '^%s$' in the test's package", t.Name())
	if opts.Schedule == nil {
		replay = fmt.Sprintf("TROUPE_SIM_SEED=%d ", opts.Seed) + replay
	}
	opts.defaults()
	var rep *Report
	synctest.Test(t, func(t *testing.T) {
		rep = simulate(t, opts)
	})
	if len(rep.Violations) > 0 {
		where := "not kept (Options.Logger was set)"
		if rep.NodeLog != nil {
			where = writeNodeLog(rep)
		}
		t.Errorf("simulation of seed %d found %d violations:\n  %s\nschedule:\n  %s\nlog:\n  %s\nthe nodes' log: %s\nreplay: %s",
			rep.Seed, len(rep.Violations), strings.Join(rep.Violations, "\n  "), strings.Join(eventStrings(rep.Schedule), "\n  "),
			strings.Join(rep.Log, "\n  "), where, replay)
	}
	return rep
}

// writeNodeLog writes the nodes' log of a failing run to a file, and returns its name
// (or why there is none).
func writeNodeLog(rep *Report) string {
	f, err := os.CreateTemp("", fmt.Sprintf("troupe-sim-seed-%d-*.log", rep.Seed))
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(rep.NodeLog, "\n") + "\n"); err != nil {
		return err.Error()
	}
	return f.Name()
}

func eventStrings(evs []Event) []string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.String()
	}
	return s
}

func simulate(t *testing.T, opts Options) *Report {
	s := &run{
		opts:      opts,
		net:       NewNetwork(opts.Seed),
		journal:   memjournal.New(),
		reg:       serialization.NewRegistry(),
		chk:       NewChecker(),
		logger:    opts.Logger,
		logs:      &nodeLog{},
		start:     time.Now(),
		stop:      make(chan struct{}),
		added:     make(map[string]string),
		attempted: make(map[string]bool),
	}
	rep := &Report{Seed: opts.Seed, Schedule: opts.Schedule}
	if s.logger == nil {
		s.logger = s.logs.logger()
	}
	if err := register(s.reg); err != nil {
		t.Fatal(err)
	}
	slots := opts.Nodes
	for _, e := range opts.Schedule {
		slots = max(slots, e.Node+1)
	}
	slots++ // the graceful phase's joiner
	for i := range slots {
		s.nodes = append(s.nodes, &node{index: i, ip: hostOf(i)})
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x1a7e))
	for _, a := range s.nodes {
		for _, b := range s.nodes {
			if a != b {
				// One-way latencies of 0.2 to 20 ms: the nodes of a data centre, or of
				// a region's zones.
				s.net.SetLatency(a.ip, b.ip, time.Duration(200+rng.IntN(19800))*time.Microsecond)
			}
		}
	}
	for i := range opts.Nodes {
		if err := s.boot(s.nodes[i]); err != nil {
			s.shutdownAll() // the bubble ends only once every node's goroutines have
			t.Fatal(err)
		}
	}
	for formed := time.Now().Add(opts.ConvergeWithin); !s.converged(); time.Sleep(time.Second) {
		if time.Now().After(formed) {
			s.shutdownAll()
			t.Fatalf("sim: seed %d: the %d nodes did not form a cluster within %v", opts.Seed, opts.Nodes, opts.ConvergeWithin)
		}
	}
	s.mu.Lock()
	s.logf("%d nodes up", opts.Nodes)
	s.mu.Unlock()
	for i := range opts.Entities {
		s.wg.Add(2)
		go s.client(i)
		go s.reader(i)
	}
	calmFrom := s.play(opts.Schedule)
	last := time.Since(s.start)
	s.settle(rep)
	rep.Converged = time.Since(s.start) - last
	s.gracefulPhase(calmFrom)
	close(s.stop)
	s.wg.Wait()
	s.shutdownAll()
	if err := s.chk.CheckJournal(context.Background(), s.journal, decodeAdded(s.reg)); err != nil {
		s.chk.Violationf("%v", err)
	}
	s.chk.CheckRequests()
	_ = s.journal.Close()
	rep.Virtual = time.Since(s.start)
	rep.Violations = s.chk.Violations()
	rep.Acked, rep.Failed = s.chk.Counts()
	rep.Log = s.log
	if opts.Logger == nil {
		rep.NodeLog = s.logs.all()
	}
	return rep
}

func decodeAdded(reg *serialization.Registry) func(persistence.Record) (uint64, error) {
	return func(r persistence.Record) (uint64, error) {
		v, err := reg.Unmarshal(r.Manifest, r.Payload)
		if err != nil {
			return 0, err
		}
		switch ev := v.(type) {
		case Added:
			return ev.Op, nil
		case Stopped:
			return 0, nil
		}
		return 0, fmt.Errorf("sim: %s holds a %T", r.PersistenceID, v)
	}
}

// play applies the schedule's events at their times, and tells the checker when
// nothing but graceful changes had effects. It returns when the effects of the last
// failure may have ended (Options.Settle after it).
func (s *run) play(evs []Event) time.Time {
	calmFrom := s.start
	faulty := false // a link fault is in effect
	for _, e := range evs {
		if d := time.Until(s.start.Add(e.At)); d > 0 {
			time.Sleep(d)
		}
		now := time.Now()
		if !e.Kind.graceful() && !faulty && now.After(calmFrom) {
			s.chk.Calm(calmFrom, now)
		}
		s.mu.Lock()
		s.logf("%s", e.what())
		s.mu.Unlock()
		switch e.Kind {
		case Crash:
			s.crash(s.nodes[e.Node])
		case Leave:
			s.leave(s.nodes[e.Node])
		case Restart, Join:
			s.restart(s.nodes[e.Node])
		case Partition:
			// One way first, the way back a moment later, as a real partition's
			// sides rarely notice it at the same instant.
			s.mu.Lock()
			heals := s.heals
			s.mu.Unlock()
			cut := func(back bool) {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.heals != heals {
					return // healed meanwhile
				}
				for _, l := range e.crossing(back) {
					s.net.AddFault(hostOf(l[0]), hostOf(l[1]), Link{Cut: true})
				}
			}
			cut(false)
			time.AfterFunc(e.Delay, func() { cut(true) })
		case OneWay:
			s.net.AddFault(hostOf(e.From), hostOf(e.To), Link{Cut: true})
		case Delay:
			s.net.AddFault(hostOf(e.From), hostOf(e.To), Link{Delay: e.Delay / 2})
			s.net.AddFault(hostOf(e.To), hostOf(e.From), Link{Delay: e.Delay / 2})
		case Loss:
			s.net.AddFault(hostOf(e.From), hostOf(e.To), Link{Loss: e.Loss})
			s.net.AddFault(hostOf(e.To), hostOf(e.From), Link{Loss: e.Loss})
		case Slow:
			for _, o := range s.nodes {
				if o.index != e.Node {
					s.net.AddFault(hostOf(e.Node), o.ip, Link{Delay: e.Delay})
					s.net.AddFault(o.ip, hostOf(e.Node), Link{Delay: e.Delay})
				}
			}
		case Heal:
			s.mu.Lock()
			s.heals++
			s.net.Heal()
			s.mu.Unlock()
		}
		switch {
		case e.Kind == Heal:
			faulty = false
		case e.Kind == Partition || e.Kind == OneWay || e.Kind == Delay || e.Kind == Loss || e.Kind == Slow:
			faulty = true
		}
		if !e.Kind.graceful() {
			calmFrom = now.Add(s.opts.Settle)
		}
	}
	return calmFrom
}

// gracefulPhase ends every run with graceful changes only, once the last failure's
// effects may have ended: a new node joins, and later a node leaves; every request
// meanwhile must succeed (Checker.Calm).
func (s *run) gracefulPhase(calmFrom time.Time) {
	if d := time.Until(calmFrom); d > 0 {
		time.Sleep(d)
	}
	from := time.Now()
	joiner := s.nodes[len(s.nodes)-1] // the slot kept for it
	s.mu.Lock()
	s.logf("graceful phase: join n%d", joiner.index)
	s.mu.Unlock()
	if err := s.boot(joiner); err != nil {
		s.chk.Violationf("%v", err)
		return
	}
	time.Sleep(30 * time.Second)
	var leaver *node
	for _, n := range s.liveNodes() {
		if n.slot.index > 0 && n.slot != joiner && (leaver == nil || n.slot.index > leaver.index) {
			leaver = n.slot
		}
	}
	if leaver != nil {
		s.mu.Lock()
		s.logf("graceful phase: leave n%d", leaver.index)
		s.mu.Unlock()
		s.leave(leaver)
	}
	time.Sleep(30 * time.Second)
	s.chk.Calm(from, time.Now())
}

// restart starts a new incarnation on n's slot, once the previous one has gone. The
// first seed node starts only as docs/cluster.md says to start it: while another seed
// node is Up and reachable from it (it joins their cluster), or while no node is Up
// (it forms a new one, which the others join). Otherwise it would form a second cluster after
// SeedNodeTimeout, as Akka's first seed does; its restart waits until then.
func (s *run) restart(n *node) {
	s.mu.Lock()
	done, st, deferred := n.done, n.state, n.deferred
	s.mu.Unlock()
	if st == running || deferred {
		return // running, or its restart already waits
	}
	if done != nil {
		<-done // crashed or leaving: the incarnation ends first
	}
	if n.index == 0 && !s.firstSeedMayStart() {
		s.mu.Lock()
		s.logf("n0 waits to restart until a seed node is reachable")
		s.deferred++
		n.deferred = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { s.mu.Lock(); s.deferred--; n.deferred = false; s.mu.Unlock() }()
			for !s.firstSeedMayStart() {
				select {
				case <-s.stop:
					return
				case <-time.After(time.Second):
				}
			}
			s.mu.Lock()
			s.logf("n0 restarts")
			s.mu.Unlock()
			if err := s.boot(n); err != nil {
				s.chk.Violationf("%v", err)
			}
		}()
		return
	}
	if err := s.boot(n); err != nil {
		s.chk.Violationf("%v", err)
	}
}

// firstSeedMayStart reports whether node 0, the first seed, may start: another seed
// node is Up and reachable from it, or no node is Up.
func (s *run) firstSeedMayStart() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	anyUp := false
	for _, o := range s.nodes[1:] {
		if o.state != running || !isUp(o) {
			continue
		}
		anyUp = true
		if o.index < s.opts.Nodes && s.net.linked(s.nodes[0].ip, o.ip) {
			return true
		}
	}
	return !anyUp
}

// isUp reports whether n's incarnation sees itself Up.
func isUp(n *node) bool {
	self := n.cluster.SelfUniqueAddress()
	for _, m := range n.cluster.State().Members {
		if m.Unique == self {
			return m.Status == member.Up
		}
	}
	return false
}

// settle restarts the nodes that are down, then waits until the cluster has
// converged and every entity answers from every node, up to ConvergeWithin.
func (s *run) settle(rep *Report) {
	deadline := time.Now().Add(s.opts.ConvergeWithin)
	for _, n := range s.nodes {
		s.mu.Lock()
		st, started := n.state, n.gen > 0
		s.mu.Unlock()
		if st == stopped && started {
			s.restart(n)
		}
	}
	for {
		s.mu.Lock()
		waiting := s.deferred > 0
		s.mu.Unlock()
		if !waiting && s.converged() {
			break
		}
		if time.Now().After(deadline) {
			s.chk.Violationf("the cluster did not converge within %v of the last event", s.opts.ConvergeWithin)
			return
		}
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	s.logf("converged")
	s.mu.Unlock()
	for id := range s.opts.Entities {
		for _, n := range s.liveNodes() {
			for {
				err := s.get(n, id)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					s.chk.Violationf("entity %d did not answer from %s within %v of the last event: %v", id, n.incarnation, s.opts.ConvergeWithin, err)
					return
				}
				time.Sleep(time.Second) // an error that came at once must not spin: virtual time would stop
			}
		}
	}
	s.checkSet(deadline)
}

// live is a running incarnation, as liveNodes found it.
type live struct {
	slot        *node
	incarnation string
	sys         *actor.System
	cluster     *cluster.Cluster
	repl        *ddata.Replicator
}

// liveNodes returns the running incarnations.
func (s *run) liveNodes() []live {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []live
	for _, n := range s.nodes {
		if n.state == running {
			ls = append(ls, live{slot: n, incarnation: n.incarnation, sys: n.sys, cluster: n.cluster, repl: n.repl})
		}
	}
	return ls
}

func (s *run) get(n live, id int) error {
	ref, err := sharding.EntityRefFor[any](n.sys, entityType, sharding.EntityID(strconv.Itoa(id)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = sharding.Ask[Ack, any](ctx, ref, Get{})
	return err
}

// checkSet waits until every node holds the same replicated set, then checks it
// against what was added: nothing that was not added, and everything a running
// incarnation added.
func (s *run) checkSet(deadline time.Time) {
	live := s.liveNodes()
	if len(live) == 0 {
		return // settle reported that nothing runs
	}
	var sets [][]string
	for {
		sets = sets[:0]
		for _, n := range live {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			g, err := ddata.Read(ctx, n.repl, setKey, ddata.ReadLocal())
			cancel()
			var els []string
			if err == nil && g != nil {
				els = g.Elements()
			}
			slices.Sort(els)
			sets = append(sets, els)
		}
		same := true
		for _, o := range sets[1:] {
			same = same && slices.Equal(o, sets[0])
		}
		if same {
			break
		}
		if time.Now().After(deadline) {
			s.chk.Violationf("distributed data did not converge within %v of the last event", s.opts.ConvergeWithin)
			return
		}
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := make(map[string]bool, len(sets[0]))
	for _, e := range sets[0] {
		in[e] = true
		if _, ok := s.attempted[e]; !ok {
			s.chk.Violationf("replicated set holds %q, which no node added", e)
		}
	}
	running := make(map[string]bool)
	for _, n := range live {
		running[n.incarnation] = true
	}
	for e, inc := range s.added {
		if running[inc] && !in[e] {
			// Added by an incarnation that still runs: its own replica holds it, so
			// every replica must.
			s.chk.Violationf("replicated set lacks %q, added by %s, which still runs", e, inc)
		}
	}
}

// client writes to entity id: one request at a time, through a random running node.
func (s *run) client(id int) {
	defer s.wg.Done()
	rng := rand.New(rand.NewPCG(s.opts.Seed, uint64(id)+1<<32))
	pid := "sim-" + strconv.Itoa(id)
	for op := uint64(1); ; op++ {
		select {
		case <-s.stop:
			return
		case <-time.After(time.Duration(50+rng.IntN(450)) * time.Millisecond):
		}
		live := s.liveNodes()
		if len(live) == 0 {
			continue
		}
		n := live[rng.IntN(len(live))]
		ref, err := sharding.EntityRefFor[any](n.sys, entityType, sharding.EntityID(strconv.Itoa(id)))
		if err != nil {
			continue
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ack, err := sharding.Ask[Ack, any](ctx, ref, Add{Op: op})
		cancel()
		if err == nil {
			s.chk.Acked(pid, op, ack.Seq)
			continue
		}
		if s.mayServe(n) {
			s.chk.RequestFailed(fmt.Sprintf("request %d to %s through %s", op, pid, n.incarnation), sent, err)
		}
	}
}

// reader reads entity id now and then, through a random running node, besides its
// writer: a request that may reach a shard's next home while the previous home still
// finishes the writer's last write.
func (s *run) reader(id int) {
	defer s.wg.Done()
	rng := rand.New(rand.NewPCG(s.opts.Seed, uint64(id)+2<<32))
	for k := 1; ; k++ {
		select {
		case <-s.stop:
			return
		case <-time.After(time.Duration(100+rng.IntN(1900)) * time.Millisecond):
		}
		live := s.liveNodes()
		if len(live) == 0 {
			continue
		}
		n := live[rng.IntN(len(live))]
		sent := time.Now()
		err := s.get(n, id)
		if err == nil {
			continue
		}
		if s.mayServe(n) {
			s.chk.RequestFailed(fmt.Sprintf("read %d of sim-%d through %s", k, id, n.incarnation), sent, err)
		}
	}
}

// mayServe reports whether a request that went through n and failed now could have
// been served: n still runs (a node that left or crashed loses what went through it)
// and became Up meanwhile (a node that never joins a cluster, because no seed node is
// in one, serves nothing; its region holds what it is sent until then).
func (s *run) mayServe(n live) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return n.slot.sys == n.sys && n.slot.state == running && !n.slot.upAt.IsZero()
}

// shutdownAll shuts every running node down gracefully and waits for every
// incarnation to end.
func (s *run) shutdownAll() {
	for _, n := range s.liveNodes() {
		s.leave(n.slot)
	}
	s.mu.Lock()
	var dones []chan struct{}
	for _, n := range s.nodes {
		if n.done != nil {
			dones = append(dones, n.done)
		}
	}
	s.mu.Unlock()
	for _, d := range dones {
		<-d
	}
	// memberlist leaves a probe or two behind its Shutdown, each ending at its
	// timeout: the bubble's clock must run until they have (it stops once the
	// simulation returns).
	time.Sleep(time.Minute)
}

// Seeds returns the seeds a test runs: TROUPE_SIM_SEED (one seed, to replay a
// failure) or TROUPE_SIM_SEEDS when set, else 1 to n. TROUPE_SIM_SEEDS is a count
// ("1000": seeds 1 to 1000) or a range ("1001-2000"), so that several processes can
// share thousands of seeds. A value that is neither fails t.
func Seeds(t testing.TB, n int) []uint64 {
	t.Helper()
	if v := os.Getenv("TROUPE_SIM_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("sim: TROUPE_SIM_SEED=%q is not a seed: %v", v, err)
		}
		return []uint64{s}
	}
	first, last := uint64(1), uint64(n)
	if v := os.Getenv("TROUPE_SIM_SEEDS"); v != "" {
		var ok bool
		if first, last, ok = seedRange(v); !ok {
			t.Fatalf("sim: TROUPE_SIM_SEEDS=%q is neither a number of seeds nor a range such as 1001-2000", v)
		}
	}
	seeds := make([]uint64, 0, last-first+1)
	for s := first; s <= last; s++ {
		seeds = append(seeds, s)
	}
	return seeds
}

// seedRange parses TROUPE_SIM_SEEDS: "n" is 1 to n, "a-b" is a to b.
func seedRange(v string) (first, last uint64, ok bool) {
	a, b, isRange := strings.Cut(v, "-")
	if !isRange {
		a, b = "1", v
	}
	first, err1 := strconv.ParseUint(a, 10, 64)
	last, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || first < 1 || last < first {
		return 0, 0, false
	}
	return first, last, true
}
