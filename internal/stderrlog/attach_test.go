package stderrlog

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Until it is attached, an Attachable logs warnings (to standard error) and not
// info; once attached, everything goes to the system's logger at its levels, with
// the fields of both, including through loggers derived before the attachment.
func TestAttachableSwitchesToTheSystemLogger(t *testing.T) {
	l, a := NewAttachable()
	derived := l.With(zap.String("component", "store"))
	if derived.Core().Enabled(zapcore.InfoLevel) || !derived.Core().Enabled(zapcore.WarnLevel) {
		t.Fatal("before attaching: want warnings and errors only")
	}
	core, logs := observer.New(zapcore.InfoLevel)
	sys := zap.New(core).With(zap.String("system", "node0"))
	if !a.Attach(sys) {
		t.Fatal("the first attach was not taken")
	}
	if a.Attach(zap.NewNop()) {
		t.Fatal("a second attach was taken")
	}
	derived.Warn("disk slow")
	derived.Debug("not enabled")
	all := logs.All()
	if len(all) != 1 || all[0].Message != "disk slow" || all[0].Level != zapcore.WarnLevel {
		t.Fatalf("lines %v, want the one warning", all)
	}
	if m := all[0].ContextMap(); m["system"] != "node0" || m["component"] != "store" {
		t.Fatalf("fields %v, want system and component", m)
	}
}
