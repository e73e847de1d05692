// Package stderrlog holds the logger Troupe uses where none was configured: warnings
// and errors to standard error, so that failures are never invisible by default.
package stderrlog

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a logger that writes warnings and errors to standard error, in zap's
// console format.
func New() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), zapcore.WarnLevel)
	return zap.New(core)
}
