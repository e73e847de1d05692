package badgerjournal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/journaltest"
)

// testConfig keeps badger's memory small, so that the suite's parallel
// tests do not each reserve 64 MiB memtables, and turns off the value-log
// garbage collection.
func testConfig(dir string) Config {
	return Config{Dir: dir, MemTableSize: 8 << 20, ValueLogGCInterval: -1}
}

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), testConfig(dir))
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

// flipOnDisk closes nothing: the store using dir must be closed. It reads
// the stored value under key through a second badger handle, closes that,
// and flips one byte in the middle of every copy of the value in the
// directory's files (tables, value log, write-ahead log), as a failing disk
// would.
func flipOnDisk(t *testing.T, dir string, key []byte) {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil).WithReadOnly(true))
	if err != nil {
		t.Fatalf("second handle: %v", err)
	}
	var value []byte
	err = db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		value, err = item.ValueCopy(nil)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("reading the value to damage: %v", err)
	}
	found := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		changed := false
		for off := 0; ; {
			i := bytes.Index(data[off:], value)
			if i < 0 {
				break
			}
			data[off+i+len(value)/2] ^= 0x20
			off += i + len(value)
			found++
			changed = true
		}
		if changed {
			return os.WriteFile(path, data, d.Type().Perm()|0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatalf("the value of key %x is not in any file of %s", key, dir)
	}
}

func suiteOptions() journaltest.Options {
	return journaltest.Options{
		Durable: true,
		CorruptEvent: func(t *testing.T, j persistence.Journal, dir, pid string, seq uint64) persistence.Journal {
			id, _, err := j.(*Store).ids.lookup(pid, false)
			if err != nil || id == 0 {
				t.Fatalf("no id for %q: %v", pid, err)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			flipOnDisk(t, dir, appendEventKey(nil, id, seq))
			return openStore(t, dir)
		},
		CorruptSnapshot: func(t *testing.T, s persistence.SnapshotStore, dir, pid string, seq uint64) persistence.SnapshotStore {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			flipOnDisk(t, dir, appendSeqKey(nil, kindSnapshot, pid, seq))
			return openStore(t, dir)
		},
	}
}

func TestJournalConformance(t *testing.T) {
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal {
		return openStore(t, dir)
	}, suiteOptions())
}

func TestSnapshotStoreConformance(t *testing.T) {
	journaltest.RunSnapshotSuite(t, func(t *testing.T, dir string) persistence.SnapshotStore {
		return openStore(t, dir)
	}, suiteOptions())
}

func TestJournalConformanceWithoutSync(t *testing.T) {
	journaltest.RunJournalSuite(t, func(t *testing.T, dir string) persistence.Journal {
		o := testConfig(dir)
		o.Durability = NoSync
		s, err := Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, suiteOptions())
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		o  Config
		ok bool
	}{
		{Config{Dir: "x"}, true},
		{Config{Dir: "x", Durability: NoSync, MemTableSize: 1 << 20, HighestCacheSize: 1}, true},
		{Config{}, false},
		{Config{Dir: "x", Durability: 7}, false},
		{Config{Dir: "x", MemTableSize: 1000}, false},
		{Config{Dir: "x", ValueLogGCDiscardRatio: 1}, false},
		{Config{Dir: "x", ValueLogGCDiscardRatio: 0.7, ValueLogGCInterval: -1}, true},
		{Config{Dir: "x", MemTableSize: 2 << 30}, false},
		{Config{Dir: "x", HighestCacheSize: -1}, false},
	}
	for _, c := range cases {
		if err := c.o.Validate(); (err == nil) != c.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", c.o, err, c.ok)
		}
		if !c.ok {
			if _, err := Open(context.Background(), c.o); err == nil {
				t.Errorf("Open(%+v) succeeded", c.o)
			}
		}
	}
	if NoSync.String() != "NoSync" || Durability(9).String() != "Durability(9)" {
		t.Error("Durability.String")
	}
}

// TestLockedByAnotherProcess: a directory held by a live store in another
// process cannot be opened, with ErrLocked; once that process closes it,
// it can.
func TestLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHoldDir+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper process said %q, %v", line, err)
	}

	s, err := Open(context.Background(), testConfig(dir))
	if !errors.Is(err, ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open of a directory held by another process: %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not name the directory: %v", err)
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v", err)
	}
	s = openStore(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLockedInThisProcess(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	if s2, err := Open(context.Background(), testConfig(dir)); !errors.Is(err, ErrLocked) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("second Open in one process: %v, want ErrLocked", err)
	}
}

func TestOpenBadDirectories(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), testConfig(file)); err == nil {
		s.Close()
		t.Error("Open of a regular file succeeded")
	}

	garbage := filepath.Join(base, "garbage")
	if err := os.Mkdir(garbage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(garbage, badger.ManifestFilename), bytes.Repeat([]byte{0xab}, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), testConfig(garbage)); err == nil {
		s.Close()
		t.Error("Open of a directory with a garbage manifest succeeded")
	}
}

func TestIncompatibleFormat(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(txn *badger.Txn) error { return txn.Set(metaFormatKey, []byte{99}) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), testConfig(dir)); !errors.Is(err, ErrIncompatibleFormat) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of another format: %v, want ErrIncompatibleFormat", err)
	}
}

func TestBadgerLogsThroughZap(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	o := testConfig(t.TempDir())
	o.Logger = zap.New(core)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.FilterField(zap.String("component", "badger")).Len() == 0 {
		t.Error("no badger log line reached the zap logger")
	}
	for _, e := range logs.All() {
		if strings.HasSuffix(e.Message, "\n") {
			t.Errorf("log line ends with a newline: %q", e.Message)
		}
	}
}

// TestGroupCommit: writes queued while the writer is busy share one
// transaction.
func TestGroupCommit(t *testing.T) {
	// The writer is not started: the writes wait in its queue.
	s, err := openUnstarted(context.Background(), testConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const writers = 100
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := fmt.Sprintf("g-%d", g)
			results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{{PersistenceID: pid, Events: []persistence.Record{
				{PersistenceID: pid, SequenceNr: 1, Payload: []byte("x")},
			}}})
			if err == nil {
				err = results[0]
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	for {
		s.w.mu.Lock()
		n := len(s.w.queue)
		s.w.mu.Unlock()
		if n == writers {
			break
		}
		runtime.Gosched()
	}
	s.w.start()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := s.w.commits.Load(); got != 1 {
		t.Errorf("%d queued writes took %d transactions, want 1", writers, got)
	}
}

// TestTransactionLimits: writes that do not fit one badger transaction
// together are split over several, each write whole; a write that does not
// fit alone is rejected without failing the others.
func TestTransactionLimits(t *testing.T) {
	o := testConfig(t.TempDir())
	o.MemTableSize = 1 << 20 // transactions of about 150 KiB
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	mk := func(pid string, n int, size int) persistence.AtomicWrite {
		w := persistence.AtomicWrite{PersistenceID: pid}
		for i := 1; i <= n; i++ {
			w.Events = append(w.Events, persistence.Record{PersistenceID: pid, SequenceNr: uint64(i), Payload: bytes.Repeat([]byte{byte(i)}, size)})
		}
		return w
	}
	writes := []persistence.AtomicWrite{
		mk("fits-1", 400, 100),
		mk("too-big", 20000, 10),
		mk("fits-2", 400, 100),
		mk("fits-3", 400, 100),
	}
	results, err := s.WriteMessages(ctx, writes)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		if wantErr := writes[i].PersistenceID == "too-big"; wantErr != errors.Is(r, persistence.ErrTooLarge) {
			t.Errorf("write %q: %v", writes[i].PersistenceID, r)
		}
	}
	for _, w := range writes {
		var n int
		err := s.ReplayMessages(ctx, w.PersistenceID, 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
			n++
			if !bytes.Equal(r.Payload, w.Events[r.SequenceNr-1].Payload) {
				return fmt.Errorf("#%d differs", r.SequenceNr)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := len(w.Events); w.PersistenceID == "too-big" {
			if n != 0 {
				t.Errorf("%d events of the rejected write were stored", n)
			}
		} else if n != want {
			t.Errorf("%q: %d events stored, want %d", w.PersistenceID, n, want)
		}
	}
	if s.w.commits.Load() < 2 {
		t.Errorf("the writes were committed in %d transactions, want at least 2", s.w.commits.Load())
	}
}

// TestHighestCacheEvictionKeepsPackedWrites: when the cache of highest
// sequence numbers is emptied while a transaction is being packed, the
// writes already packed still count, so that a later write of the same
// persistence id in the same transaction is checked against them.
func TestHighestCacheEvictionKeepsPackedWrites(t *testing.T) {
	o := testConfig(t.TempDir())
	o.HighestCacheSize = 1
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	one := func(pid string, from, to uint64) persistence.AtomicWrite {
		w := persistence.AtomicWrite{PersistenceID: pid}
		for seq := from; seq <= to; seq++ {
			w.Events = append(w.Events, persistence.Record{PersistenceID: pid, SequenceNr: seq, Payload: []byte{byte(seq)}})
		}
		return w
	}
	results, err := s.WriteMessages(context.Background(), []persistence.AtomicWrite{
		one("a", 1, 2), one("b", 1, 1), one("a", 2, 2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if results[0] != nil || results[1] != nil || !errors.Is(results[2], persistence.ErrSequenceConflict) {
		t.Fatalf("results %v, want nil, nil, a sequence conflict", results)
	}
}

// TestLongPersistenceID: ids beyond MaxPersistenceIDLen are rejected, not
// passed to badger.
func TestLongPersistenceID(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	pid := strings.Repeat("x", MaxPersistenceIDLen+1)
	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{{PersistenceID: pid, Events: []persistence.Record{{PersistenceID: pid, SequenceNr: 1}}}})
	if err != nil || !errors.Is(results[0], persistence.ErrInvalidWrite) {
		t.Errorf("write with a long id: %v, %v", results, err)
	}
	if err := s.SaveSnapshot(ctx, persistence.Snapshot{Metadata: persistence.SnapshotMetadata{PersistenceID: pid}}); !errors.Is(err, persistence.ErrInvalidWrite) {
		t.Errorf("snapshot with a long id: %v", err)
	}
}

// TestSurvivesSIGKILL: a process writing with the default durability is
// killed mid-stream; every event it saw acknowledged is there, in order,
// when the journal is opened again, and writing continues.
func TestSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	var acked uint64
	for round := 0; round < 2; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWriteDir+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		target := acked + 300
		for sc.Scan() {
			seq, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper said %q", sc.Text())
			}
			acked = seq
			if acked >= target {
				break
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if acked < target {
			t.Fatalf("round %d: the helper stopped after %d acknowledged events", round, acked)
		}
	}

	s := openStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	next := uint64(1)
	err := s.ReplayMessages(ctx, "crash", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		if r.SequenceNr != next || string(r.Payload) != strconv.FormatUint(next, 10) {
			return fmt.Errorf("found #%d %q, want #%d", r.SequenceNr, r.Payload, next)
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next-1 < acked {
		t.Fatalf("recovered %d events, %d were acknowledged", next-1, acked)
	}
}

// TestValueLogGC: rounds of the collection over a store holding values in
// the value log keep the values that were not deleted, and Close stops the
// periodic collection (goleak checks that its goroutine is gone).
func TestValueLogGC(t *testing.T) {
	o := testConfig(t.TempDir())
	o.MemTableSize = 1 << 20 // values of 100 KiB or more go to the value log
	o.ValueLogGCInterval = time.Millisecond
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for seq := uint64(1); seq <= 5; seq++ {
		results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{{PersistenceID: "big", Events: []persistence.Record{
			{PersistenceID: "big", SequenceNr: seq, Payload: bytes.Repeat([]byte{byte(seq)}, 120<<10)},
		}}})
		if err == nil {
			err = results[0]
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteMessagesTo(ctx, "big", 4); err != nil {
		t.Fatal(err)
	}
	// Two rounds run here, on the test's goroutine, besides the periodic
	// ones, so that the test does not depend on the ticker.
	for range 2 {
		s.gc.round()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, o.Dir)
	defer s.Close()
	var got []uint64
	err = s.ReplayMessages(ctx, "big", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		got = append(got, r.SequenceNr)
		if len(r.Payload) != 120<<10 || r.Payload[0] != byte(r.SequenceNr) {
			return fmt.Errorf("#%d: payload damaged", r.SequenceNr)
		}
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != 5 {
		t.Fatalf("after garbage collection: %v, %v", got, err)
	}
}

// TestTagIndexAfterRejectedWrites: a tagged write too large for a
// transaction, and one with a tag too long, are rejected without leaving
// index entries; the offsets they would have had are not lost to later
// events, and offsets keep growing across a reopen.
func TestTagIndexAfterRejectedWrites(t *testing.T) {
	o := testConfig(t.TempDir())
	o.MemTableSize = 1 << 20 // transactions of about 150 KiB
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tagged := func(pid string, n, size int, tag string) persistence.AtomicWrite {
		w := persistence.AtomicWrite{PersistenceID: pid}
		for i := 1; i <= n; i++ {
			w.Events = append(w.Events, persistence.Record{PersistenceID: pid, SequenceNr: uint64(i), Payload: make([]byte, size), Tags: []string{tag}})
		}
		return w
	}
	results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{
		tagged("small-1", 300, 100, "t"),
		tagged("huge", 20000, 10, "t"),
		tagged("long", 1, 1, strings.Repeat("x", MaxTagLen+1)),
		tagged("small-2", 300, 100, "t"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if results[0] != nil || !errors.Is(results[1], persistence.ErrTooLarge) ||
		!errors.Is(results[2], persistence.ErrInvalidWrite) || results[3] != nil {
		t.Fatalf("results %v", results)
	}
	collect := func(s *Store) (pids map[string]int, last uint64) {
		pids = map[string]int{}
		err := s.EventsByTag(ctx, "t", 0, 0, func(tr persistence.TaggedRecord) error {
			if tr.Offset <= last {
				return fmt.Errorf("offset %d after %d", tr.Offset, last)
			}
			last = tr.Offset
			pids[tr.Record.PersistenceID]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return pids, last
	}
	pids, last := collect(s)
	if pids["small-1"] != 300 || pids["small-2"] != 300 || len(pids) != 2 {
		t.Fatalf("events by tag: %v", pids)
	}
	if last != 600 {
		t.Errorf("600 tagged events stored under offsets up to %d", last)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, o.Dir)
	defer s.Close()
	mustOK := func(w persistence.AtomicWrite) {
		t.Helper()
		results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w})
		if err == nil {
			err = results[0]
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mustOK(tagged("after", 1, 1, "t"))
	if pids, after := collect(s); after != last+1 || pids["after"] != 1 {
		t.Errorf("the event written after a reopen has offset %d, want %d", after, last+1)
	}
}

// TestOpenCanceledContext: Open with an ended context opens nothing and
// returns the context's error.
func TestOpenCanceledContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := Open(ctx, testConfig(dir)); !errors.Is(err, context.Canceled) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open with a canceled context: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Open with a canceled context created %s (%v)", dir, err)
	}
}
