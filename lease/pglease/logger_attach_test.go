package pglease

import (
	"testing"

	"github.com/troupe-go/troupe/lease"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var _ lease.SystemLogger = (*Lease)(nil)

// A lease made without a logger logs its warnings, once the system that uses it
// hands it its logger (the cluster and the singleton do, when they start with it), to
// that logger, with the lease's own fields.
func TestLeaseLogsToTheSystemThatUsesIt(t *testing.T) {
	l := open(t, steady("attach", "a"), Config{Schema: newSchema(t)}) // no Logger
	core, logs := observer.New(zapcore.InfoLevel)
	l.UseSystemLogger(zap.New(core).With(zap.String("system", "attached")))
	l.log.Warn("lease warning")
	got := logs.FilterMessage("lease warning").All()
	if len(got) != 1 {
		t.Fatalf("lines %v, want the lease's warning", logs.All())
	}
	if m := got[0].ContextMap(); m["system"] != "attached" || m["lease"] != "attach" || m["owner"] != "a" {
		t.Fatalf("fields %v, want the system's and the lease's", m)
	}
}
