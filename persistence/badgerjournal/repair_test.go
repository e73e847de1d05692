package badgerjournal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/troupe-go/troupe/persistence"
)

// writeAndClose writes events 1..n of "p" into a new database in dir and closes it.
func writeAndClose(t *testing.T, dir string, from, n uint64) {
	t.Helper()
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w := persistence.AtomicWrite{PersistenceID: "p"}
	for seq := from; seq < from+n; seq++ {
		w.Events = append(w.Events, persistence.Record{PersistenceID: "p", SequenceNr: seq, Payload: []byte("event")})
	}
	res, err := s.WriteMessages(context.Background(), []persistence.AtomicWrite{w})
	if err == nil {
		err = res[0]
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// countEvents replays "p" and checks the events are 1..n.
func countEvents(t *testing.T, s *Store, n uint64) {
	t.Helper()
	next := uint64(1)
	err := s.ReplayMessages(context.Background(), "p", 1, persistence.MaxSequenceNr, 0, func(r persistence.Record) error {
		if r.SequenceNr != next {
			t.Fatalf("event %d after %d", r.SequenceNr, next-1)
		}
		next++
		return nil
	})
	if err != nil || next-1 != n {
		t.Fatalf("replayed %d events (%v), want %d", next-1, err, n)
	}
}

// The empty log files a crash leaves (badger issue 2207) are removed at Open, with a
// warning naming them; the events are all there and the store keeps working. Badger
// used to refuse these directories.
func TestOpenRepairsEmptyLogFilesACrashLeaves(t *testing.T) {
	tests := []struct {
		name  string
		crash func(t *testing.T, dir string) string // makes the on-disk state; returns the file
	}{
		{"a new empty memtable file", func(t *testing.T, dir string) string {
			return createEmpty(t, dir, "00099.mem")
		}},
		{"a new empty value-log file", func(t *testing.T, dir string) string {
			return createEmpty(t, dir, "000099.vlog")
		}},
		{"the value-log file truncated to nothing", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "000001.vlog")
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			return path
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAndClose(t, dir, 1, 3)
			file := tc.crash(t, dir)

			core, logs := observer.New(zapcore.WarnLevel)
			s, err := Open(context.Background(), Config{Dir: dir, Logger: zap.New(core)})
			if err != nil {
				t.Fatalf("Open after a crash: %v", err)
			}
			countEvents(t, s, 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, e := range logs.All() {
				if strings.Contains(e.Message, "empty log file") && e.ContextMap()["file"] == file {
					warned = true
				}
			}
			if !warned {
				t.Fatalf("no warning naming %s: %v", file, logs.All())
			}
			// Still a working database.
			writeAndClose(t, dir, 4, 2)
			s, err = Open(context.Background(), Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			countEvents(t, s, 5)
		})
	}
}

func createEmpty(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A damaged file that may hold acknowledged events is not touched: Open fails with
// ErrDamaged, naming the file and the fix.
func TestOpenNamesADamagedFile(t *testing.T) {
	for _, name := range []string{"000001.sst", "MANIFEST"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeAndClose(t, dir, 1, 3)
			if err := os.Truncate(filepath.Join(dir, name), 0); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), Config{Dir: dir})
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Open: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, filepath.Join(dir, name)) || !strings.Contains(msg, "backup") {
				t.Fatalf("the error does not name the file and the fix: %v", err)
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() != 0 {
				t.Fatalf("the damaged file was touched: %v %v", fi, err)
			}
		})
	}
}

// explainOpenError names the file in badger's refusals (messages as badger v4 words
// them) and says what to do; errors that name no file, or are about permissions, are
// left alone.
func TestExplainOpenError(t *testing.T) {
	tests := []struct {
		err      error
		file     string // "" when not explained
		fixWords string
	}{
		{errors.New(`Opening file: "/d/000001.sst" err: invalid argument while mmapping /d/000001.sst with size: 0`), "000001.sst", "backup"},
		{errors.New("manifest has bad magic"), "MANIFEST", "backup"},
		{errors.New(`During db.vlog.open err: Open existing file: "/d/000099.vlog" err: truncated`), "000099.vlog", "move it out"},
		{errors.New("while opening memtables err: while opening fid: 7 err: While opening memtable: /d/00007.mem err: bad"), "00007.mem", "move it out"},
		{&os.PathError{Op: "open", Path: "/d/000001.vlog", Err: os.ErrPermission}, "", ""},
		{errors.New("no space left on device"), "", ""},
	}
	for _, tc := range tests {
		got := explainOpenError("/d", tc.err)
		if tc.file == "" {
			if got != nil {
				t.Errorf("%v: explained as %v", tc.err, got)
			}
			continue
		}
		if !errors.Is(got, ErrDamaged) || !strings.Contains(got.Error(), filepath.Join("/d", tc.file)) || !strings.Contains(got.Error(), tc.fixWords) {
			t.Errorf("%v: got %v", tc.err, got)
		}
	}
}
