package actor

import (
	"fmt"
	"sync"
	"time"

	"github.com/troupe-go/troupe/internal/ratelog"
	"go.uber.org/zap"
)

// DeadLetter is published on the event stream for every message that could not be
// delivered: its recipient had stopped or never existed, a bounded mailbox dropped it,
// or a transport could not send it.
type DeadLetter struct {
	// Recipient is the actor the message was for (for a transport, a Ref naming the
	// remote actor).
	Recipient Ref
	// Sender is the message's sender, or the zero Ref.
	Sender Ref
	// Message is the undelivered message.
	Message any
	// Reason says why, as an error to test with errors.Is: ErrRecipientStopped,
	// ErrMailboxFull, ErrNoRecipient, ErrLateReply, or a transport's own errors.
	Reason error
}

// deadLetter publishes an undeliverable message, counts and logs it, and fails an Ask
// waiting on it. A batch of users' messages (MessageBatch) is as many dead letters,
// each with its own sender.
func (s *System) deadLetter(recipient Ref, msg any, sender Ref, reason error) {
	msg = untraced(msg)
	if b, ok := msg.(MessageBatch); ok {
		b.EachUserMessage(func(m any, from Ref) {
			s.deadLetter(recipient, m, from, reason)
		})
		return
	}
	msg = userMessage(msg)
	if reason == nil {
		reason = ErrDeadLetter
	}
	if f, ok := sender.p.(*Future); ok {
		f.complete(nil, fmt.Errorf("%w: %v to %v: %w", ErrDeadLetter, typeName(msg), recipient, reason))
	}
	s.dlCount.Add(1)
	if m := s.metrics; m != nil {
		m.deadLetters[deadLetterReason(reason)].Add(1)
	}
	s.events.Publish(DeadLetter{Recipient: recipient, Sender: sender, Message: msg, Reason: reason})
	if _, quiet := msg.(DeadLetterSuppression); !quiet {
		s.dl.log(recipient, sender, msg, reason)
	}
}

// DeadLetterSuppression is implemented by messages whose loss is expected when their
// recipient has stopped, such as the notices a component sends itself about work it
// started (a write completed, a timer's housekeeping). As dead letters they are
// published and counted like any other, but not logged, so that the log shows the
// messages that matter.
type DeadLetterSuppression interface {
	SuppressDeadLetterLog()
}

// DeadLetterCount returns how many dead letters the system has published since it
// started.
func (s *System) DeadLetterCount() uint64 { return s.dlCount.Load() }

// deadLetterLog logs dead letters at a bounded rate and summarises the rest: the
// count of what a window did not log is written when the window ends (by a timer, so a
// burst that ends is summarised too) or when the system stops.
type deadLetterLog struct {
	mu       sync.Mutex
	l        *zap.Logger
	limit    int
	interval time.Duration
	lim      ratelog.Limiter
	flush    *time.Timer // pending while dead letters are held back
	stopped  bool
}

func (d *deadLetterLog) init(cfg Config, l *zap.Logger) {
	d.limit, d.interval, d.l = cfg.DeadLetterLogLimit, cfg.DeadLetterLogInterval, l
	d.lim.Interval, d.lim.Burst = cfg.DeadLetterLogInterval, cfg.DeadLetterLogLimit
}

// summarize writes the count n of what was not logged; d.mu is held.
func (d *deadLetterLog) summarize(n int) {
	if n > 0 {
		d.l.Warn("dead letters not logged", zap.Int("count", n), zap.Duration("window", d.interval))
	}
}

// windowEnded runs on the flush timer.
func (d *deadLetterLog) windowEnded() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flush = nil
	d.summarize(d.lim.Take())
}

// stop writes the last summary; nothing is logged afterwards.
func (d *deadLetterLog) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.flush != nil {
		d.flush.Stop()
		d.flush = nil
	}
	d.summarize(d.lim.Take())
	d.stopped = true
}

func (d *deadLetterLog) log(recipient, sender Ref, msg any, reason error) {
	if d.limit < 0 {
		return
	}
	now := time.Now()
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	ok, suppressed := d.lim.Allow(now)
	d.summarize(suppressed)
	if !ok {
		if d.flush == nil {
			d.flush = time.AfterFunc(d.lim.WindowEnd().Sub(now), d.windowEnded)
		}
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.l.Warn("dead letter",
		zap.Stringer("recipient", recipient),
		zap.Stringer("sender", sender),
		zap.String("type", typeName(msg)),
		zap.NamedError("reason", reason))
}

// deadLetterSink is the process behind System.DeadLetters.
type deadLetterSink struct{ sys *System }

func (d *deadLetterSink) sendUser(msg any, sender Ref) error {
	d.sys.deadLetter(Ref{d}, msg, sender, ErrDeadLetter)
	return nil
}

func (d *deadLetterSink) sendSystem(m sysMsg) {
	if w, ok := m.(sysWatch); ok && w.watcher.p != nil {
		w.watcher.p.sendSystem(sysDeath{ref: Ref{d}})
	}
}

func (d *deadLetterSink) path() string    { return "/deadLetters" }
func (d *deadLetterSink) system() *System { return d.sys }
func (d *deadLetterSink) isDead() bool    { return true }

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// userMessage returns what the user sent: msg, or the message a Troupe layer wrapped
// in it (MessageWrapper).
func userMessage(msg any) any {
	if w, ok := msg.(MessageWrapper); ok {
		return w.UserMessage()
	}
	return msg
}
