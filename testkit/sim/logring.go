package sim

import (
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ring keeps what the nodes logged (at Info and above) in memory, so that the report
// of a failing run has it without slowing every run down with output.
type ring struct {
	mu    sync.Mutex
	lines []string
}

func (r *ring) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	return len(p), nil
}

func (r *ring) Sync() error { return nil }

// last returns the lines, oldest first.
func (r *ring) last() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines
}

// logger returns a logger that writes into r.
func (r *ring) logger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(r), zapcore.InfoLevel))
}
