package stderrlog

import (
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWarnAndAbove(t *testing.T) {
	l := New()
	if l.Core().Enabled(zapcore.InfoLevel) {
		t.Fatal("info is enabled; the default logger writes warnings and errors only")
	}
	if !l.Core().Enabled(zapcore.WarnLevel) || !l.Core().Enabled(zapcore.ErrorLevel) {
		t.Fatal("warnings or errors are not enabled")
	}
}
