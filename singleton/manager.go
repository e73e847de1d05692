package singleton

import (
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/supervision"
	"go.uber.org/zap"
)

// The manager actor: a thin shell around core.ManagerCore. It feeds the core the
// cluster's events, the other managers' and the proxies' messages, its timers, the
// singleton's termination and the lease's outcomes, and carries out the decisions.

// Messages the manager sends itself.
type (
	selfLeaving  struct{}              // coordinated shutdown: this member leaves
	timerTick    struct{ name string } // a core timer fired
	timerKey     string                // the actor timer of a core timer
	restartChild struct{ gen uint64 }  // the backoff before a restart has passed
	leaseResult  struct {
		gen uint64
		ok  bool
	}
	leaseLost   struct{ gen uint64 }
	clusterDone struct{} // the cluster node stopped
)

func (selfLeaving) SuppressDeadLetterLog()  {}
func (timerTick) SuppressDeadLetterLog()    {}
func (restartChild) SuppressDeadLetterLog() {}
func (leaseResult) SuppressDeadLetterLog()  {}
func (leaseLost) SuppressDeadLetterLog()    {}
func (clusterDone) SuppressDeadLetterLog()  {}

// childPhase is where the singleton child is in the shell's eyes.
type childPhase uint8

const (
	childAbsent     childPhase = iota // not started, or terminated and reported
	childUp                           // running
	childTerminated                   // sent the termination message
	childBackoff                      // failed; a new instance starts after the backoff
)

type managerActor struct {
	metrics *singletonMetrics // nil while metrics are off
	times   transitions
	m       *Manager
	cfg     Config
	c       *cluster.Cluster
	reg     *serialization.Registry
	res     serialization.RefResolver
	codec   *serialization.Codec
	log     *zap.Logger
	drops   *dropLog
	core    *core.ManagerCore
	failed  *atomic.Bool // set by the supervision strategy when it stops the child
	pending []core.Event // events to feed once the current decisions are carried out
	busy    bool

	child      actor.Ref
	started    *atomic.Bool // the current instance handled Started without failing
	phase      childPhase
	restarts   int       // restarts since the last reset
	lastStart  time.Time // when the current instance started
	restartGen uint64
	held       []core.Envelope // delivered while the child waits for its restart

	// While the core handles a batch from another member: its payloads (feeding),
	// whether the core delivered all of them at once (wholeBatch), and whether a
	// payload may be referred to after the batch (kept: held for a restart, or
	// dropped). The batch's memory is reused when the one is set and the other is not.
	feeding          []core.Payload
	wholeBatch, kept bool

	managers map[cluster.UniqueAddress]actor.Ref
	proxies  map[core.ProxyID]actor.Ref

	lease     *leaseRunner
	clusterUp chan struct{} // closed when the manager stops: ends the cluster watcher
}

func managerProps(m *Manager, cfg Config, c *cluster.Cluster, reg *serialization.Registry, res serialization.RefResolver,
	metrics *singletonMetrics) *actor.Props {
	failed := new(atomic.Bool)
	return &actor.Props{
		Producer: func() actor.Actor {
			return &managerActor{m: m, cfg: cfg, c: c, reg: reg, res: res, failed: failed, metrics: metrics}
		},
		// The singleton is stopped when it fails; the manager starts a new one after a
		// backoff (see onChildTerminated). Other children (the event adapter) never fail.
		Strategy: supervision.OneForOne{Decider: func(error) supervision.Directive {
			failed.Store(true)
			return supervision.Stop
		}},
	}
}

func (a *managerActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case actor.Started:
		a.start(ctx)
	case clusterEvent:
		for _, ev := range coreEvents(msg.ev, a.c.SelfUniqueAddress()) {
			a.feed(ctx, ev)
		}
	case clusterDone:
		a.feed(ctx, core.SelfDowned{})
	case selfLeaving:
		a.feed(ctx, core.SelfLeaving{})
	case timerTick:
		a.feed(ctx, core.TimerFired{Name: msg.name})
	case actor.Terminated:
		a.onTerminated(ctx, msg.Ref)
	case restartChild:
		if msg.gen == a.restartGen && a.phase == childBackoff {
			a.spawnChild(ctx)
		}
	case leaseResult:
		if a.lease != nil && msg.gen == a.lease.gen {
			if msg.ok {
				a.feed(ctx, core.LeaseAcquired{})
			} else {
				a.feed(ctx, core.LeaseFailed{})
			}
		}
	case leaseLost:
		if a.lease != nil && msg.gen == a.lease.gen {
			a.feed(ctx, core.LeaseLost{})
		}
	case actor.Stopping:
		a.stopping()
	case actor.Stopped:
		// The singleton has stopped too, by now: a lease still held may go.
		if a.lease != nil {
			a.lease.stop()
		}
		a.m.update(func(s *Status) { s.Stopped, s.Finished, s.Running = true, true, false })
	case actor.Restarting:
	case post:
		a.feed(ctx, msg.envelope(ctx.Sender()))
	case batch:
		if len(msg.b.Payloads) == 0 {
			// Only a nil on the wire decodes to an empty batch: nothing to deliver.
			a.log.Warn("singleton manager: an empty batch", zap.Stringer("sender", ctx.Sender()))
			return
		}
		a.feedBatch(ctx, msg)
	case core.HandOverToMe, core.HandOverInProgress, core.HandOverDone, core.TakeOverFromMe,
		core.Relay, core.HandOverComplete, core.Identify, core.Detach:
		a.feed(ctx, msg.(core.Event))
	default:
		a.log.Warn("singleton manager: unexpected message", zap.String("type", typeName(msg)),
			zap.Stringer("sender", ctx.Sender()))
	}
}

func (a *managerActor) start(ctx actor.Context) {
	a.log = ctx.Logger().With(zap.String("singleton", a.cfg.Name))
	a.drops = newDropLog(ctx.System(), a.cfg.Name, a.log)
	a.codec = a.reg.NewCodec(a.res)
	a.managers = make(map[cluster.UniqueAddress]actor.Ref)
	a.proxies = make(map[core.ProxyID]actor.Ref)
	mc, err := core.NewManagerCore(a.c.SelfUniqueAddress(), a.cfg.core(), removalMargin(ctx.System()))
	if err != nil {
		a.log.Error("singleton manager: cannot start", zap.Error(err))
		_ = ctx.Stop(ctx.Self())
		return
	}
	a.core = mc
	a.m.update(func(s *Status) { s.State = StateStart })
	if a.cfg.Lease != nil {
		a.lease = newLeaseRunner(a.cfg.Lease, ctx.Self(), a.log)
	}
	if err := subscribe(ctx, a.c); err != nil {
		a.log.Error("singleton manager: cannot subscribe to the cluster", zap.Error(err))
		_ = ctx.Stop(ctx.Self())
		return
	}
	// A node that stops its cluster services without telling its subscribers (shut
	// down, crashed in a test) no longer runs the singleton.
	a.clusterUp = make(chan struct{})
	watchCluster(ctx.Self(), a.c, a.clusterUp)
}

// feedBatch feeds b to the core, and gives the memory of b's payloads back once
// they are delivered, decoded: when the core delivered the whole batch at once (the
// singleton runs here and b's messages are in order, the usual case) and none was
// held or dropped. Otherwise the core or the shell may hold some of its payloads (a
// hand-over, a restart, messages out of order), and the memory is left to the
// garbage collector.
func (a *managerActor) feedBatch(ctx actor.Context, b batch) {
	a.feeding, a.wholeBatch, a.kept = b.b.Payloads, false, false
	a.feed(ctx, b.b)
	if b.mem != nil && a.wholeBatch && !a.kept {
		b.mem.release()
	}
	a.feeding, a.wholeBatch, a.kept = nil, false, false
}

// sameMessages reports whether a and b are the same payloads, in the same memory.
func sameMessages(a, b []core.Payload) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// feed hands ev to the core and carries out its decisions. Events that arise while
// decisions are carried out (the singleton found already gone, say) are fed after
// them, in order.
func (a *managerActor) feed(ctx actor.Context, ev core.Event) {
	if a.core == nil {
		return
	}
	a.pending = append(a.pending, ev)
	if a.busy {
		return
	}
	a.busy = true
	for i := 0; i < len(a.pending); i++ {
		a.run(ctx, a.core.Handle(a.pending[i]))
	}
	clear(a.pending)
	a.pending = a.pending[:0]
	a.busy = false
}

func (a *managerActor) run(ctx actor.Context, ds []core.Decision) {
	for _, d := range ds {
		switch d := d.(type) {
		case core.StartChild:
			a.restarts = 0
			a.spawnChild(ctx)
		case core.SendTermination:
			a.terminateChild(ctx)
		case core.Deliver:
			a.deliver(ctx, d.Envelope)
		case core.DeliverBatch:
			for i := range d.Batch.Payloads {
				a.deliver(ctx, d.Batch.Envelope(i))
			}
			a.wholeBatch = a.wholeBatch || sameMessages(d.Batch.Payloads, a.feeding)
		case core.SendToManager:
			a.sendToManager(ctx, d.To, d.Message)
		case core.SendToProxy:
			a.sendToProxy(ctx, d.To, d.Message)
		case core.StartTimer:
			ctx.StartPeriodicTimer(timerKey(d.Name), timerTick{name: d.Name}, d.Interval)
		case core.CancelTimer:
			ctx.CancelTimer(timerKey(d.Name))
		case core.StopManager:
			_ = ctx.Stop(ctx.Self())
		case core.AcquireLease:
			a.lease.acquire()
		case core.ReleaseLease:
			a.lease.release()
		case core.Alert:
			a.log.Error("singleton: " + d.Message)
		case core.Dropped:
			a.drop(d.Payload, d.Reason)
		case core.StateChanged:
			s := d.Status
			a.times.changed(a.metrics, a.cfg.Name, State(s.State), s.ChildRunning, s.Finished, time.Now())
			a.m.update(func(st *Status) {
				st.State, st.Oldest, st.Running, st.Finished = State(s.State), s.Oldest, s.ChildRunning, s.Finished
			})
			a.log.Debug("singleton manager: state", zap.Stringer("state", s.State), zap.String("oldest", s.Oldest.String()),
				zap.Bool("running", s.ChildRunning), zap.Bool("finished", s.Finished))
		}
	}
}

// ---- the singleton ----

func (a *managerActor) spawnChild(ctx actor.Context) {
	a.failed.Store(false)
	started := new(atomic.Bool)
	a.started = started
	props := *a.cfg.Props
	user := a.cfg.Props.Producer
	props.Producer = func() actor.Actor { return &guarded{inner: user(), started: started} }
	ref, err := ctx.Spawn(&props, a.cfg.Name)
	if err != nil {
		a.log.Error("singleton: cannot start the singleton; retrying after a backoff", zap.Error(err))
		a.child = actor.Ref{}
		a.backoff(ctx)
		return
	}
	a.child, a.phase, a.lastStart = ref, childUp, time.Now()
	ctx.Watch(ref)
	a.log.Info("singleton starting on this member")
	held := a.held
	a.held = nil
	for _, e := range held {
		a.deliver(ctx, e)
	}
}

// terminateChild sends the singleton its termination message; ChildTerminated
// follows when it has terminated.
func (a *managerActor) terminateChild(ctx actor.Context) {
	switch a.phase {
	case childUp:
		a.phase = childTerminated
		if err := a.child.Send(a.cfg.TerminationMessage, ctx.Self()); err != nil {
			a.log.Error("singleton: cannot send the termination message; stopping the singleton", zap.Error(err))
			_ = ctx.Stop(a.child)
		}
	case childBackoff:
		// No instance runs: it has terminated already.
		a.phase = childAbsent
		a.restartGen++
		a.dropHeld("the singleton was stopped while it waited for a restart")
		a.feed(ctx, core.ChildTerminated{})
	}
}

func (a *managerActor) onTerminated(ctx actor.Context, ref actor.Ref) {
	if ref != a.child || ref.IsZero() {
		return
	}
	a.child = actor.Ref{}
	switch {
	case a.phase == childUp && (a.failed.Load() || !a.started.Load()):
		a.log.Warn("singleton failed; restarting it after a backoff", zap.Int("restarts", a.restarts))
		a.backoff(ctx)
	case a.phase == childUp || a.phase == childTerminated:
		a.phase = childAbsent
		a.log.Info("singleton stopped on this member")
		a.feed(ctx, core.ChildTerminated{})
	}
}

// guarded wraps the singleton to tell a failure to start (the runtime stops such an
// actor without asking its parent's supervision strategy) from a stop of its own.
type guarded struct {
	inner   actor.Actor
	started *atomic.Bool
}

func (g *guarded) Receive(ctx actor.Context) {
	g.inner.Receive(ctx)
	if _, ok := ctx.Message().(actor.Started); ok {
		g.started.Store(true)
	}
}

// backoff schedules the start of a new instance after the backoff delay.
func (a *managerActor) backoff(ctx actor.Context) {
	b := a.cfg.Backoff
	if !a.lastStart.IsZero() && time.Since(a.lastStart) >= b.ResetAfter && b.ResetAfter > 0 {
		a.restarts = 0
	}
	if b.MaxRetries > 0 && a.restarts >= b.MaxRetries {
		a.log.Error("singleton: it keeps failing; not restarting it any more", zap.Int("restarts", a.restarts))
		a.phase = childAbsent
		a.dropHeld("the singleton failed and is not restarted")
		a.feed(ctx, core.ChildTerminated{})
		return
	}
	a.phase = childBackoff
	a.restartGen++
	ctx.StartSingleTimer(timerKey("restart"), restartChild{gen: a.restartGen}, b.Delay(a.restarts, rand.Float64()))
	a.restarts++
}

// deliver decodes e's payload and sends it to the singleton with its sender, in the
// trace context it was sent to the proxy in.
func (a *managerActor) deliver(ctx actor.Context, e core.Envelope) {
	switch a.phase {
	case childBackoff:
		if len(a.held) >= a.cfg.BufferSize {
			old := a.held[0]
			a.held = a.held[1:]
			a.drop(old.Payload, "the manager's buffer is full while the singleton waits for a restart")
		}
		a.held = append(a.held, e)
		a.kept = true
		return
	case childUp:
	default:
		a.drop(e.Payload, "the singleton is not running")
		return
	}
	msg, err := a.codec.Decode(e.Payload.Manifest, e.Payload.Data)
	if err != nil {
		a.drop(e.Payload, "the message does not decode here: "+err.Error())
		return
	}
	if err := a.sendChild(msg, e.Payload); err != nil {
		a.drops.drop(msg, e.Payload.Sender, "the singleton refused it: "+err.Error())
	}
}

// sendChild sends msg, the message in p, to the singleton with p's sender, and in
// p's trace context when it has one. A trace context that does not parse (batches
// and posts are checked as they are decoded; a hand-over's messages are not) is left
// out, and the message sent.
func (a *managerActor) sendChild(msg any, p core.Payload) error {
	if p.Trace == nil {
		return a.child.Send(msg, p.Sender)
	}
	sc, err := tracewire.Parse(p.Trace)
	if err != nil {
		a.log.Debug("singleton manager: a message's trace context does not parse; sending it without", zap.Error(err))
		return a.child.Send(msg, p.Sender)
	}
	return a.child.SendContext(tracewire.Context(&sc), msg, p.Sender)
}

func (a *managerActor) dropHeld(reason string) {
	for _, e := range a.held {
		a.drop(e.Payload, reason)
	}
	a.held = nil
}

// drop publishes a payload that will not reach the singleton as a dead letter.
func (a *managerActor) drop(p core.Payload, reason string) {
	a.kept = true // the dead letter may be p itself
	a.m.update(func(s *Status) { s.Dropped++ })
	a.drops.drop(decodeForDeadLetter(a.codec, p), p.Sender, reason)
}

// decodeForDeadLetter returns the message in p, or p itself when it does not decode.
func decodeForDeadLetter(codec *serialization.Codec, p core.Payload) any {
	if msg, err := codec.Decode(p.Manifest, p.Data); err == nil {
		return msg
	}
	return p
}

// ---- messages to other managers and to proxies ----

func (a *managerActor) sendToManager(ctx actor.Context, to cluster.UniqueAddress, msg any) {
	ref, ok := a.managers[to]
	if !ok {
		var err error
		ref, err = ctx.System().Resolve(to.Addr + managerPath(a.cfg.Name))
		if err != nil {
			a.log.Error("singleton manager: cannot reach the manager of a member", zap.String("member", to.String()), zap.Error(err))
			return
		}
		a.managers[to] = ref
	}
	var err error
	if e, ok := msg.(core.Envelope); ok {
		// Forwarded with its sender, which the successor gives back to it.
		if err = ref.Send(toPost(e), e.Payload.Sender); err != nil {
			a.drop(e.Payload, "forwarding it to the singleton's new member failed: "+err.Error())
			return
		}
	} else {
		err = ctx.Send(ref, msg)
	}
	if err != nil {
		a.log.Warn("singleton manager: a message to another manager was not sent", zap.String("member", to.String()),
			zap.String("type", typeName(msg)), zap.Error(err))
	}
}

func (a *managerActor) sendToProxy(ctx actor.Context, to core.ProxyID, msg any) {
	ref, ok := a.proxies[to]
	if !ok {
		var err error
		ref, err = ctx.System().Resolve(to.Node.Addr + to.Path)
		if err != nil {
			a.log.Debug("singleton manager: a proxy is gone", zap.String("proxy", to.Node.Addr+to.Path), zap.Error(err))
			return
		}
		if len(a.proxies) > 10000 {
			clear(a.proxies)
		}
		a.proxies[to] = ref
	}
	_ = ctx.Send(ref, msg)
}

// stopping ends what the manager started outside the actor system.
func (a *managerActor) stopping() {
	if a.clusterUp != nil {
		close(a.clusterUp)
	}
	if a.drops != nil {
		a.drops.flush()
	}
	for _, e := range a.held {
		a.drop(e.Payload, "the singleton's manager stopped")
	}
	a.held = nil
}
