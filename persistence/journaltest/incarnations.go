package journaltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
)

// The journal under the persistence runtime: two incarnations of one
// entity, in two actor systems that stand for two nodes after a split brain,
// write through one journal. The journal's conflict reports are what stops
// the one that lost.

// LedgerEntry is the event of the ledger entity of the TwoIncarnations test.
// It is exported only because the serialization registry encodes exported
// fields.
type LedgerEntry struct{ Text string }

// appendEntries asks a ledger to persist one event per text, each with
// PersistAsync (so one journal call carries one atomic write per text), and
// to answer with the last one's sequence number.
type appendEntries struct{ texts []string }

// ledger is an event-sourced list of entries.
type ledger struct {
	pid     string
	entries []string
	probe   actor.Ref
}

func (l *ledger) PersistenceID() string { return l.pid }

func (l *ledger) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case LedgerEntry:
		l.entries = append(l.entries, m.Text)
	case persistence.RecoveryCompleted:
		_ = l.probe.Tell(m)
	}
}

func (l *ledger) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case appendEntries:
		for i, text := range m.texts {
			last := i == len(m.texts)-1
			_ = persistence.PersistAsync(ctx, LedgerEntry{Text: text}, func(e LedgerEntry) {
				l.entries = append(l.entries, e.Text)
				if last {
					_ = ctx.Respond(ctx.LastSequenceNr())
				}
			})
		}
	case persistence.PersistRejected:
		_ = ctx.Respond(actor.Failure{Err: m.Err})
	}
}

// node is one actor system with the persistence runtime on the journal under
// test.
type node struct {
	sys   *actor.System
	probe *testkit.Probe
}

// startNode starts an actor system with persistence on j, and shuts it down
// when the test ends. It does not use testkit.NewSystem, whose leak check
// cannot run beside the suite's parallel tests.
func startNode(t *testing.T, j persistence.Journal, name string) node {
	t.Helper()
	log, stopLog := testkit.NewLogger(t, zapcore.WarnLevel)
	sys, err := actor.New(name, actor.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(10*time.Second))
		defer cancel()
		if err := sys.Shutdown(ctx); err != nil {
			t.Errorf("shutdown of %s: %v", name, err)
		}
		stopLog()
	})
	reg := serialization.NewRegistry()
	if err := serialization.Register[LedgerEntry](reg, "journaltest.LedgerEntry"); err != nil {
		t.Fatal(err)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: j, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	return node{sys: sys, probe: testkit.NewProbe(t, sys)}
}

// spawnLedger starts the ledger pid on n and waits for its recovery.
func (n node) spawnLedger(t *testing.T, pid string, wantHighest uint64) actor.Ref {
	t.Helper()
	ref, err := n.sys.Spawn(persistence.Props(func() persistence.Entity {
		return &ledger{pid: pid, probe: n.probe.Ref()}
	}), "ledger")
	if err != nil {
		t.Fatal(err)
	}
	if rc := testkit.ExpectMsgType[persistence.RecoveryCompleted](n.probe); rc.HighestSequenceNr != wantHighest {
		t.Fatalf("recovered at #%d, want #%d", rc.HighestSequenceNr, wantHighest)
	}
	return ref
}

// testTwoIncarnations: two incarnations of one persistence id recover the
// same history. The first writes; the second's first write conflicts, and
// the runtime stops it: its ask fails with ErrSequenceConflict, the write
// that followed in the same journal call is not stored, and it writes
// nothing more. The journal holds one history, the first incarnation's,
// every event with its writer id.
func (s *journalSuite) testTwoIncarnations(t *testing.T) {
	ctx := s.opts.context(t)
	j, dir := s.openFresh(t)
	const pid = "two-incarnations"
	n1, n2 := startNode(t, j, "node1"), startNode(t, s.openSecond(t, j, dir), "node2")
	first := n1.spawnLedger(t, pid, 0)
	second := n2.spawnLedger(t, pid, 0)

	if seq, err := actor.Ask[uint64](ctx, first, appendEntries{[]string{"a1"}}); err != nil || seq != 1 {
		t.Fatalf("first incarnation's write: #%d, %v; want #1", seq, err)
	}
	n2.probe.Watch(second)
	_, err := actor.Ask[uint64](ctx, second, appendEntries{[]string{"b1", "b2"}})
	if !errors.Is(err, persistence.ErrSequenceConflict) {
		t.Errorf("second incarnation's write of #1 and #2: %v, want ErrSequenceConflict", err)
	}
	n2.probe.ExpectTerminated(second)
	if _, err := actor.Ask[uint64](ctx, second, appendEntries{[]string{"b3"}}); err == nil {
		t.Errorf("the stopped incarnation answered a write")
	}
	if seq, err := actor.Ask[uint64](ctx, first, appendEntries{[]string{"a2", "a3"}}); err != nil || seq != 3 {
		t.Fatalf("first incarnation's writes after the conflict: #%d, %v; want #3", seq, err)
	}

	var texts, writers []string
	reg := serialization.NewRegistry()
	_ = serialization.Register[LedgerEntry](reg, "journaltest.LedgerEntry")
	for _, r := range replay(t, ctx, j, pid, 1, persistence.MaxSequenceNr, 0) {
		ev, err := reg.Unmarshal(r.Manifest, r.Payload)
		if err != nil {
			t.Fatalf("#%d: %v", r.SequenceNr, err)
		}
		texts = append(texts, fmt.Sprintf("#%d %s", r.SequenceNr, ev.(LedgerEntry).Text))
		writers = append(writers, r.WriterID)
	}
	if want := []string{"#1 a1", "#2 a2", "#3 a3"}; !slices.Equal(texts, want) {
		t.Errorf("the journal holds %v, want the first incarnation's %v", texts, want)
	}
	for i, w := range writers {
		if w != first.URI() {
			t.Errorf("event %d has writer id %q, want the first incarnation's %q", i+1, w, first.URI())
		}
	}
	expectHighest(t, ctx, j, pid, 3)
}
