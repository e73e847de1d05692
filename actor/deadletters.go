package actor

import (
	"fmt"
	"sync"
	"time"

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
// waiting on it.
func (s *System) deadLetter(recipient Ref, msg any, sender Ref, reason error) {
	if reason == nil {
		reason = ErrDeadLetter
	}
	if f, ok := sender.p.(*Future); ok {
		f.complete(nil, fmt.Errorf("%w: %v to %v: %w", ErrDeadLetter, typeName(msg), recipient, reason))
	}
	s.dlCount.Add(1)
	s.events.Publish(DeadLetter{Recipient: recipient, Sender: sender, Message: msg, Reason: reason})
	if _, quiet := msg.(DeadLetterSuppression); !quiet {
		s.dl.log(s.log, recipient, sender, msg, reason)
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

// deadLetterLog logs dead letters at a bounded rate and summarises the rest.
type deadLetterLog struct {
	mu         sync.Mutex
	limit      int
	interval   time.Duration
	windowEnd  time.Time
	logged     int
	suppressed int
}

func (d *deadLetterLog) init(cfg Config) {
	d.limit, d.interval = cfg.DeadLetterLogLimit, cfg.DeadLetterLogInterval
}

func (d *deadLetterLog) log(l *zap.Logger, recipient, sender Ref, msg any, reason error) {
	if d.limit < 0 {
		return
	}
	now := time.Now()
	d.mu.Lock()
	if now.After(d.windowEnd) {
		if d.suppressed > 0 {
			l.Warn("dead letters not logged in the last window", zap.Int("count", d.suppressed), zap.Duration("window", d.interval))
		}
		d.windowEnd, d.logged, d.suppressed = now.Add(d.interval), 0, 0
	}
	if d.logged >= d.limit {
		d.suppressed++
		d.mu.Unlock()
		return
	}
	d.logged++
	d.mu.Unlock()
	l.Warn("dead letter",
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
