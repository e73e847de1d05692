package persistence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

func TestCloseOnShutdownClosesThePluginsAfterTheActors(t *testing.T) {
	sys, err := actor.New("closing", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := memjournal.New()
	_, err = persistence.Start(sys, persistence.Config{
		Journal: store, Snapshots: store, Registry: serialization.NewRegistry(), CloseOnShutdown: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
	defer cancel()
	if err := sys.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := store.HighestSequenceNr(ctx, "x"); !errors.Is(err, persistence.ErrClosed) {
		t.Fatalf("the journal is still open after shutdown: %v", err)
	}
}
