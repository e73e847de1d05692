package singleton

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// Proxy starts a proxy to the singleton cfg names and returns its Ref: a message sent
// to it reaches the singleton wherever it runs, with its sender, so that the
// singleton's replies (and asks through the proxy) reach the sender. The proxy may run
// on any member, with the singleton's role or not; it runs under
// /system/singleton-proxy until the system stops, or until it is stopped like any
// actor (actor.PoisonPill, sys.Stop).
//
// The proxy sends to the manager on the oldest member with the role, once that
// manager confirmed that it runs the singleton, and finds the new one when the
// singleton moves. Until then it buffers messages (ProxyConfig.BufferSize; when full,
// the oldest is dropped). Messages from one proxy reach the singleton in the order
// they were sent to the proxy, also across a graceful hand-over. Each keeps the trace
// context it was sent to the proxy in (see actor.Ref.SendContext): the singleton
// handles it in that trace.
//
// Messages cross the wire even when the singleton runs on the same member, so their
// types must be registered in the registry given to remote.Start. A message that
// cannot be serialized (its type is not registered) is not sent: it becomes an
// Undelivered dead letter with the reason, is logged and counted (Dropped), and an
// Ask waiting for its reply fails at once. Tell to the proxy cannot return that
// error, as the proxy serializes the message on its own goroutine.
//
// Proxy needs remoting and the cluster started in sys; an invalid configuration or a
// missing cluster fails with an error wrapping ErrInvalidConfig. Each call starts a
// new proxy.
func Proxy(sys *actor.System, cfg ProxyConfig) (actor.Ref, error) {
	if err := cfg.Validate(); err != nil {
		return actor.Ref{}, err
	}
	cfg = cfg.WithDefaults()
	c, err := clusterOf(sys)
	if err != nil {
		return actor.Ref{}, err
	}
	reg, res, err := serializationOf(sys)
	if err != nil {
		return actor.Ref{}, err
	}
	e := extensionOf(sys)
	count := e.proxyBuffered(cfg.Name)
	props := actor.PropsOf(func() actor.Actor { return &proxyActor{cfg: cfg, c: c, reg: reg, res: res, count: count} })
	ref, err := e.spawn(proxyGuardian, props, e.nextProxyName(cfg.Name))
	if err != nil {
		return actor.Ref{}, fmt.Errorf("singleton %q: starting a proxy: %w", cfg.Name, err)
	}
	drainFor := drainIntervals * cfg.IdentificationInterval
	if err := sys.CoordinatedShutdown().AddTask(actor.PhaseClusterShardingShutdownRegion,
		"singleton-proxy-drain-"+ref.Path(), func(ctx context.Context) error { return drainProxy(ctx, ref, drainFor) }); err != nil {
		_ = sys.Stop(ref)
		return actor.Ref{}, fmt.Errorf("singleton %q: %w", cfg.Name, err)
	}
	return ref, nil
}

// drainRequest asks a proxy to answer (drained) once its buffer is empty.
type drainRequest struct{}

// drained answers drainRequest.
type drained struct{}

// drainIntervals is how many identification intervals a proxy's drain waits at
// most for its buffer to empty when its system shuts down.
const drainIntervals = 5

// drainProxy waits until the proxy's buffer is empty, at most d, so that what it
// holds reaches the singleton before the member leaves; the proxy keeps working. What
// is still buffered after d is dropped when the proxy stops.
func drainProxy(ctx context.Context, ref actor.Ref, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, _ = actor.Ask[drained](ctx, ref, drainRequest{})
	return nil
}

type proxyActor struct {
	cfg   ProxyConfig
	c     *cluster.Cluster
	reg   *serialization.Registry
	res   serialization.RefResolver
	codec *serialization.Codec
	log   *zap.Logger
	drops *dropLog
	core  *core.ProxyCore

	buffered int
	count    *atomic.Int64 // the buffered messages of the singleton's proxies on this member
	drainers []actor.Ref

	out        outbox // the messages taken since the last flush
	batchLimit int    // the bytes of a batch's encoding, at most
	// flushed and flushedTables are the payloads of the flush under way and their
	// tables, which the batch the core makes of them reuses; kept is set when
	// something may still refer to them after the flush.
	flushed       []core.Payload
	flushedTables *batchTables
	kept          bool
	stopped       chan struct{} // closed when the proxy stops: ends the cluster watcher

	// managers are the managers that confirmed they run the singleton, as they sent
	// their confirmation: Envelopes go to that incarnation and no other.
	managers map[cluster.UniqueAddress]actor.Ref
}

// Receive handles the proxy's own messages; anything else is a user message for the
// singleton. Before the proxy acts on one of its own messages it flushes what it took
// before (the messages in its outbox go first).
func (p *proxyActor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case flushBatch:
		p.out.flushQueued = false
		p.flush(ctx)
	case actor.Started:
		p.start(ctx)
	case actor.Stopped, actor.Restarting:
		p.count.Add(-int64(p.buffered)) // what it holds is dropped
		p.buffered = 0
	case clusterEvent:
		p.flush(ctx)
		for _, ev := range coreEvents(msg.ev, p.c.SelfUniqueAddress()) {
			if r, ok := ev.(core.MemberRemoved); ok {
				delete(p.managers, r.Node)
			}
			p.run(ctx, ev)
		}
	case timerTick:
		p.flush(ctx)
		p.run(ctx, core.TimerFired{Name: msg.name})
	case clusterDone:
		// This member left the cluster or was downed: nothing it sends reaches the
		// singleton any more.
		p.flush(ctx)
		p.run(ctx, core.ProxyStopping{})
	case core.IdentifyAck:
		p.flush(ctx)
		if msg.Accepting && !ctx.Sender().IsZero() {
			p.managers[msg.From] = ctx.Sender()
		}
		p.run(ctx, msg)
	case drainRequest:
		p.flush(ctx)
		if p.buffered == 0 {
			_ = ctx.Respond(drained{})
		} else if !ctx.Sender().IsZero() {
			p.drainers = append(p.drainers, ctx.Sender())
		}
	case actor.Stopping:
		p.flush(ctx)
		if p.stopped != nil {
			close(p.stopped)
		}
		p.run(ctx, core.ProxyStopping{})
		for _, r := range p.drainers {
			_ = ctx.Send(r, drained{})
		}
		p.drainers = nil
		if p.drops != nil {
			p.drops.flush()
		}
	default:
		p.send(ctx, msg)
	}
}

// flushBatch is the message a proxy sends itself to flush what it took meanwhile.
type flushBatch struct{}

func (p *proxyActor) start(ctx actor.Context) {
	p.log = ctx.Logger().With(zap.String("singleton", p.cfg.Name))
	p.drops = newDropLog(ctx.System(), p.cfg.Name, p.log)
	p.codec = p.reg.NewCodec(p.res)
	p.managers = make(map[cluster.UniqueAddress]actor.Ref)
	self := ctx.Self()
	id := core.ProxyID{Node: p.c.SelfUniqueAddress(), Path: self.Path() + "#" + strconv.FormatUint(self.UID(), 10)}
	pc, err := core.NewProxyCore(id, p.cfg.core())
	if err == nil {
		err = subscribe(ctx, p.c)
	}
	if err != nil {
		p.log.Error("singleton proxy: cannot start", zap.Error(err))
		_ = ctx.Stop(self)
		return
	}
	p.core = pc
	p.batchLimit = batchLimit(ctx.System())
	p.out = newOutbox(id, p.batchLimit)
	p.stopped = make(chan struct{})
	watchCluster(self, p.c, p.stopped)
}

// send serializes a user message into the pending batch, with the trace context it
// came in (none while tracing is off); the batch goes to the core when it is full, or
// when the flush the proxy sends itself arrives.
func (p *proxyActor) send(ctx actor.Context, msg any) {
	if p.core == nil {
		p.drops.drop(msg, ctx.Sender(), "the proxy did not start")
		return
	}
	full, err := p.out.add(p.codec, msg, ctx.Sender(), tracewire.Of(ctx.TraceContext()))
	if err != nil {
		p.drops.drop(msg, ctx.Sender(), "the message cannot be sent to the singleton: "+err.Error())
		return
	}
	switch {
	case full:
		p.flush(ctx)
	case !p.out.flushQueued:
		p.out.flushQueued = true
		_ = ctx.Self().Tell(flushBatch{})
	}
}

// flush hands the messages in the outbox to the core, which keeps them (it may
// buffer them, and a batch to a manager on this member is not copied).
func (p *proxyActor) flush(ctx actor.Context) {
	ps, t, data := p.out.take()
	if len(ps) == 0 {
		return
	}
	p.flushed, p.flushedTables, p.kept = ps, t, false
	p.run(ctx, core.SendMany{Payloads: ps})
	if !p.kept && p.buffered == 0 {
		// Every message left in frames to a remote manager, encoded: the outbox may
		// reuse the buffers.
		p.out.recycle(ps, t, data)
	}
	p.flushed, p.flushedTables = nil, nil
}

func (p *proxyActor) run(ctx actor.Context, ev core.Event) {
	if p.core == nil {
		return
	}
	for _, d := range p.core.Handle(ev) {
		switch d := d.(type) {
		case core.SendToManager:
			p.sendToManager(ctx, d.To, d.Message)
		case core.StartTimer:
			ctx.StartPeriodicTimer(timerKey(d.Name), timerTick{name: d.Name}, d.Interval)
		case core.CancelTimer:
			ctx.CancelTimer(timerKey(d.Name))
		case core.Dropped:
			p.kept = true // its payload may be the dead letter
			p.drops.drop(decodeForDeadLetter(p.codec, d.Payload), d.Payload.Sender, d.Reason)
		case core.ProxyStateChanged:
			p.count.Add(int64(d.Status.Buffered - p.buffered))
			p.buffered = d.Status.Buffered
			if p.buffered == 0 {
				for _, r := range p.drainers {
					_ = ctx.Send(r, drained{})
				}
				p.drainers = nil
			}
		}
	}
}

// sendToManager sends msg to the manager on member to: an Identify to whichever
// manager runs there, anything else to the incarnation that confirmed it runs the
// singleton.
func (p *proxyActor) sendToManager(ctx actor.Context, to cluster.UniqueAddress, msg any) {
	ref, ok := p.managers[to]
	if _, identify := msg.(core.Identify); identify || !ok {
		var err error
		ref, err = ctx.System().Resolve(to.Addr + managerPath(p.cfg.Name))
		if err != nil {
			p.log.Error("singleton proxy: cannot reach the manager of a member", zap.String("member", to.String()), zap.Error(err))
			return
		}
	}
	switch m := msg.(type) {
	case core.Batch:
		// Several batches when it does not fit in one frame.
		bs := []batch{{b: m, t: tablesFor(m, p.flushed, p.flushedTables, p.batchLimit)}}
		if bs[0].t == nil {
			bs = packBatches(m, p.batchLimit)
		}
		// A manager on this member gets the payloads themselves; the transport encodes
		// a message to another member before Tell returns, and keeps it only when it
		// refuses it (as a dead letter).
		p.kept = p.kept || ref.IsLocal()
		for _, b := range bs {
			if err := ref.Tell(b); err != nil {
				p.kept = true
				for _, pl := range b.b.Payloads {
					p.drops.drop(decodeForDeadLetter(p.codec, pl), pl.Sender, "sending to the singleton's member failed: "+err.Error())
				}
			}
		}
		return
	case core.Detach:
		delete(p.managers, to)
	}
	_ = ctx.Send(ref, msg)
}
