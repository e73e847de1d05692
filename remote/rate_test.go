package remote

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A burst of one kind of event logs rateLogPerSecond lines; the rest are reported as
// a count once the second is over, even if no further event comes.
func TestRateLogReportsWhatItHoldsBack(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	var l rateLog
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 25 {
		l.logAt(log, zapcore.WarnLevel, t0.Add(time.Duration(i)*time.Millisecond), "boom")
	}
	if logs.Len() != rateLogPerSecond {
		t.Fatalf("%d lines in the first second", logs.Len())
	}
	l.flush(log, t0.Add(500*time.Millisecond))
	if logs.Len() != rateLogPerSecond {
		t.Fatalf("flushed within the second: %d lines", logs.Len())
	}
	l.flush(log, t0.Add(1100*time.Millisecond))
	all := logs.All()
	if len(all) != rateLogPerSecond+1 {
		t.Fatalf("%d lines after the second", len(all))
	}
	last := all[len(all)-1]
	if last.Message != "log lines suppressed" || last.ContextMap()["count"] != int64(15) || last.ContextMap()["kind"] != "boom" {
		t.Fatalf("summary %q %v", last.Message, last.ContextMap())
	}
	l.flush(log, t0.Add(2500*time.Millisecond))
	if logs.Len() != rateLogPerSecond+1 {
		t.Fatal("a summary with nothing held back")
	}
}

// The summary of held-back lines is at their level: info lines held back (a peer
// that keeps refusing connections as it goes away) are not worth a warning.
func TestRateLogSummaryAtTheLevelOfWhatItHeldBack(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	var l rateLog
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 15 {
		l.logAt(log, zapcore.InfoLevel, t0.Add(time.Duration(i)*time.Millisecond), "connect failed")
	}
	l.flush(log, t0.Add(1100*time.Millisecond))
	all := logs.All()
	if last := all[len(all)-1]; last.Message != "log lines suppressed" || last.Level != zapcore.InfoLevel {
		t.Fatalf("summary %q at %v, want log lines suppressed at info", last.Message, last.Level)
	}
	for i := range 15 {
		level := zapcore.InfoLevel
		if i == 12 {
			level = zapcore.WarnLevel
		}
		l.logAt(log, level, t0.Add(2*time.Second+time.Duration(i)*time.Millisecond), "mixed")
	}
	l.flush(log, t0.Add(3100*time.Millisecond))
	all = logs.All()
	if last := all[len(all)-1]; last.Message != "log lines suppressed" || last.Level != zapcore.WarnLevel {
		t.Fatalf("summary %q at %v, want log lines suppressed at warn (a warning was held back)", last.Message, last.Level)
	}
}
