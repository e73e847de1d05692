package badgerjournal

import (
	"context"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// observedSystem returns a system whose logger is an observer at info level, shut
// down at the end of the test.
func observedSystem(t *testing.T) (*actor.System, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	sys, err := actor.New("attached", actor.Config{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return sys, logs
}

// A store opened without a logger logs, once persistence.Start attaches it to a
// system, to the system's logger: its own warnings and badger's (badger's
// informational lines at debug, below the system's level here).
func TestStoreLogsToTheSystemItIsAttachedTo(t *testing.T) {
	s, err := Open(context.Background(), Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sys, logs := observedSystem(t)
	if _, err := persistence.Start(sys, persistence.Config{Journal: s, Snapshots: s, Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	s.log.Warn("store warning")
	s.db.Opts().Logger.Warningf("badger warning %d", 1)
	s.db.Opts().Logger.Infof("badger news")
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.Message)
		if e.ContextMap()["system"] != "attached" && e.Level >= zapcore.WarnLevel {
			t.Errorf("line %q without the system's fields: %v", e.Message, e.ContextMap())
		}
	}
	if logs.FilterMessage("store warning").Len() != 1 || logs.FilterMessageSnippet("badger warning 1").Len() != 1 {
		t.Fatalf("lines %q, want the store's warning and badger's", got)
	}
	if logs.FilterMessageSnippet("badger news").Len() != 0 {
		t.Fatalf("badger's informational line reached info: %q", got)
	}
}

// A store given its own logger keeps it when attached to a system.
func TestStoreKeepsItsOwnLogger(t *testing.T) {
	own, ownLogs := observer.New(zapcore.InfoLevel)
	s, err := Open(context.Background(), Config{Dir: t.TempDir(), Logger: zap.New(own)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sys, logs := observedSystem(t)
	if _, err := persistence.Start(sys, persistence.Config{Journal: s, Snapshots: s, Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	s.log.Warn("store warning")
	if ownLogs.FilterMessage("store warning").Len() != 1 || logs.FilterMessage("store warning").Len() != 0 {
		t.Fatal("the warning did not go to the store's own logger alone")
	}
}
