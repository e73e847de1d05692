package actor

import (
	"context"
	"log/slog"

	"github.com/troupe-go/troupe/internal/stderrlog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// defaultLogger is the logger of a system configured without one: warnings and errors
// to standard error, so that failures are never invisible by default.
func defaultLogger() *zap.Logger { return stderrlog.New() }

// slogLogger returns a zap logger whose entries go to h, so that an application that
// logs with log/slog receives Troupe's logs in its own handler.
func slogLogger(h slog.Handler) *zap.Logger {
	return zap.New(slogCore{h: h})
}

// slogCore is a zapcore.Core writing to a slog.Handler. zap's fields become slog
// attributes; the entry's stack, when zap captured one, becomes a "stacktrace"
// attribute.
type slogCore struct {
	h slog.Handler
}

func (c slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{h: c.h.WithAttrs(slogAttrs(fields))}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	r.AddAttrs(slogAttrs(fields)...)
	if e.Stack != "" {
		r.AddAttrs(slog.String("stacktrace", e.Stack))
	}
	return c.h.Handle(context.Background(), r)
}

func (c slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// slogAttrs turns zap fields into slog attributes through zap's map encoder, which
// renders each field the way zap's own encoders would (errors as their text, durations
// as durations, objects as maps).
func slogAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	attrs := make([]slog.Attr, 0, len(fields))
	for _, f := range fields {
		f.AddTo(enc)
		for k, v := range enc.Fields {
			attrs = append(attrs, slog.Any(k, v))
			delete(enc.Fields, k)
		}
	}
	return attrs
}
