package actor

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DeadLetter is published on the event stream for every message that could not be
// delivered: its recipient had stopped or never existed, or a bounded mailbox dropped it.
type DeadLetter struct {
	Recipient Ref
	Sender    Ref
	Message   any
}

// deadLetter publishes an undeliverable message and fails an Ask waiting on it.
func (s *System) deadLetter(recipient Ref, msg any, sender Ref) {
	if f, ok := sender.p.(*Future); ok {
		f.complete(nil, ErrDeadLetter)
	}
	s.events.Publish(DeadLetter{Recipient: recipient, Sender: sender, Message: msg})
	s.dl.log(s.log, recipient, sender, msg)
}

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

func (d *deadLetterLog) log(l *zap.Logger, recipient, sender Ref, msg any) {
	if d.limit < 0 {
		return
	}
	now := time.Now()
	d.mu.Lock()
	if now.After(d.windowEnd) {
		if d.suppressed > 0 {
			l.Info("dead letters not logged in the last window", zap.Int("count", d.suppressed))
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
	l.Info("dead letter",
		zap.Stringer("recipient", recipient),
		zap.Stringer("sender", sender),
		zap.String("type", typeName(msg)))
}

// deadLetterSink is the process behind System.DeadLetters.
type deadLetterSink struct{ sys *System }

func (d *deadLetterSink) sendUser(msg any, sender Ref) error {
	d.sys.deadLetter(Ref{d}, msg, sender)
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
