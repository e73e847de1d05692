package badgerjournal

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
)

// badgerLogger adapts a *zap.Logger to badger's Logger interface.
type badgerLogger struct {
	l *zap.Logger
}

func newBadgerLogger(l *zap.Logger) badgerLogger {
	return badgerLogger{l: l.With(zap.String("component", "badger"))}
}

func format(f string, args []any) string {
	return strings.TrimRight(fmt.Sprintf(f, args...), "\n")
}

func (b badgerLogger) Errorf(f string, args ...any) {
	if b.l.Core().Enabled(zap.ErrorLevel) {
		b.l.Error(format(f, args))
	}
}

func (b badgerLogger) Warningf(f string, args ...any) {
	if b.l.Core().Enabled(zap.WarnLevel) {
		b.l.Warn(format(f, args))
	}
}

// Infof logs at debug level: badger reports routine work (tables opened,
// compactions) as information.
func (b badgerLogger) Infof(f string, args ...any) {
	if b.l.Core().Enabled(zap.DebugLevel) {
		b.l.Debug(format(f, args))
	}
}

func (b badgerLogger) Debugf(f string, args ...any) {
	if b.l.Core().Enabled(zap.DebugLevel) {
		b.l.Debug(format(f, args))
	}
}
