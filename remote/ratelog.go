package remote

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/troupe-go/troupe/internal/ratelog"
)

// rateLog logs at most rateLogPerSecond lines a second for one kind of event, so that
// a peer flooding bad input cannot flood the log; the lines it holds back are counted
// and reported in one line when the second is over (flush reports them even if no
// further event comes).
type rateLog struct {
	mu    sync.Mutex      // guards lim's settings and the fields below
	lim   ratelog.Limiter // set up on first use
	held  bool            // lines are held back and not reported yet
	kind  string          // the message of the last line held back
	level zapcore.Level   // the highest level of the lines held back
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
	l.setUp()
	ok, suppressed := l.lim.Allow(now)
	l.reportLocked(log, suppressed)
	if !ok {
		if !l.held || level > l.level {
			l.level = level
		}
		l.held = true
		l.kind = msg
	}
	l.mu.Unlock()
	if ok {
		if ce := log.Check(level, msg); ce != nil {
			ce.Write(fields...)
		}
	}
}

// flush reports, once the current second is over, how many lines were held back, at
// the highest level of those lines (info lines held back are not worth a warning).
func (l *rateLog) flush(log *zap.Logger, now time.Time) {
	l.mu.Lock()
	l.setUp()
	l.reportLocked(log, l.lim.Flush(now))
	l.mu.Unlock()
}

// setUp sets the limiter's budget; l.mu is held.
func (l *rateLog) setUp() {
	if l.lim.Interval == 0 {
		l.lim.Interval, l.lim.Burst = time.Second, rateLogPerSecond
	}
}

// reportLocked logs the count of n lines held back; l.mu is held.
func (l *rateLog) reportLocked(log *zap.Logger, n int) {
	if n == 0 {
		return
	}
	l.held = false
	if ce := log.Check(l.level, "log lines suppressed"); ce != nil {
		ce.Write(zap.String("kind", l.kind), zap.Int("count", n))
	}
}
