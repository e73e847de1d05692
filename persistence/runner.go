package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// runner is the actor behind an Entity: a thin shell around entityCore. It recovers
// the entity (recovery.go), serialises what the entity persists, submits the journal
// calls the core decides, runs the handlers the core releases, stashes and unstashes
// as told, and delivers the replies of snapshots and deletes (sideops.go).
type runner struct {
	newEntity  func() Entity
	entity     Entity // nil when it did not start
	live       bool   // recovered, and neither failed nor past its last lifecycle message
	failed     bool   // recovered, then stopped by a failure: it gets only Stopping and Stopped
	p          *Persistence
	pid        string
	self       actor.Ref
	writerID   string      // the WriterID of this incarnation's records: its full path with node and uid
	log        *zap.Logger // with the persistence id
	claimed    bool
	cancel     context.CancelFunc // ends the recovery goroutine
	recovering time.Time          // when recovery started, with metrics on

	core *entityCore[invoke]
	done writeDone // the answer of the call in flight, sent to self by pointer
	ops  []*sideOp // snapshot and delete requests not yet answered to the entity
	hs   []invoke  // reused by persist
	buf  []byte    // reused by marshal

	handlerSender actor.Ref          // the sender seen inside a persist handler
	handlerTrace  *trace.SpanContext // and the trace of its command (nil for none)
	inHandler     bool
	ctx           *entityContext

	// What answers the command behind a rejected write (see answerRejected).
	writes        uint64 // persist calls so far: each one's invocations carry its count
	answered      bool   // inside a handler: the entity answered the command's sender
	carried       bool   // inside a handler: the entity persisted or deferred for the command
	rejectedWrite uint64 // the write whose rejection was last answered
}

// invoke is what the runner needs to run one step: a persist handler with its event,
// or a deferred call, and the sender of the command behind it.
type invoke struct {
	event    any
	handler  handler
	deferred func()
	sender   actor.Ref
	trace    *trace.SpanContext // the command's trace context, nil for none
	write    uint64             // the persist call that made it (0 for a deferred call)
}

// writeDone is the answer to a journal call, sent by the batcher to the runner.
type writeDone struct {
	owner   *runner
	id      uint64
	results []error
	err     error
}

func (r *runner) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		r.start(ctx)
	case recoveredSnapshot:
		if m.owner == r {
			r.onSnapshot(ctx, m)
		}
	case recoveredEvents:
		if m.owner == r {
			r.onEvents(ctx, m)
		}
	case recoveryDone:
		if m.owner == r {
			r.onRecoveryDone(ctx, m)
		}
	case *writeDone:
		if m.owner == r {
			r.onWriteDone(ctx, m)
		}
	case opDone:
		if m.owner == r {
			r.onOpDone(ctx, m.op)
		}
	case redeliverTick:
		if a, ok := r.entity.(atLeastOnce); ok && r.live {
			if warn, ok := a.atLeastOnceDelivery().tick(); ok {
				r.deliver(ctx, warn)
			}
		}
	case actor.Stopping:
		r.settleOps(ctx)
		if r.live || r.failed {
			r.entity.Receive(r.context(ctx))
		}
	case actor.Restarting, actor.Stopped:
		r.settleOps(ctx)
		r.release()
		if r.live || r.failed {
			r.entity.Receive(r.context(ctx))
			r.live, r.failed = false, false
		}
		r.settleOps(ctx) // requested from this last handler: stored, but undeliverable
	default:
		r.command(ctx)
	}
}

// command handles, stashes or drops a command, as the core decides.
func (r *runner) command(ctx actor.Context) {
	action := dropCommand
	if r.core != nil && r.entity != nil {
		action = r.core.Command()
	}
	switch action {
	case handleCommand:
		r.entity.Receive(r.context(ctx))
		r.flush()
		return
	case stashCommand:
		if err := ctx.Stash(); err != nil {
			r.dropCommand(ctx, err)
		}
		return
	}
	// Stopping after a failure: the stash goes to dead letters when the actor stops.
	if err := ctx.Stash(); err != nil {
		r.dropCommand(ctx, err)
	}
}

// dropCommand sends a command that cannot be stashed to dead letters, counts it and
// logs it.
func (r *runner) dropCommand(ctx actor.Context, err error) {
	fields := []zap.Field{zap.String("persistence_id", r.pid), zap.String("type", fmt.Sprintf("%T", ctx.Message())), zap.Error(err)}
	if r.p != nil {
		r.p.stats.commandsDropped.Add(1)
		r.p.logDrop(ctx.Logger(), "persistence: command dropped to dead letters: the stash is full", fields...)
	} else {
		ctx.Logger().Warn("persistence: command dropped to dead letters: the stash is full", fields...)
	}
	_ = ctx.System().DeadLetters().Send(ctx.Message(), ctx.Sender())
}

// deliver gives the entity a message made by the runtime, outside any handler, and
// flushes what it persisted.
func (r *runner) deliver(ctx actor.Context, msg any) {
	r.entity.Receive(&handlerContext{entityContext: r.context(ctx), msg: msg})
	r.flush()
}

// persist serialises events and hands them to the core.
func (r *runner) persist(ctx actor.Context, events []any, single any, h handler, stashing bool, tags []string) error {
	n := len(events)
	if events == nil {
		n = 1
	}
	var refused error
	switch {
	case r.core == nil || r.entity == nil || r.core.Stopped():
		refused = errStopped
	case r.core.Recovering():
		refused = errNotRecovered
	}
	if refused != nil {
		r.p.stats.eventsRejected.Add(uint64(n))
		r.p.logDrop(ctx.Logger(), "persistence: event rejected", zap.String("persistence_id", r.pid), zap.Error(refused))
		return fmt.Errorf("%w (%q)", refused, r.pid)
	}
	records := make([]Record, n)
	hs := r.hs[:0]
	now := time.Now()
	sender, tc := r.sender(ctx), r.trace(ctx)
	r.writes++
	for i := range n {
		ev := single
		if events != nil {
			ev = events[i]
		}
		manifest, data, err := r.marshal(ev)
		if err != nil {
			clear(hs)
			r.hs = hs[:0]
			r.p.stats.eventsRejected.Add(uint64(n))
			r.p.logDrop(r.log, "persistence: event rejected", zap.Error(err))
			return fmt.Errorf("%w: %q: %w", ErrRejected, r.pid, err)
		}
		records[i] = Record{Manifest: manifest, Payload: data, Tags: tags, Timestamp: now, WriterID: r.writerID}
		hs = append(hs, invoke{event: ev, handler: h, sender: sender, trace: tc, write: r.writes})
	}
	err := r.core.Persist(records, hs, stashing)
	clear(hs)
	r.hs = hs[:0]
	if err == nil && r.inHandler {
		r.carried = true
	}
	return err
}

// marshal serialises v for the journal, through the codec context (which resolves
// nested refs and deliveries), in a buffer it reuses, and returns a copy.
func (r *runner) marshal(v any) (manifest string, data []byte, err error) {
	manifest, out, err := r.p.cfg.Registry.AppendMarshal(r.buf[:0], v, r.p.codec)
	if err != nil {
		return "", nil, err
	}
	if cap(out) <= 64<<10 {
		r.buf = out[:0] // keep a buffer of ordinary size for the next event
	}
	return manifest, bytes.Clone(out), nil
}

// deferCall runs fn now, or once the invocations before it have run.
func (r *runner) deferCall(ctx actor.Context, fn func()) {
	if r.core == nil || r.core.Defer(invoke{deferred: fn, sender: r.sender(ctx), trace: r.trace(ctx)}) {
		fn()
		return
	}
	if r.inHandler {
		r.carried = true
	}
}

func (r *runner) sender(ctx actor.Context) actor.Ref {
	if r.inHandler {
		return r.handlerSender
	}
	return ctx.Sender()
}

// trace returns the trace context of the command being handled (inside a handler,
// the handler's command's); nil for none, and always while tracing is off.
func (r *runner) trace(ctx actor.Context) *trace.SpanContext {
	if r.inHandler {
		return r.handlerTrace
	}
	if ctx.System().TracerProvider() == nil {
		return nil
	}
	return tracewire.Of(ctx.TraceContext())
}

// flush submits the journal call the core decides on, if any.
func (r *runner) flush() {
	if r.core == nil {
		return
	}
	if c, ok := r.core.Flush(); ok {
		r.p.writeStarted(r.pid)
		j := writeJob[*runner]{id: c.id, writes: c.writes, owner: r}
		if r.p.metrics != nil {
			j.at = time.Now()
		}
		r.p.batcher.submit(j)
	}
}

// written is called by the batcher, on its goroutine, with the answer to the call in
// flight. The runner reads r.done only after this Tell, and submits its next call
// (and so gets the next written) only after reading it.
func (r *runner) written(id uint64, results []error, err error) {
	r.done = writeDone{owner: r, id: id, results: results, err: err}
	_ = r.self.Tell(&r.done)
}

func (r *runner) onWriteDone(ctx actor.Context, done *writeDone) {
	m := *done
	*done = writeDone{}
	if r.entity == nil {
		return
	}
	if err := r.core.Written(m.id, m.results, m.err); err != nil {
		// The journal may or may not hold the events: the entity's state can no
		// longer be trusted to match it.
		r.p.stats.writesFailed.Add(1)
		r.log.Error("persistence: write failed; stopping the entity", zap.Error(err),
			zap.Int("handlers_not_run", r.core.Waiting()))
		r.fail(ctx, err)
		return
	}
	r.runSteps(ctx)
}

// runSteps runs the handlers, rejections and deferred calls whose turn has come, then
// submits what they persisted and unstashes when nothing holds commands back.
func (r *runner) runSteps(ctx actor.Context) {
	var hc *handlerContext
	for {
		st, ok := r.core.Next()
		if !ok {
			break
		}
		r.inHandler, r.handlerSender, r.handlerTrace = true, st.h.sender, st.h.trace
		switch st.kind {
		case runHandler:
			if st.h.handler != nil {
				st.h.handler.run(st.h.event)
			}
		case runDeferred:
			st.h.deferred()
		case stopConflict:
			// Another incarnation of the entity (on another node, after a split
			// brain) has written this sequence number: this one's state lacks its
			// events, and anything it wrote now would interleave the histories.
			r.inHandler, r.handlerSender, r.handlerTrace = false, actor.Ref{}, nil
			r.p.stats.sequenceConflicts.Add(1)
			r.log.Error("persistence: another writer has used this entity's next sequence number; stopping the entity",
				zap.Uint64("sequence_nr", st.seq), zap.String("writer_id", r.writerID), zap.Error(st.err),
				zap.Int("handlers_not_run", r.core.Waiting()))
			r.fail(ctx, st.err)
			return
		case reportRejected:
			r.p.stats.eventsRejected.Add(1)
			r.log.Warn("persistence: journal rejected an event", zap.Uint64("sequence_nr", st.seq), zap.Error(st.err))
			if hc == nil {
				hc = &handlerContext{entityContext: r.context(ctx)}
			}
			hc.msg = PersistRejected{Event: st.h.event, SequenceNr: st.seq, Err: st.err}
			r.answered, r.carried = false, false
			r.entity.Receive(hc)
			r.answerRejected(st)
		}
		r.inHandler, r.handlerSender, r.handlerTrace = false, actor.Ref{}, nil
	}
	r.flush()
	if r.core.Settle() {
		ctx.UnstashAll()
	}
}

// answerRejected answers the sender of the command behind a write the journal
// rejected with actor.Failure wrapping ErrRejected and the journal's error, once per
// write (a PersistAll gets a PersistRejected per event), unless the entity has
// answered it while handling PersistRejected, or persisted or deferred there (that
// handler answers). Without it, an Ask of an entity that has no PersistRejected case
// would wait until its deadline for a handler that will not run. A command without a
// sender, or sent by the entity itself, gets nothing.
func (r *runner) answerRejected(st step[invoke]) {
	first := st.h.write != r.rejectedWrite
	r.rejectedWrite = st.h.write
	to := st.h.sender
	if !first || r.answered || r.carried || to.IsZero() || to == r.self {
		return
	}
	err := fmt.Errorf("%w: %q: the journal refused event %d: %w", ErrRejected, r.pid, st.seq, st.err)
	_ = to.SendContext(tracewire.Context(st.h.trace), actor.Failure{Err: err}, r.self)
}

// fail stops the entity after a failure (err): a failed write or recovery. Its state
// can no longer be trusted, so it receives nothing more, except, once it had
// recovered, Stopping and Stopped, in which it releases what it holds (as Akka runs
// postStop). The senders of the commands whose persist handlers or deferred calls
// will not run get actor.Failure with err, so that their Asks fail at once.
func (r *runner) fail(ctx actor.Context, err error) {
	r.failed, r.live = r.live, false
	if r.core != nil {
		r.core.Stop()
		r.answerUnrun(err)
	}
	ctx.Stop(ctx.Self())
}

// answerUnrun sends actor.Failure, once each, to the senders of what will not run.
func (r *runner) answerUnrun(err error) {
	var told map[actor.Ref]bool
	for h := range r.core.Unrun() {
		to := h.sender
		if to.IsZero() || to == r.self || told[to] {
			continue
		}
		if told == nil {
			told = map[actor.Ref]bool{}
		}
		told[to] = true
		_ = to.Send(actor.Failure{Err: fmt.Errorf("persistence: %q stopped or restarted before handling the command: %w", r.pid, err)}, r.self)
	}
}

// release ends recovery, reports handlers that will not run, and frees the
// persistence id.
func (r *runner) release() {
	if r.cancel != nil {
		r.cancel()
	}
	if r.core != nil {
		if n := r.core.Waiting(); n > 0 {
			r.p.stats.handlersDropped.Add(uint64(n))
			r.log.Warn("persistence: entity stopped with persisted events whose handlers will not run; "+
				"their writes may or may not be stored, and a new incarnation recovers what was",
				zap.Int("handlers_not_run", n), zap.Bool("write_in_flight", r.core.InFlight()))
		}
		if !r.core.Stopped() { // a failure has answered them already
			r.answerUnrun(actor.ErrRecipientStopped)
		}
		r.core.Stop()
	}
	if r.claimed {
		r.p.release(r.pid, r.self)
		r.claimed = false
	}
}

// errNoEntity reports an entity that could not start.
var errNoEntity = errors.New("persistence: the entity did not start")

func (r *runner) start(ctx actor.Context) {
	r.self = ctx.Self()
	p := Get(ctx.System())
	if p == nil {
		err := fmt.Errorf("%w: system %q", ErrNotConfigured, ctx.System().Name())
		ctx.Logger().Error("persistence: cannot start entity", zap.Error(err))
		ctx.Stop(ctx.Self())
		return
	}
	r.p = p
	entity := r.newEntity()
	if entity == nil {
		ctx.Logger().Error("persistence: cannot start entity", zap.Error(errNoEntity))
		ctx.Stop(ctx.Self())
		return
	}
	r.pid = entity.PersistenceID()
	r.log = ctx.Logger().With(zap.String("persistence_id", r.pid))
	// The full path names the node (its address) and the incarnation (the uid),
	// where the path alone is the same on every node.
	r.writerID = r.self.URI()
	if err := p.claim(r.pid, r.self); err != nil {
		r.log.Error("persistence: cannot start entity", zap.Error(err))
		ctx.Stop(ctx.Self())
		return
	}
	r.entity = entity
	r.claimed = true
	r.core = newEntityCore[invoke](r.pid)
	r.startRecovery(ctx)
}

// takeOps removes and returns the pending requests, in request order.
func (r *runner) takeOps() []*sideOp {
	ops := slices.Clone(r.ops)
	clear(r.ops)
	r.ops = r.ops[:0]
	return ops
}

// The journal's answers to an entity are persistence's own messages: an entity whose
// Props set Trace makes no span for them (actor.UntracedMessage).
func (recoveryDone) UntracedMessage()      {}
func (recoveredSnapshot) UntracedMessage() {}
func (recoveredEvents) UntracedMessage()   {}
func (*writeDone) UntracedMessage()        {}
func (opDone) UntracedMessage()            {}
