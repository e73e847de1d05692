package sim

import (
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// nodeLog keeps what the nodes logged (at Debug and above: a run logs a few thousand
// lines, membership changes among them) in memory, so that the report
// of a failing run has it without slowing every run down with output.
type nodeLog struct {
	mu    sync.Mutex
	lines []string
}

func (r *nodeLog) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	return len(p), nil
}

func (r *nodeLog) Sync() error { return nil }

// all returns the lines, oldest first.
func (r *nodeLog) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lines
}

// logger returns a logger that writes into r.
func (r *nodeLog) logger() *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(r), zapcore.DebugLevel))
}
