package singleton

import (
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/ratelog"
	"go.uber.org/zap"
)

// Undelivered is the dead letter of a message sent through a proxy that will not
// reach the singleton: a proxy's or a manager's buffer overflowed, the message's type
// is not registered, the singleton's member was downed, and so on (see the package
// documentation, "What can be lost, and when"). It is published on the event stream
// as the Message of an actor.DeadLetter whose Sender is the message's sender, so that
// an Ask through a proxy fails at once; the singleton's manager or proxy logs it, at
// a bounded rate, and counts it (Dropped).
type Undelivered struct {
	// Singleton is the singleton's name.
	Singleton string
	// Message is the message, or its serialized form (a payload of manifest and
	// bytes) when it could not be decoded.
	Message any
	// Reason says why it was dropped.
	Reason string
}

// SuppressDeadLetterLog keeps the actor system from logging Undelivered a second
// time: the singleton's manager or proxy has logged it with its reason.
func (Undelivered) SuppressDeadLetterLog() {}

// dropLog publishes, counts and logs dropped messages: at most dropLogLimit lines
// per dropLogWindow, then a summary of those not logged.
type dropLog struct {
	sys   *actor.System
	name  string
	log   *zap.Logger
	count func() // counts one drop in the system's total
	lim   ratelog.Limiter
}

const (
	dropLogLimit  = 10
	dropLogWindow = 10 * time.Second
)

func newDropLog(sys *actor.System, name string, log *zap.Logger) *dropLog {
	return &dropLog{sys: sys, name: name, log: log, count: extensionOf(sys).countDrop,
		lim: ratelog.Limiter{Interval: dropLogWindow, Burst: dropLogLimit}}
}

// drop publishes msg (from sender) as an Undelivered dead letter, counts it, and logs
// it unless the window's quota is used up.
func (d *dropLog) drop(msg any, sender actor.Ref, reason string) {
	d.count()
	_ = d.sys.DeadLetters().Send(Undelivered{Singleton: d.name, Message: msg, Reason: reason}, sender)
	ok, suppressed := d.lim.Allow(time.Now())
	if suppressed > 0 {
		d.log.Warn("singleton: messages dropped and not logged", zap.Int("count", suppressed),
			zap.Duration("window", dropLogWindow))
	}
	if ok {
		d.log.Warn("singleton: message dropped", zap.String("reason", reason),
			zap.String("type", typeName(msg)), zap.Stringer("sender", sender))
	}
}

// flush logs the count of drops not logged yet; the manager and proxy call it when
// they stop.
func (d *dropLog) flush() {
	if n := d.lim.Take(); n > 0 {
		d.log.Warn("singleton: messages dropped and not logged", zap.Int("count", n))
	}
}
