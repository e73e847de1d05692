package persistence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestConfigValidate(t *testing.T) {
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	reg := serialization.NewRegistry()
	valid := persistence.Config{Journal: store, Registry: reg}
	tests := []struct {
		name  string
		edit  func(*persistence.Config)
		valid bool
	}{
		{"zero values mean defaults", func(*persistence.Config) {}, true},
		{"everything set", func(c *persistence.Config) {
			c.Snapshots, c.ReplayBatch, c.RecoveryEventTimeout = store, 10, time.Second
			c.JournalBreaker = persistence.BreakerConfig{MaxFailures: -1, CallTimeout: time.Second, ResetTimeout: time.Second, MaxResetTimeout: time.Minute}
		}, true},
		{"no journal", func(c *persistence.Config) { c.Journal = nil }, false},
		{"no registry", func(c *persistence.Config) { c.Registry = nil }, false},
		{"negative replay batch", func(c *persistence.Config) { c.ReplayBatch = -1 }, false},
		{"negative event timeout", func(c *persistence.Config) { c.RecoveryEventTimeout = -time.Second }, false},
		{"negative call timeout", func(c *persistence.Config) { c.JournalBreaker.CallTimeout = -1 }, false},
		{"negative reset timeout", func(c *persistence.Config) { c.SnapshotBreaker.ResetTimeout = -1 }, false},
		{"negative maximum reset timeout", func(c *persistence.Config) { c.SnapshotBreaker.MaxResetTimeout = -1 }, false},
		{"maximum reset timeout below the reset timeout", func(c *persistence.Config) {
			c.JournalBreaker.ResetTimeout, c.JournalBreaker.MaxResetTimeout = 2*time.Second, time.Second
		}, false},
		{"maximum reset timeout alone", func(c *persistence.Config) { c.JournalBreaker.MaxResetTimeout = time.Millisecond }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid
			tc.edit(&c)
			err := c.Validate()
			if tc.valid && err != nil {
				t.Fatal(err)
			}
			if !tc.valid && !errors.Is(err, persistence.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestStartAndGet(t *testing.T) {
	sys := testkit.NewSystem(t)
	if p := persistence.Get(sys); p != nil {
		t.Fatalf("Get before Start: %p", p)
	}
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	if _, err := persistence.Start(sys, persistence.Config{Journal: store}); !errors.Is(err, persistence.ErrInvalidConfig) {
		t.Fatalf("Start with an invalid config: %v", err)
	}
	if p := persistence.Get(sys); p != nil {
		t.Fatalf("Get after a failed Start: %p", p)
	}
	p, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: serialization.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if got := persistence.Get(sys); got != p {
		t.Fatalf("Get returned %p; Start returned %p", got, p)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: serialization.NewRegistry()}); !errors.Is(err, persistence.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v", err)
	}
	if st := p.Stats(); st != (persistence.Stats{}) {
		t.Fatalf("fresh stats %+v", st)
	}
}

// An entity in a system without persistence stops, and the logged error says once what
// to call, and names the system.
func TestEntityWithoutPersistenceSaysWhatToCall(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	sys := testkit.NewSystem(t, actor.Config{Logger: zap.New(core)})
	probe := testkit.NewProbe(t, sys)
	ref, err := sys.Spawn(persistence.Props(func() persistence.Entity { return &noopEntity{} }), "e")
	if err != nil {
		t.Fatal(err)
	}
	probe.Watch(ref)
	probe.ExpectTerminated(ref)
	entries := logs.FilterMessage("persistence: cannot start entity").All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries %q, want 1", len(entries), "persistence: cannot start entity")
	}
	msg := fmt.Sprint(entries[0].ContextMap()["error"])
	if n := strings.Count(msg, "call persistence.Start"); n != 1 || !strings.Contains(msg, sys.Name()) {
		t.Errorf("error %q: want one %q and the system's name", msg, "call persistence.Start")
	}
}

// noopEntity persists nothing.
type noopEntity struct{}

func (noopEntity) PersistenceID() string       { return "noop" }
func (noopEntity) Recover(persistence.Context) {}
func (noopEntity) Receive(persistence.Context) {}
