package persistence_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/memjournal"
	"github.com/troupe-go/troupe/testkit"
)

// faultyJournal wraps a journal: while hang is set its calls block until release is
// closed (ignoring their context unless honourCtx), while fail is set they fail, and
// it counts the calls that reached it.
type faultyJournal struct {
	persistence.Journal
	hang, fail   atomic.Bool // fail: every call fails
	failWrites   atomic.Bool
	honourCtx    bool
	release      chan struct{}
	writes       atomic.Int32
	replays      atomic.Int32
	replayPacing time.Duration // when set, a pause before each replayed event
}

var errDiskOnFire = errors.New("disk on fire")

func newFaultyJournal() *faultyJournal {
	return &faultyJournal{Journal: memjournal.New(), release: make(chan struct{})}
}

func (f *faultyJournal) block(ctx context.Context) error {
	if !f.hang.Load() {
		return nil
	}
	if f.honourCtx {
		select {
		case <-f.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	<-f.release
	return nil
}

func (f *faultyJournal) WriteMessages(ctx context.Context, w []persistence.AtomicWrite) ([]error, error) {
	f.writes.Add(1)
	if err := f.block(ctx); err != nil {
		return nil, err
	}
	if f.fail.Load() || f.failWrites.Load() {
		return nil, errDiskOnFire
	}
	return f.Journal.WriteMessages(ctx, w)
}

func (f *faultyJournal) ReplayMessages(ctx context.Context, pid string, from, to, max uint64, fn func(persistence.Record) error) error {
	f.replays.Add(1)
	if err := f.block(ctx); err != nil {
		return err
	}
	if f.fail.Load() {
		return errDiskOnFire
	}
	return f.Journal.ReplayMessages(ctx, pid, from, to, max, func(r persistence.Record) error {
		if f.replayPacing > 0 {
			time.Sleep(f.replayPacing) // a slow disk, in virtual time
		}
		return fn(r)
	})
}

// A journal write that never answers fails the entity's persist after the call
// timeout, and the entity stops as after any failed write, whether the journal
// honours its context or ignores it. The entity used to wait for ever.
func TestHungJournalWriteStopsTheEntity(t *testing.T) {
	for _, honour := range []bool{true, false} {
		name := "journal ignores its context"
		if honour {
			name = "journal honours its context"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				j := newFaultyJournal()
				j.honourCtx = honour
				defer close(j.release) // lets an abandoned call return before the test ends
				sys := testkit.NewSystem(t)
				p, err := persistence.Start(sys, persistence.Config{Journal: j, Registry: registry(t),
					JournalBreaker: persistence.BreakerConfig{CallTimeout: 2 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				probe := testkit.NewProbe(t, sys)
				ref, _ := sys.Spawn(counterProps("hung", probe), "c")
				probe.ExpectMsg(persistence.RecoveryCompleted{})
				probe.Watch(ref)
				j.hang.Store(true)
				start := time.Now()
				_ = ref.Tell(increment{by: 1})
				probe.ExpectTerminated(ref, time.Minute)
				if waited := time.Since(start); waited < 2*time.Second || waited > 3*time.Second {
					t.Fatalf("stopped after %v, want the call timeout of 2s", waited)
				}
				// The handler of the event never runs: its write's outcome is unknown.
				if st := p.Stats(); st.WritesFailed != 1 || st.HandlersDropped != 1 || st.CallsTimedOut != 1 {
					t.Fatalf("stats %+v", st)
				}
			})
		})
	}
}

// A replay that stalls fails the recovery after the recovery event timeout, and the
// entity stops; a slow replay that keeps delivering events does not.
func TestStalledReplayFailsRecovery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newFaultyJournal()
		defer close(j.release)
		sys := testkit.NewSystem(t)
		p, err := persistence.Start(sys, persistence.Config{Journal: j, Registry: registry(t), RecoveryEventTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		probe := testkit.NewProbe(t, sys)
		ref, _ := sys.Spawn(counterProps("slow", probe), "c")
		probe.ExpectMsg(persistence.RecoveryCompleted{})
		for i := 1; i <= 5; i++ {
			probe.Send(ref, increment{by: 1})
			probe.ExpectMsg(i)
		}
		stopAndWait(sys, probe, ref)

		// 5 events, 600ms apart: 3s in all, but never 1s without an event.
		j.replayPacing = 600 * time.Millisecond
		ref, _ = sys.Spawn(counterProps("slow", probe), "c2")
		probe.ExpectMsg(persistence.RecoveryCompleted{HighestSequenceNr: 5}, time.Minute)
		stopAndWait(sys, probe, ref)

		j.hang.Store(true)
		ref, _ = sys.Spawn(counterProps("slow", probe), "c3")
		probe.Watch(ref)
		start := time.Now()
		probe.ExpectTerminated(ref, time.Minute)
		if waited := time.Since(start); waited < time.Second || waited > 2*time.Second {
			t.Fatalf("recovery failed after %v, want the event timeout of 1s", waited)
		}
		if st := p.Stats(); st.RecoveriesFailed != 1 || st.CallsTimedOut != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// hangingSnapshots never answers SaveSnapshot until release is closed.
type hangingSnapshots struct {
	persistence.SnapshotStore
	release chan struct{}
}

func (h *hangingSnapshots) SaveSnapshot(context.Context, persistence.Snapshot) error {
	<-h.release
	return nil
}

// A snapshot store that never answers fails the snapshot after its call timeout; the
// entity receives SaveSnapshotFailure wrapping ErrCallTimeout and keeps running.
func TestHungSnapshotStoreFailsTheSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memjournal.New()
		hung := &hangingSnapshots{SnapshotStore: store, release: make(chan struct{})}
		defer close(hung.release)
		sys := testkit.NewSystem(t)
		_, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: hung, Registry: notebookRegistry(t),
			SnapshotBreaker: persistence.BreakerConfig{CallTimeout: 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		probe := testkit.NewProbe(t, sys)
		ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
			return &snapStopper{notebook{id: "snaps", probe: probe.Ref()}}
		}), "s")
		probe.ExpectMsg([]string(nil))
		_ = ref.Tell("snap")
		f := testkit.ExpectMsgType[persistence.SaveSnapshotFailure](probe, time.Minute)
		if !errors.Is(f.Err, persistence.ErrCallTimeout) {
			t.Fatalf("failure %v", f.Err)
		}
		probe.Send(ref, seqQuery{})
		probe.ExpectMsg(uint64(0))
	})
}

// The journal's circuit breaker: after MaxFailures failed writes in a row it opens,
// and writes and recoveries fail fast with ErrCircuitOpen without reaching the
// journal; after ResetTimeout one trial call goes through, and its success closes
// the breaker.
func TestJournalCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := newFaultyJournal()
		defer close(j.release)
		sys := testkit.NewSystem(t)
		p, err := persistence.Start(sys, persistence.Config{Journal: j, Registry: registry(t),
			JournalBreaker: persistence.BreakerConfig{MaxFailures: 3, ResetTimeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		probe := testkit.NewProbe(t, sys)
		var refs []actor.Ref
		for _, name := range []string{"a", "b", "c", "d"} {
			ref, _ := sys.Spawn(counterProps(name, probe), name)
			probe.ExpectMsg(persistence.RecoveryCompleted{})
			refs = append(refs, ref)
		}
		j.failWrites.Store(true)
		for _, ref := range refs[:3] { // one failed write after another: each stops its entity
			probe.Watch(ref)
			_ = ref.Tell(increment{by: 1})
			probe.ExpectTerminated(ref)
		}
		if st := p.Stats(); st.JournalBreaker != persistence.BreakerOpen || j.writes.Load() != 3 {
			t.Fatalf("after 3 failures: %+v, %d writes", st, j.writes.Load())
		}

		// Open: a write fails fast and stops its entity, without reaching the journal.
		probe.Watch(refs[3])
		_ = refs[3].Tell(increment{by: 1})
		probe.ExpectTerminated(refs[3])
		if j.writes.Load() != 3 || p.Stats().CallsRejected != 1 {
			t.Fatalf("an open breaker let a write through (%d writes, %+v)", j.writes.Load(), p.Stats())
		}

		// A recovery fails fast too, without a replay reaching the journal.
		j.fail.Store(true)
		replays := j.replays.Load()
		ref, _ := sys.Spawn(counterProps("x", probe), "x")
		probe.Watch(ref)
		probe.ExpectTerminated(ref)
		if j.replays.Load() != replays || p.Stats().CallsRejected != 2 {
			t.Fatalf("an open breaker let a replay through (%d replays, %+v)", j.replays.Load()-replays, p.Stats())
		}

		// After the reset timeout the journal has recovered; the trial (a replay)
		// closes the breaker and the entity works again.
		j.fail.Store(false)
		j.failWrites.Store(false)
		time.Sleep(10 * time.Second) // virtual time: the reset timeout passes
		ref, _ = sys.Spawn(counterProps("e", probe), "e")
		probe.ExpectMsg(persistence.RecoveryCompleted{})
		if st := p.Stats().JournalBreaker; st != persistence.BreakerClosed {
			t.Fatalf("breaker %v after a successful trial", st)
		}
		probe.Send(ref, increment{by: 5})
		probe.ExpectMsg(5)
	})
}

// failingSnapshots fails every SaveSnapshot, and counts them.
type failingSnapshots struct {
	persistence.SnapshotStore
	saves atomic.Int32
}

func (f *failingSnapshots) SaveSnapshot(context.Context, persistence.Snapshot) error {
	f.saves.Add(1)
	return errDiskOnFire
}

// The snapshot store has a breaker of its own: failing snapshots open it, and then
// snapshots fail fast with ErrCircuitOpen while the journal keeps working.
func TestSnapshotStoreCircuitBreaker(t *testing.T) {
	store := memjournal.New()
	t.Cleanup(func() { _ = store.Close() })
	snaps := &failingSnapshots{SnapshotStore: store}
	sys := testkit.NewSystem(t)
	p, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: snaps, Registry: notebookRegistry(t),
		SnapshotBreaker: persistence.BreakerConfig{MaxFailures: 2}})
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &snapStopper{notebook{id: "snaps", probe: probe.Ref()}}
	}), "s")
	probe.ExpectMsg([]string(nil))
	for _, want := range []error{errDiskOnFire, errDiskOnFire, persistence.ErrCircuitOpen} {
		_ = ref.Tell("snap")
		if f := testkit.ExpectMsgType[persistence.SaveSnapshotFailure](probe); !errors.Is(f.Err, want) {
			t.Fatalf("snapshot failed with %v, want %v", f.Err, want)
		}
	}
	if snaps.saves.Load() != 2 || p.Stats().SnapshotBreaker != persistence.BreakerOpen || p.Stats().JournalBreaker != persistence.BreakerClosed {
		t.Fatalf("%d saves, %+v", snaps.saves.Load(), p.Stats())
	}
	probe.Send(ref, note{s: "still writing"})
	probe.ExpectMsg(uint64(1))
}

// An entity stopped (PoisonPill) while its write is in flight runs no handler for it,
// and the command's sender is told at once: an Ask fails instead of timing out.
func TestStopWithAPersistInFlightAnswersTheSender(t *testing.T) {
	j := newFaultyJournal()
	j.honourCtx = true
	defer close(j.release)
	sys := testkit.NewSystem(t)
	p, err := persistence.Start(sys, persistence.Config{Journal: j, Registry: registry(t)})
	if err != nil {
		t.Fatal(err)
	}
	probe := testkit.NewProbe(t, sys)
	ref, _ := sys.Spawn(counterProps("stopped", probe), "c")
	probe.ExpectMsg(persistence.RecoveryCompleted{})
	probe.Watch(ref)
	j.hang.Store(true)
	probe.Send(ref, increment{by: 1})
	for j.writes.Load() == 0 { // the write is in flight
		<-time.After(time.Millisecond) // polling the journal fake's counter
	}
	_ = ref.Tell(actor.PoisonPill{})
	f := testkit.ExpectMsgType[actor.Failure](probe)
	if !errors.Is(f.Err, actor.ErrRecipientStopped) {
		t.Fatalf("failure %v, want ErrRecipientStopped", f.Err)
	}
	probe.ExpectTerminated(ref)
	if st := p.Stats(); st.HandlersDropped != 1 {
		t.Fatalf("stats %+v", st)
	}
}
