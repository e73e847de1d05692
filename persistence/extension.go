package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/ratelog"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// ErrPersistenceIDInUse stops an event-sourced actor whose persistence id is already
// used by a live actor of the same system: two writers would corrupt its history.
var ErrPersistenceIDInUse = errors.New("persistence: persistence id already in use")

// errShortResults reports a journal that answered a call with fewer results than
// writes: a broken plug-in, treated as a failed call.
var errShortResults = errors.New("persistence: journal returned the wrong number of results")

// ErrRejected is returned by Persist and its variants when an event cannot be
// serialised (or is persisted before recovery has completed or after the entity
// stopped), and wrapped, with the journal's error, by the actor.Failure the runtime
// answers a command with when the journal rejects its write (see PersistRejected).
// Nothing is written and the actor keeps running.
var ErrRejected = errors.New("persistence: event rejected")

// Persistence is the persistence extension of one system: its plug-ins, the bounds and
// circuit breakers around them, the batcher that groups the writes of all entities,
// and the registry of live persistence ids. Start creates it; Get finds it.
type Persistence struct {
	sys   *actor.System
	cfg   Config // with defaults
	codec *codecContext
	calls *plugins
	stats counters
	drops *ratelog.Limiter // rate-limits the log lines of dropped commands and results

	batcher *batcher
	metrics *persistMetrics // nil while metrics are off

	mu      sync.Mutex
	live    map[string]actor.Ref
	writing map[string]writeState // persistence ids with a write in flight
}

var started = actor.NewOncePerSystem[Persistence]("persistence")

// Start starts persistence for sys with cfg. Call it once per system, before starting
// event-sourced actors; a second call fails with ErrAlreadyStarted, an invalid cfg
// with an error wrapping ErrInvalidConfig. The caller owns the plug-ins and closes
// them after the system has shut down, unless cfg.CloseOnShutdown hands them to the
// system.
func Start(sys *actor.System, cfg Config) (*Persistence, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, plugin := range []any{cfg.Journal, cfg.Snapshots} {
		if u, ok := plugin.(SystemLogger); ok {
			u.UseSystemLogger(sys.Logger())
		}
	}
	return started.Start(sys, ErrAlreadyStarted, func() (*Persistence, error) { return start(sys, cfg) })
}

// start builds sys's persistence for Start, which keeps it.
func start(sys *actor.System, cfg Config) (*Persistence, error) {
	p := &Persistence{
		sys:     sys,
		cfg:     cfg,
		codec:   &codecContext{reg: cfg.Registry, sys: sys},
		live:    make(map[string]actor.Ref),
		writing: make(map[string]writeState),
	}
	p.drops = ratelog.New(time.Minute, 10)
	p.calls = newPlugins(cfg, &p.stats)
	p.batcher = newBatcher(p)
	if cfg.CloseOnShutdown {
		err := sys.CoordinatedShutdown().AddTask(actor.PhaseActorSystemTerminate, "persistence-close", func(ctx context.Context) error {
			select {
			case <-sys.Terminated():
			case <-ctx.Done():
				return ctx.Err()
			}
			p.awaitCalls(ctx)
			return closePlugins(cfg.Journal, cfg.Snapshots)
		})
		if err != nil {
			return nil, err
		}
	}
	p.startMetrics()
	return p, nil
}

// Get returns the persistence Start started for sys, or nil when Start was not
// called for it.
func Get(sys *actor.System) *Persistence { return started.Get(sys) }

// Stats counts what the runtime lost or refused since Start, and the states of the
// circuit breakers. Every counter has a log line next to it.
type Stats struct {
	// EventsRejected counts events not written: they could not be serialised (or
	// were persisted before recovery), or the journal rejected their write.
	EventsRejected uint64
	// WritesFailed counts journal calls that failed as a whole, timed out or were
	// refused by the breaker, per entity in them; each such entity stopped.
	WritesFailed uint64
	// SequenceConflicts counts entities stopped because the journal reported that
	// another writer had used their next sequence number: two incarnations of one
	// persistence id, on two nodes after a split brain. The records' WriterID names
	// the incarnation that wrote each event.
	SequenceConflicts uint64
	// HandlersDropped counts persist handlers that never ran because their entity
	// stopped or restarted first (their events may or may not be stored).
	HandlersDropped uint64
	// RecoveriesFailed counts entities stopped because their recovery failed.
	RecoveriesFailed uint64
	// CommandsDropped counts commands that could not be stashed (the stash was full)
	// and went to dead letters.
	CommandsDropped uint64
	// ResultsUndelivered counts replies to SaveSnapshot, DeleteMessages and
	// DeleteSnapshots that went to dead letters because the entity could no longer
	// receive them (it had stopped after a failure, or asked from its Stopped
	// handler).
	ResultsUndelivered uint64
	// CallsTimedOut counts plug-in calls that did not answer within their timeout.
	CallsTimedOut uint64
	// CallsRejected counts plug-in calls refused by an open circuit breaker.
	CallsRejected uint64
	// JournalBreaker and SnapshotBreaker are the states of the circuit breakers.
	JournalBreaker, SnapshotBreaker BreakerState
}

type counters struct {
	eventsRejected, writesFailed, handlersDropped, recoveriesFailed   atomic.Uint64
	commandsDropped, resultsUndelivered, callsTimedOut, callsRejected atomic.Uint64
	sequenceConflicts                                                 atomic.Uint64
}

// Stats returns the counters and breaker states.
func (p *Persistence) Stats() Stats {
	return Stats{
		EventsRejected:     p.stats.eventsRejected.Load(),
		WritesFailed:       p.stats.writesFailed.Load(),
		SequenceConflicts:  p.stats.sequenceConflicts.Load(),
		HandlersDropped:    p.stats.handlersDropped.Load(),
		RecoveriesFailed:   p.stats.recoveriesFailed.Load(),
		CommandsDropped:    p.stats.commandsDropped.Load(),
		ResultsUndelivered: p.stats.resultsUndelivered.Load(),
		CallsTimedOut:      p.stats.callsTimedOut.Load(),
		CallsRejected:      p.stats.callsRejected.Load(),
		JournalBreaker:     p.calls.jb.state(),
		SnapshotBreaker:    p.calls.sb.state(),
	}
}

// awaitCalls waits until the plug-in calls in flight have returned, or ctx ends.
func (p *Persistence) awaitCalls(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		p.calls.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		p.sys.Logger().Warn("persistence: closing the plug-ins with calls still running", zap.Error(ctx.Err()))
	}
}

// codecContext is the context of every encoding and decoding of events and snapshots:
// it resolves the actor paths stored in them in the system (a local actor, a remote
// one with remoting, or dead letters for an actor that is gone: a Ref in an old event
// may outlive its actor), and gives nested values (the messages of a
// DeliverySnapshot) the registry.
type codecContext struct {
	reg *serialization.Registry
	sys *actor.System
}

// ResolveRef implements serialization.RefResolver.
func (c *codecContext) ResolveRef(uri string) (actor.Ref, error) {
	ref, err := c.sys.Resolve(uri)
	if errors.Is(err, actor.ErrNotFound) {
		return c.sys.DeadLetters(), nil
	}
	return ref, err
}

// sameValue reports whether a and b are one comparable value (comparing values of a
// type that cannot be compared would panic).
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.IsValid() && vb.IsValid() && va.Type() == vb.Type() && va.Comparable() && va.Equal(vb)
}

// closePlugins closes the journal and the snapshot store, once if they are one value.
func closePlugins(j Journal, snaps SnapshotStore) error {
	var errs []error
	if c, ok := j.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := snaps.(io.Closer); ok && !sameValue(snaps, j) {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// claim registers ref as the one live writer of pid.
func (p *Persistence) claim(pid string, ref actor.Ref) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if owner, ok := p.live[pid]; ok && owner != ref {
		return fmt.Errorf("%w: %q is used by %v", ErrPersistenceIDInUse, pid, owner)
	}
	p.live[pid] = ref
	return nil
}

func (p *Persistence) release(pid string, ref actor.Ref) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live[pid] == ref {
		delete(p.live, pid)
	}
}

// writeState counts the writes of one persistence id in flight; ch, made only when a
// recovery waits, is closed when the count drops to zero.
type writeState struct {
	n  int
	ch chan struct{}
}

// writeStarted records that pid has a write in flight, until writeFinished (called
// when the journal has returned, even after the runtime stopped waiting for it). An
// entity has at most one write in flight, and a restarted entity does not start a
// write before its recovery, which waits for the previous one (awaitWrite); a count
// keeps the bookkeeping right even when an entity skips recovery.
func (p *Persistence) writeStarted(pid string) {
	p.mu.Lock()
	st := p.writing[pid]
	st.n++
	p.writing[pid] = st
	p.mu.Unlock()
}

// writeFinished marks the end of a write of pid that writeStarted recorded.
func (p *Persistence) writeFinished(pid string) {
	p.mu.Lock()
	st := p.writing[pid]
	st.n--
	if st.n > 0 {
		p.writing[pid] = st
		p.mu.Unlock()
		return
	}
	delete(p.writing, pid)
	p.mu.Unlock()
	if st.ch != nil {
		close(st.ch)
	}
}

// awaitWrite waits until no write of pid is in flight, so that a recovery sees the
// events of a previous incarnation's last write (as a journal actor that handles
// requests in order would guarantee) and never reuses their sequence numbers. It
// gives up after the journal's call timeout with ErrCallTimeout.
func (p *Persistence) awaitWrite(ctx context.Context, pid string) error {
	p.mu.Lock()
	st, ok := p.writing[pid]
	if !ok {
		p.mu.Unlock()
		return nil
	}
	if st.ch == nil {
		st.ch = make(chan struct{})
		p.writing[pid] = st
	}
	p.mu.Unlock()
	timer := time.NewTimer(p.cfg.JournalBreaker.CallTimeout)
	defer timer.Stop()
	select {
	case <-st.ch:
		return nil
	case <-timer.C:
		p.stats.callsTimedOut.Add(1)
		return fmt.Errorf("%w: the previous incarnation's write of %q did not finish within %v",
			ErrCallTimeout, pid, p.cfg.JournalBreaker.CallTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// logDrop logs a dropped command or result at warn level, rate-limited.
func (p *Persistence) logDrop(log *zap.Logger, msg string, fields ...zap.Field) {
	ok, suppressed := p.drops.Allow(time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		fields = append(fields, zap.Int("not_logged_before", suppressed))
	}
	log.Warn(msg, fields...)
}

// SystemLogger is implemented by a journal or snapshot store that logs (badgerjournal
// and pgjournal do) and takes the logger of the actor system it is attached to when it
// was not given a logger of its own: Start calls UseSystemLogger with the system's
// logger. A store is opened before any system exists, and logs its warnings to
// standard error until then.
type SystemLogger interface {
	UseSystemLogger(l *zap.Logger)
}
