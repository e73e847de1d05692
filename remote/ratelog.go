package remote

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// rateLog logs at most rateLogPerSecond lines a second for one kind of event, so that
// a peer flooding bad input cannot flood the log; the lines it holds back are counted
// and reported in one line when the second is over (flush reports them even if no
// further event comes).
type rateLog struct {
	mu         sync.Mutex
	windowEnd  time.Time
	logged     int
	suppressed int
	kind       string        // the message of the last line held back
	level      zapcore.Level // the highest level of the lines held back
}

const rateLogPerSecond = 10

// log writes a warning unless the budget of the current second is spent.
func (l *rateLog) log(log *zap.Logger, msg string, fields ...zap.Field) {
	l.logAt(log, zap.WarnLevel, time.Now(), msg, fields...)
}

// info is log at info level.
func (l *rateLog) info(log *zap.Logger, msg string, fields ...zap.Field) {
	l.logAt(log, zap.InfoLevel, time.Now(), msg, fields...)
}

func (l *rateLog) logAt(log *zap.Logger, level zapcore.Level, now time.Time, msg string, fields ...zap.Field) {
	l.mu.Lock()
	l.flushLocked(log, now)
	if l.logged >= rateLogPerSecond {
		if l.suppressed == 0 || level > l.level {
			l.level = level
		}
		l.suppressed++
		l.kind = msg
		l.mu.Unlock()
		return
	}
	l.logged++
	l.mu.Unlock()
	if ce := log.Check(level, msg); ce != nil {
		ce.Write(fields...)
	}
}

// flush reports, once the current second is over, how many lines were held back, at
// the highest level of those lines (info lines held back are not worth a warning).
func (l *rateLog) flush(log *zap.Logger, now time.Time) {
	l.mu.Lock()
	l.flushLocked(log, now)
	l.mu.Unlock()
}

func (l *rateLog) flushLocked(log *zap.Logger, now time.Time) {
	if !now.After(l.windowEnd) {
		return
	}
	if l.suppressed > 0 {
		if ce := log.Check(l.level, "log lines suppressed"); ce != nil {
			ce.Write(zap.String("kind", l.kind), zap.Int("count", l.suppressed))
		}
	}
	l.windowEnd, l.logged, l.suppressed = now.Add(time.Second), 0, 0
}
