package persistence_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/serialization"
)

// crashDirEnv, when set, makes TestCrashChild run as the child process of
// TestSIGKILLLosesNoAcknowledgedEvent, persisting into that directory.
const crashDirEnv = "TROUPE_CRASH_CHILD_DIR"

// Seq is the event the crash test persists: its own sequence number.
type Seq struct{ N uint64 }

type crashWriter struct{ out *bufio.Writer }

func (w *crashWriter) PersistenceID() string       { return "crash" }
func (w *crashWriter) Recover(persistence.Context) {}
func (w *crashWriter) Receive(ctx persistence.Context) {
	if ctx.Message() != "go" {
		return
	}
	w.next(ctx)
}

func (w *crashWriter) next(ctx persistence.Context) {
	_ = persistence.Persist(ctx, Seq{N: ctx.LastSequenceNr() + 1}, func(ev Seq) {
		// The handler has run: the event is on disk. Report it before going on.
		fmt.Fprintln(w.out, ev.N)
		_ = w.out.Flush()
		w.next(ctx)
	})
}

// TestCrashChild is the child process: it persists events until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestSIGKILLLosesNoAcknowledgedEvent")
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	reg := serialization.NewRegistry()
	_ = serialization.Register[Seq](reg, "crash.Seq")
	sys, err := actor.New("crash", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	ref, err := sys.Spawn(persistence.Props(func() persistence.Entity {
		return &crashWriter{out: bufio.NewWriter(os.Stdout)}
	}), "writer")
	if err != nil {
		t.Fatal(err)
	}
	_ = ref.Tell("go")
	select {} // until SIGKILL
}

// A process persisting events is killed with SIGKILL mid-stream. Every event whose
// handler had run (the process reported it) is recovered, in order, and the journal
// opens without repair.
func TestSIGKILLLosesNoAcknowledgedEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	reported := uint64(0)
	for round := range 2 { // kill it twice: the second run continues the first's history
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		seen := 0
		for lines.Scan() {
			n, err := strconv.ParseUint(lines.Text(), 10, 64)
			if err != nil {
				continue // test framework output
			}
			// Within a round the reports are consecutive. A new round may start
			// higher: the killed child can have stored events it never reported.
			if (seen > 0 && n != reported+1) || (seen == 0 && n <= reported) {
				t.Fatalf("round %d: child reported %d after %d", round, n, reported)
			}
			reported = n
			if seen++; seen == 300 {
				break
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}

	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		t.Fatalf("the journal does not open after SIGKILL: %v", err)
	}
	defer func() { _ = store.Close() }()
	reg := serialization.NewRegistry()
	_ = serialization.Register[Seq](reg, "crash.Seq")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := uint64(1)
	err = store.ReplayMessages(ctx, "crash", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		ev, err := reg.Unmarshal(r.Manifest, r.Payload)
		if err != nil {
			return err
		}
		if r.SequenceNr != next || ev.(Seq).N != next {
			return fmt.Errorf("record %d holds %v, want %d", r.SequenceNr, ev, next)
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next-1 < reported {
		t.Fatalf("recovered %d events, but the child had reported %d", next-1, reported)
	}
}
