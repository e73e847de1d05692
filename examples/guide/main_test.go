package main

import (
	"bytes"
	"regexp"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// A probe memberlist started before serf shut down waits out its timeouts and
		// then ends; serf's Shutdown does not wait for it (as in testkit/multinode).
		goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"),
	)
}

// logs collects the runtime's log lines of a demo run. A logger tied to the test would
// panic when memberlist's lingering probe (above) logs after the test has ended.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The demo, as `go run ./examples/guide` runs it: three nodes, accounts opened and
// used, the oldest leaves, and every balance, number and count is what it must be.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	var lines logs
	logger := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(&lines), zap.InfoLevel))
	defer func() {
		if t.Failed() {
			t.Log("the runtime's log:\n" + lines.String())
		}
	}()
	if err := demo(&out, logger); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{
		`1\. three nodes are Up, sharing a badger journal; bank-\d is the oldest`,
		`bank-0 opened account 1001 for ann`,
		`bank-1 opened account 1002 for bob`,
		`bank-2 opened account 1003 for cho`,
		`bank-1: deposit 100 on 1001: balance 100\n`,
		`bank-2: withdraw 30 on 1001: balance 70\n`,
		`bank-0: withdraw 80 on 1002: rejected: insufficient funds\n`,
		`counted on every node in distributed data: 4\n`,
		`bank-\d, the oldest, leaves gracefully`,
		`opened account 1004 for dan: the new allocator recovered`,
		`account 1001 of ann: balance 70, intact`,
		`account 1002 of bob: balance 50, intact`,
		`account 1003 of cho: balance 70, intact`,
		`transactions counted: 5\n`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
