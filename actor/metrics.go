package actor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/internal/telemetry"
	"github.com/troupe-go/troupe/mailbox"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// MeterName is the instrumentation scope of the runtime's metrics.
const MeterName = "github.com/troupe-go/troupe/actor"

// MeterProvider returns Config.MeterProvider: nil when metrics are off. Extensions take
// their meters from it, so that one setting turns on the metrics of every layer.
func (s *System) MeterProvider() metric.MeterProvider { return s.cfg.MeterProvider }

// OnTerminated runs f once the system has shut down: at once if it has. Extensions use
// it to unregister their metric callbacks, so that a provider outliving the system
// stops observing it.
func (s *System) OnTerminated(f func()) {
	s.termMu.Lock()
	if !s.terminated {
		s.onTerm = append(s.onTerm, f)
		s.termMu.Unlock()
		return
	}
	s.termMu.Unlock()
	f()
}

// runOnTerminated runs the functions given to OnTerminated, once.
func (s *System) runOnTerminated() {
	s.termMu.Lock()
	fs := s.onTerm
	s.onTerm, s.terminated = nil, true
	s.termMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Dead-letter reasons, the values of the reason attribute of troupe.actor.dead_letters.
const (
	dlRecipientStopped = iota
	dlMailboxFull
	dlNoRecipient
	dlLateReply
	dlDeadLetters
	dlOther
	numDeadLetterReasons
)

var deadLetterReasons = [numDeadLetterReasons]string{
	"recipient_stopped", "mailbox_full", "no_recipient", "late_reply", "dead_letters", "other",
}

// deadLetterReason classifies reason for the metrics: the runtime's own reasons by
// name, and every other one (a transport's, an extension's) as "other", so that the
// attribute stays bounded.
func deadLetterReason(reason error) int {
	switch {
	case errors.Is(reason, ErrRecipientStopped):
		return dlRecipientStopped
	case errors.Is(reason, ErrMailboxFull):
		return dlMailboxFull
	case errors.Is(reason, ErrNoRecipient):
		return dlNoRecipient
	case errors.Is(reason, ErrLateReply):
		return dlLateReply
	case errors.Is(reason, ErrDeadLetter):
		return dlDeadLetters
	}
	return dlOther
}

// sysMetrics holds the runtime's counts while a MeterProvider is configured
// (System.metrics is nil otherwise). Counting is an atomic add where the event
// happens; the provider reads the counts in its callback.
type sysMetrics struct {
	spawned, stopped, restarts, failures atomic.Uint64
	deadLetters                          [numDeadLetterReasons]atomic.Uint64
	dlOpts                               [numDeadLetterReasons]metric.ObserveOption

	meter metric.Meter
	depth metric.Int64Histogram
	// nextDepth is when (Unix nanoseconds) the next mailbox-depth sample may be taken.
	nextDepth atomic.Int64

	kindsMu sync.Mutex
	kinds   map[string]*kindMetrics
	kindSet atomic.Pointer[[]*kindMetrics] // copy of kinds' values for the callback

	wait, proc metric.Float64Histogram
	queued     metric.Int64ObservableUpDownCounter
}

// depthSampleInterval spaces the mailbox-depth samples: at most one per interval per
// system, whatever the load.
const depthSampleInterval = 10 * time.Millisecond

// kindMetrics are the shared figures of the actors whose Props name one MetricsKind.
type kindMetrics struct {
	name   string
	opts   []metric.RecordOption
	obs    metric.ObserveOption
	queued atomic.Int64 // messages waiting in mailboxes of this kind
}

// newSysMetrics creates the runtime's instruments on mp and registers the callback that
// reads the counts. Errors (from a provider that refuses an instrument) are returned
// for logging; the instruments that could be made still work.
func newSysMetrics(s *System, mp metric.MeterProvider) (*sysMetrics, error) {
	m := &sysMetrics{meter: mp.Meter(MeterName), kinds: make(map[string]*kindMetrics)}
	for i, r := range deadLetterReasons {
		m.dlOpts[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	mt := m.meter
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	live, err := mt.Int64ObservableUpDownCounter("troupe.actor.live", metric.WithUnit("{actor}"),
		metric.WithDescription("Actors alive: spawned and not yet stopped, system actors included."))
	check(err)
	spawned, err := mt.Int64ObservableCounter("troupe.actor.spawned", metric.WithUnit("{actor}"),
		metric.WithDescription("Actors spawned."))
	check(err)
	stopped, err := mt.Int64ObservableCounter("troupe.actor.stopped", metric.WithUnit("{actor}"),
		metric.WithDescription("Actors stopped."))
	check(err)
	restarts, err := mt.Int64ObservableCounter("troupe.actor.restarts", metric.WithUnit("{restart}"),
		metric.WithDescription("Actor restarts decided by supervision."))
	check(err)
	failures, err := mt.Int64ObservableCounter("troupe.actor.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Actor failures: a panic or an error in Receive, or Kill."))
	check(err)
	dead, err := mt.Int64ObservableCounter("troupe.actor.dead_letters", metric.WithUnit("{message}"),
		metric.WithDescription("Messages that could not be delivered, by reason."))
	check(err)
	m.queued, err = mt.Int64ObservableUpDownCounter("troupe.actor.mailbox.queued", metric.WithUnit("{message}"),
		metric.WithDescription("Messages waiting in the mailboxes of the actor kinds that opt in (Props.MetricsKind), by kind."))
	check(err)
	m.depth, err = mt.Int64Histogram("troupe.actor.mailbox.depth", metric.WithUnit("{message}"),
		metric.WithDescription("Messages left in an actor's mailbox when it yields its goroutine with work still waiting, sampled at most every 10ms."),
		metric.WithExplicitBucketBoundaries(1, 10, 100, 1000, 10_000, 100_000, 1_000_000))
	check(err)
	m.wait, err = mt.Float64Histogram("troupe.actor.mailbox.time", metric.WithUnit("s"),
		metric.WithDescription("Time a message spent in the mailbox, for the actor kinds that opt in (Props.MetricsKind), by kind."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	check(err)
	m.proc, err = mt.Float64Histogram("troupe.actor.processing.time", metric.WithUnit("s"),
		metric.WithDescription("Time Receive took per message, for the actor kinds that opt in (Props.MetricsKind), by kind."),
		metric.WithExplicitBucketBoundaries(telemetry.SecondsBuckets...))
	check(err)
	check(telemetry.Observe(s.OnTerminated, mt, func(_ context.Context, o metric.Observer) error {
		sp, st := int64(m.spawned.Load()), int64(m.stopped.Load())
		o.ObserveInt64(spawned, sp)
		o.ObserveInt64(stopped, st)
		o.ObserveInt64(live, sp-st)
		o.ObserveInt64(restarts, int64(m.restarts.Load()))
		o.ObserveInt64(failures, int64(m.failures.Load()))
		for i := range m.deadLetters {
			o.ObserveInt64(dead, int64(m.deadLetters[i].Load()), m.dlOpts[i])
		}
		if ks := m.kindSet.Load(); ks != nil {
			for _, k := range *ks {
				o.ObserveInt64(m.queued, k.queued.Load(), k.obs)
			}
		}
		return nil
	}, live, spawned, stopped, restarts, failures, dead, m.queued))
	return m, errors.Join(errs...)
}

// kind returns the figures of the named actor kind, creating them on first use.
func (m *sysMetrics) kind(name string) *kindMetrics {
	m.kindsMu.Lock()
	defer m.kindsMu.Unlock()
	if k := m.kinds[name]; k != nil {
		return k
	}
	set := attribute.NewSet(attribute.String("kind", name))
	k := &kindMetrics{
		name: name,
		opts: []metric.RecordOption{metric.WithAttributeSet(set)},
		obs:  metric.WithAttributeSet(set),
	}
	m.kinds[name] = k
	ks := make([]*kindMetrics, 0, len(m.kinds))
	for _, v := range m.kinds {
		ks = append(ks, v)
	}
	m.kindSet.Store(&ks)
	return k
}

// sampleDepth records the depth of the mailbox of c, which has just spent its
// throughput with messages still waiting, unless a sample was taken less than
// depthSampleInterval ago. Only c's owner calls it.
func (m *sysMetrics) sampleDepth(c *cell) {
	now := time.Now().UnixNano()
	next := m.nextDepth.Load()
	if now < next || !m.nextDepth.CompareAndSwap(next, now+int64(depthSampleInterval)) {
		return
	}
	n := c.userq.Len()
	if c.hasBox() {
		if l, ok := c.x.Load().box.(interface{ Len() int }); ok {
			n += l.Len()
		}
	}
	m.depth.Record(context.Background(), int64(n))
}

// startMetrics turns the runtime's metrics on when the configuration has a provider.
func (s *System) startMetrics() {
	if s.cfg.MeterProvider == nil {
		return
	}
	m, err := newSysMetrics(s, s.cfg.MeterProvider)
	telemetry.Report(s.log, "actor", []error{err})
	s.metrics = m
}

// timed is a message in the mailbox of an actor kind that opts into metrics, with the
// time it was queued.
type timed struct {
	env envelope
	at  time.Time
}

// timedBox is the mailbox of an actor whose Props name a MetricsKind while metrics are
// on: the mailbox the Props ask for, holding each message with the time it was queued,
// so that the time in mailbox can be recorded when the message is taken. Only those
// actors pay for it.
type timedBox struct {
	inner mailbox.Mailbox[timed]
	k     *kindMetrics
	m     *sysMetrics
}

func newTimedBox(p *Props, k *kindMetrics, m *sysMetrics) (*timedBox, error) {
	b := &timedBox{k: k, m: m}
	switch {
	case p.Priority != nil:
		prio := p.Priority
		inner, err := mailbox.NewPriority(func(t timed) int { return prio(untraced(t.env.msg)) })
		if err != nil {
			return nil, err
		}
		b.inner = inner
	case p.MailboxCapacity > 0:
		inner, err := mailbox.NewBounded[timed](p.MailboxCapacity, p.Overflow)
		if err != nil {
			return nil, err
		}
		b.inner = inner
	default:
		b.inner = &mailbox.Queue[timed]{}
	}
	return b, nil
}

// Offer queues e with the current time.
func (b *timedBox) Offer(e envelope) (envelope, mailbox.Result) {
	d, r := b.inner.Offer(timed{env: e, at: time.Now()})
	if r == mailbox.Accepted {
		b.k.queued.Add(1)
	}
	return d.env, r
}

// Pop takes the next message and records how long it waited.
func (b *timedBox) Pop() (envelope, bool) {
	t, ok := b.inner.Pop()
	if !ok {
		return envelope{}, false
	}
	b.k.queued.Add(-1)
	b.m.wait.Record(context.Background(), time.Since(t.at).Seconds(), b.k.opts...)
	return t.env, true
}

// Empty reports whether Pop would find nothing.
func (b *timedBox) Empty() bool { return b.inner.Empty() }

// Len returns how many messages wait. Only the consumer calls it.
func (b *timedBox) Len() int {
	if l, ok := b.inner.(interface{ Len() int }); ok {
		return l.Len()
	}
	return 0
}

// receiveMeasured is receive for an actor whose Props name a MetricsKind: it records
// the processing time when metrics are on.
func (c *cell) receiveMeasured() {
	x := c.x.Load()
	if x == nil {
		c.receive()
		return
	}
	tb, ok := x.box.(*timedBox)
	if !ok {
		c.receive()
		return
	}
	start := time.Now()
	c.receive()
	tb.m.proc.Record(context.Background(), time.Since(start).Seconds(), tb.k.opts...)
}
