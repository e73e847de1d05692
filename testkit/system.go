package testkit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/goleak"
	"go.uber.org/zap/zapcore"
)

// NewSystem returns an actor system for one test, logging through the test's log. At
// the end of the test it is shut down and the test fails if the system left goroutines
// behind. Tests that use it must not run in parallel with others (t.Parallel), since the
// leak check looks at the whole process.
func NewSystem(t testing.TB, cfg ...actor.Config) *actor.System {
	t.Helper()
	c := actor.Config{}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	stopLog := func() {}
	if c.Logger == nil && c.Slog == nil {
		c.Logger, stopLog = NewLogger(t, zapcore.InfoLevel)
	}
	before := goleak.IgnoreCurrent()
	sys, err := actor.New(systemName(t.Name()), c)
	if err != nil {
		t.Fatalf("testkit: new system: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("testkit: shutdown: %v", err)
		}
		stopLog()
		if err := goleak.Find(before); err != nil {
			t.Errorf("testkit: goroutines left after shutdown: %v", err)
		}
	})
	return sys
}

// systemName turns a test name into a valid system name.
func systemName(test string) string {
	var b strings.Builder
	for _, r := range test {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			r = '_'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "test"
	}
	return b.String()
}
