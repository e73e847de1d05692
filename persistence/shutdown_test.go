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

// gatedSnapshots holds each SaveSnapshot until release is closed, and tells entered
// when one has started.
type gatedSnapshots struct {
	persistence.SnapshotStore
	entered chan struct{}
	release chan struct{}
}

func (g *gatedSnapshots) SaveSnapshot(ctx context.Context, s persistence.Snapshot) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.SnapshotStore.SaveSnapshot(ctx, s)
}

// snapStopper saves a snapshot on "snap", and stops itself too on "snap-and-stop";
// it reports the replies it receives, and its lifecycle. On Stopped it saves one more
// snapshot, whose reply it can no longer receive.
type snapStopper struct{ notebook }

func (s *snapStopper) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case string:
		s.snapshot(ctx)
		if m == "snap-and-stop" {
			ctx.Stop(ctx.Self())
		}
	case persistence.SaveSnapshotSuccess, persistence.SaveSnapshotFailure:
		_ = s.probe.Tell(m)
	case actor.Stopping:
		_ = s.probe.Tell("stopping")
	case actor.Stopped:
		_ = s.probe.Tell("stopped")
		s.notes = append(s.notes, "last words")
		s.snapshot(ctx)
	default:
		s.notebook.Receive(ctx)
	}
}

// The reply to a snapshot requested just before the entity stops reaches the entity
// before it stops, whether it stops itself or is stopped from outside. It used to go
// to dead letters. A snapshot requested from the Stopped handler is stored, and its
// reply goes to dead letters, counted.
func TestSnapshotReplyReachesAnEntityThatStops(t *testing.T) {
	for _, how := range []string{"itself", "from outside"} {
		t.Run(how, func(t *testing.T) {
			sys := testkit.NewSystem(t)
			store := memjournal.New()
			t.Cleanup(func() { _ = store.Close() })
			gated := &gatedSnapshots{SnapshotStore: store, entered: make(chan struct{}, 2), release: make(chan struct{})}
			p, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: gated, Registry: notebookRegistry(t)})
			if err != nil {
				t.Fatal(err)
			}
			probe := testkit.NewProbe(t, sys)
			dead := testkit.NewProbe(t, sys)
			actor.Subscribe[actor.DeadLetter](sys.EventStream(), dead.Ref())
			ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
				return &snapStopper{notebook{id: "stopper", probe: probe.Ref()}}
			}), "stopper")
			probe.ExpectMsg([]string(nil))
			probe.Watch(ref)
			if how == "itself" {
				_ = ref.Tell("snap-and-stop")
				<-gated.entered
			} else {
				_ = ref.Tell("snap")
				<-gated.entered
				sys.Stop(ref)
			}
			close(gated.release)
			testkit.ExpectMsgType[persistence.SaveSnapshotSuccess](probe)
			probe.ExpectMsg("stopping")
			probe.ExpectMsg("stopped")
			probe.ExpectTerminated(ref)

			// The snapshot of the Stopped handler is stored; its reply is a dead letter.
			// (An internal notice of the first reply may precede it, when that reply was
			// queued as the entity stopped: the reply itself was delivered above.)
			dl := dead.FishForMessage(func(m any) bool {
				_, ok := m.(actor.DeadLetter).Message.(persistence.SaveSnapshotSuccess)
				return ok
			}).(actor.DeadLetter)
			if dl.Sender != ref {
				t.Fatalf("dead letter %+v", dl)
			}
			if n := p.Stats().ResultsUndelivered; n != 1 {
				t.Fatalf("ResultsUndelivered = %d", n)
			}
			s, ok, err := store.LoadSnapshot(context.Background(), "stopper", persistence.SnapshotCriteria{})
			if err != nil || !ok {
				t.Fatalf("load: %v %v", ok, err)
			}
			state, _ := notebookRegistry(t).Unmarshal(s.Manifest, s.Payload)
			if got := state.(Notes).List; len(got) != 1 || got[0] != "last words" {
				t.Fatalf("stored snapshot %v", got)
			}
		})
	}
}
