package stderrlog

import (
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Attachable is the logger of a component opened before (and apart from) any actor
// system, with no logger of its own: it writes as New does (warnings and errors to
// standard error) until Attach hands it the system's logger, and then writes there,
// at that logger's levels. Loggers derived from it (With) follow the switch.
type Attachable struct {
	target   atomic.Pointer[zapcore.Core]
	attached atomic.Bool
}

// NewAttachable returns a logger writing to standard error until a.Attach, and a.
func NewAttachable() (*zap.Logger, *Attachable) {
	a := &Attachable{}
	core := New().Core()
	a.target.Store(&core)
	return zap.New(switchCore{a: a}), a
}

// Attach sends the lines from now on to l (its core, with the fields l carries). The
// first call wins: a component shared by several systems (tests run many in one
// process) logs to the first it was attached to. It reports whether l was taken.
func (a *Attachable) Attach(l *zap.Logger) bool {
	if l == nil || !a.attached.CompareAndSwap(false, true) {
		return false
	}
	core := l.Core()
	a.target.Store(&core)
	return true
}

// switchCore is a zapcore.Core that writes to its Attachable's current target.
type switchCore struct {
	a      *Attachable
	fields []zapcore.Field // added by With, applied to the target at each write
}

func (c switchCore) current() zapcore.Core { return *c.a.target.Load() }

func (c switchCore) Enabled(l zapcore.Level) bool { return c.current().Enabled(l) }

func (c switchCore) With(fields []zapcore.Field) zapcore.Core {
	return switchCore{a: c.a, fields: append(slices.Clip(c.fields), fields...)}
}

func (c switchCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c switchCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	core := c.current()
	if len(c.fields) > 0 {
		core = core.With(c.fields)
	}
	if ce := core.Check(e, nil); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (c switchCore) Sync() error { return c.current().Sync() }
