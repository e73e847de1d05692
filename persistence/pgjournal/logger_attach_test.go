package pgjournal

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

// A store opened without a logger logs its warnings, once persistence.Start attaches
// it to a system, to the system's logger.
func TestStoreLogsToTheSystemItIsAttachedTo(t *testing.T) {
	s, _ := openFresh(t, nil) // no Logger
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
	if _, err := persistence.Start(sys, persistence.Config{Journal: s, Snapshots: s, Registry: serialization.NewRegistry()}); err != nil {
		t.Fatal(err)
	}
	s.log.Warn("store warning")
	got := logs.FilterMessage("store warning").All()
	if len(got) != 1 || got[0].ContextMap()["system"] != "attached" {
		t.Fatalf("lines %v, want the store's warning with the system's fields", logs.All())
	}
}
