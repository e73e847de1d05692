package remote

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// rateLog logs at most a few lines per second for one kind of event, so that a peer
// flooding bad input cannot flood the log; the rest are counted and summarised.
type rateLog struct {
	mu         sync.Mutex
	windowEnd  time.Time
	logged     int
	suppressed int
}

const rateLogPerSecond = 10

func (l *rateLog) log(log *zap.Logger, msg string, fields ...zap.Field) {
	now := time.Now()
	l.mu.Lock()
	if now.After(l.windowEnd) {
		if l.suppressed > 0 {
			log.Warn("log lines suppressed", zap.String("kind", msg), zap.Int("count", l.suppressed))
		}
		l.windowEnd, l.logged, l.suppressed = now.Add(time.Second), 0, 0
	}
	if l.logged >= rateLogPerSecond {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.logged++
	l.mu.Unlock()
	log.Warn(msg, fields...)
}
