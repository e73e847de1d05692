package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// RunSnapshotSuite runs the conformance tests for snapshot stores as
// subtests of t. Each subtest opens its own store in a fresh directory and
// closes it. The subtests run in parallel.
func RunSnapshotSuite(t *testing.T, open OpenSnapshotStore, opts Options) {
	s := &snapshotSuite{open: open, opts: opts}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"LoadByCriteria", s.testLoadByCriteria},
		{"Overwrite", s.testOverwrite},
		{"Timestamps", s.testTimestamps},
		{"DeleteOne", s.testDeleteOne},
		{"DeleteMatching", s.testDeleteMatching},
		{"PersistenceIDs", s.testPersistenceIDs},
		{"Concurrent", s.testConcurrent},
		{"LargePayload", s.testLargePayload},
		{"Reopen", s.testReopen},
		{"CorruptSnapshot", s.testCorrupt},
		{"Closed", s.testClosed},
		{"Invalid", s.testInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

type snapshotSuite struct {
	open OpenSnapshotStore
	opts Options
}

func (s *snapshotSuite) openFresh(t *testing.T) (persistence.SnapshotStore, string) {
	dir := t.TempDir()
	st := s.open(t, dir)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return st, dir
}

// epoch is the base of the suite's snapshot timestamps.
var epoch = time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)

func snapshot(pid string, seq uint64, at time.Time) persistence.Snapshot {
	return persistence.Snapshot{
		Metadata: persistence.SnapshotMetadata{PersistenceID: pid, SequenceNr: seq, Timestamp: at},
		Manifest: "journaltest.State",
		Payload:  payloadFor(pid, seq),
	}
}

func mustSave(t *testing.T, ctx context.Context, st persistence.SnapshotStore, snaps ...persistence.Snapshot) {
	t.Helper()
	for _, sn := range snaps {
		if err := st.SaveSnapshot(ctx, sn); err != nil {
			t.Fatalf("SaveSnapshot(%q #%d): %v", sn.Metadata.PersistenceID, sn.Metadata.SequenceNr, err)
		}
	}
}

// expectLoad loads with c and checks which sequence number comes back; 0
// means none.
func expectLoad(t *testing.T, ctx context.Context, st persistence.SnapshotStore, pid string, c persistence.SnapshotCriteria, want uint64) persistence.Snapshot {
	t.Helper()
	got, ok, err := st.LoadSnapshot(ctx, pid, c)
	if err != nil {
		t.Fatalf("LoadSnapshot(%q, %+v): %v", pid, c, err)
	}
	switch {
	case want == 0 && ok:
		t.Errorf("LoadSnapshot(%q, %+v) = #%d, want none", pid, c, got.Metadata.SequenceNr)
	case want != 0 && !ok:
		t.Errorf("LoadSnapshot(%q, %+v) = none, want #%d", pid, c, want)
	case want != 0 && got.Metadata.SequenceNr != want:
		t.Errorf("LoadSnapshot(%q, %+v) = #%d, want #%d", pid, c, got.Metadata.SequenceNr, want)
	case ok && (got.Metadata.PersistenceID != pid || !bytes.Equal(got.Payload, payloadFor(pid, got.Metadata.SequenceNr))):
		t.Errorf("LoadSnapshot(%q) returned %q with payload %q", pid, got.Metadata.PersistenceID, got.Payload)
	}
	return got
}

func (s *snapshotSuite) testLoadByCriteria(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	const pid = "criteria"
	mustSave(t, ctx, st,
		snapshot(pid, 10, epoch.Add(time.Minute)),
		snapshot(pid, 5, epoch),
		snapshot(pid, 15, epoch.Add(2*time.Minute)),
	)
	got := expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, 15)
	if got.Manifest != "journaltest.State" || !got.Metadata.Timestamp.Equal(epoch.Add(2*time.Minute)) {
		t.Errorf("latest snapshot came back as %+v", got)
	}
	cases := []struct {
		c    persistence.SnapshotCriteria
		want uint64
	}{
		{persistence.SnapshotCriteria{MaxSequenceNr: 15}, 15},
		{persistence.SnapshotCriteria{MaxSequenceNr: 14}, 10},
		{persistence.SnapshotCriteria{MaxSequenceNr: 10}, 10},
		{persistence.SnapshotCriteria{MaxSequenceNr: 4}, 0},
		{persistence.SnapshotCriteria{MaxTimestamp: epoch.Add(90 * time.Second)}, 10},
		{persistence.SnapshotCriteria{MaxTimestamp: epoch}, 5},
		{persistence.SnapshotCriteria{MaxTimestamp: epoch.Add(-time.Nanosecond)}, 0},
		{persistence.SnapshotCriteria{MinSequenceNr: 6, MaxSequenceNr: 14}, 10},
		{persistence.SnapshotCriteria{MinSequenceNr: 16}, 0},
		{persistence.SnapshotCriteria{MinTimestamp: epoch.Add(time.Minute), MaxTimestamp: epoch.Add(time.Minute)}, 10},
		{persistence.SnapshotCriteria{MinTimestamp: epoch.Add(3 * time.Minute)}, 0},
		{persistence.SnapshotCriteria{MaxSequenceNr: 14, MaxTimestamp: epoch.Add(30 * time.Second)}, 5},
	}
	for _, c := range cases {
		expectLoad(t, ctx, st, pid, c.c, c.want)
	}
	expectLoad(t, ctx, st, "unknown", persistence.SnapshotCriteria{}, 0)
}

func (s *snapshotSuite) testOverwrite(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	first := snapshot("over", 7, epoch)
	second := snapshot("over", 7, epoch.Add(time.Hour))
	second.Manifest = "journaltest.State.v2"
	mustSave(t, ctx, st, first, second)
	got := expectLoad(t, ctx, st, "over", persistence.SnapshotCriteria{}, 7)
	if got.Manifest != second.Manifest || !got.Metadata.Timestamp.Equal(second.Metadata.Timestamp) {
		t.Errorf("after overwriting, loaded %+v", got)
	}
}

func (s *snapshotSuite) testTimestamps(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	before := time.Now()
	mustSave(t, ctx, st, snapshot("stamp", 1, time.Time{}))
	after := time.Now()
	got := expectLoad(t, ctx, st, "stamp", persistence.SnapshotCriteria{}, 1)
	if ts := got.Metadata.Timestamp; ts.Before(before.Add(-time.Second)) || ts.After(after.Add(time.Second)) {
		t.Errorf("snapshot saved without a timestamp was stamped %v, saved between %v and %v", ts, before, after)
	}
	// A precise timestamp comes back to the nanosecond.
	precise := time.Date(2030, 6, 7, 8, 9, 10, 999999999, time.FixedZone("x", 3600))
	mustSave(t, ctx, st, snapshot("stamp", 2, precise))
	got = expectLoad(t, ctx, st, "stamp", persistence.SnapshotCriteria{}, 2)
	if !got.Metadata.Timestamp.Equal(precise) {
		t.Errorf("timestamp %v came back as %v", precise, got.Metadata.Timestamp)
	}
}

func (s *snapshotSuite) testDeleteOne(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	const pid = "delete-one"
	mustSave(t, ctx, st, snapshot(pid, 5, epoch), snapshot(pid, 10, epoch.Add(time.Minute)), snapshot(pid, 15, epoch.Add(2*time.Minute)))

	if err := st.DeleteSnapshot(ctx, persistence.SnapshotMetadata{PersistenceID: pid, SequenceNr: 15}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, 10)
	// A timestamp that does not match protects the snapshot.
	if err := st.DeleteSnapshot(ctx, persistence.SnapshotMetadata{PersistenceID: pid, SequenceNr: 10, Timestamp: epoch}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, 10)
	if err := st.DeleteSnapshot(ctx, persistence.SnapshotMetadata{PersistenceID: pid, SequenceNr: 10, Timestamp: epoch.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, 5)
	// Deleting what does not exist succeeds.
	for _, m := range []persistence.SnapshotMetadata{{PersistenceID: pid, SequenceNr: 10}, {PersistenceID: "none", SequenceNr: 1}} {
		if err := st.DeleteSnapshot(ctx, m); err != nil {
			t.Errorf("DeleteSnapshot(%+v): %v", m, err)
		}
	}
}

func (s *snapshotSuite) testDeleteMatching(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	for seq := uint64(1); seq <= 6; seq++ {
		at := epoch.Add(time.Duration(seq) * time.Minute)
		mustSave(t, ctx, st, snapshot("many", seq, at), snapshot("many-other", seq, at))
	}
	if err := st.DeleteSnapshots(ctx, "many", persistence.SnapshotCriteria{MaxSequenceNr: 3}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, "many", persistence.SnapshotCriteria{MaxSequenceNr: 3}, 0)
	expectLoad(t, ctx, st, "many", persistence.SnapshotCriteria{}, 6)
	if err := st.DeleteSnapshots(ctx, "many", persistence.SnapshotCriteria{MinTimestamp: epoch.Add(6 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, "many", persistence.SnapshotCriteria{}, 5)
	if err := st.DeleteSnapshots(ctx, "many", persistence.SnapshotCriteria{}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, "many", persistence.SnapshotCriteria{}, 0)
	expectLoad(t, ctx, st, "many-other", persistence.SnapshotCriteria{}, 6)
	expectLoad(t, ctx, st, "many-other", persistence.SnapshotCriteria{MaxSequenceNr: 1}, 1)
	if err := st.DeleteSnapshots(ctx, "none", persistence.SnapshotCriteria{}); err != nil {
		t.Errorf("DeleteSnapshots of an unknown id: %v", err)
	}
}

func (s *snapshotSuite) testPersistenceIDs(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	for i, pid := range peculiarIDs {
		mustSave(t, ctx, st, snapshot(pid, uint64(i+1), epoch))
	}
	for i, pid := range peculiarIDs {
		expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, uint64(i+1))
	}
	if err := st.DeleteSnapshots(ctx, "p", persistence.SnapshotCriteria{}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, "p", persistence.SnapshotCriteria{}, 0)
	for i, pid := range peculiarIDs[1:] {
		expectLoad(t, ctx, st, pid, persistence.SnapshotCriteria{}, uint64(i+2))
	}
}

func (s *snapshotSuite) testConcurrent(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	n := s.opts.writers()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := fmt.Sprintf("saver-%d", g)
			for seq := uint64(1); seq <= 5; seq++ {
				if err := st.SaveSnapshot(ctx, snapshot(pid, seq, epoch)); err != nil {
					errs <- fmt.Errorf("%s #%d: %w", pid, seq, err)
					return
				}
				got, ok, err := st.LoadSnapshot(ctx, pid, persistence.SnapshotCriteria{})
				if err == nil && (!ok || got.Metadata.SequenceNr != seq) {
					err = fmt.Errorf("loaded %v #%d right after saving #%d", ok, got.Metadata.SequenceNr, seq)
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", pid, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (s *snapshotSuite) testLargePayload(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	big := snapshot("large", 1, epoch)
	big.Payload = randomBytes(s.opts.largePayload(), 7)
	mustSave(t, ctx, st, big)
	got, ok, err := st.LoadSnapshot(ctx, "large", persistence.SnapshotCriteria{})
	if err != nil || !ok {
		t.Fatalf("LoadSnapshot: %v, %v", ok, err)
	}
	if !bytes.Equal(got.Payload, big.Payload) {
		t.Errorf("payload of %d bytes changed", len(big.Payload))
	}
}

func (s *snapshotSuite) testReopen(t *testing.T) {
	if !s.opts.Durable {
		t.Skip("the plug-in is not durable")
	}
	ctx := s.opts.context(t)
	dir := t.TempDir()
	st := s.open(t, dir)
	mustSave(t, ctx, st, snapshot("kept", 1, epoch), snapshot("kept", 2, epoch.Add(time.Second)), snapshot("gone", 1, epoch))
	if err := st.DeleteSnapshots(ctx, "gone", persistence.SnapshotCriteria{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	st = s.open(t, dir)
	defer st.Close()
	got := expectLoad(t, ctx, st, "kept", persistence.SnapshotCriteria{}, 2)
	if !got.Metadata.Timestamp.Equal(epoch.Add(time.Second)) {
		t.Errorf("timestamp after reopen: %v", got.Metadata.Timestamp)
	}
	expectLoad(t, ctx, st, "gone", persistence.SnapshotCriteria{}, 0)
}

func (s *snapshotSuite) testCorrupt(t *testing.T) {
	if s.opts.CorruptSnapshot == nil {
		t.Fatal("Options.CorruptSnapshot is nil: every plug-in must show that it detects corrupt records")
	}
	ctx := s.opts.context(t)
	dir := t.TempDir()
	st := s.open(t, dir)
	defer func() { st.Close() }()
	mustSave(t, ctx, st, snapshot("victim", 1, epoch), snapshot("victim", 2, epoch), snapshot("bystander", 2, epoch))

	st = s.opts.CorruptSnapshot(t, st, dir, "victim", 2)

	_, _, err := st.LoadSnapshot(ctx, "victim", persistence.SnapshotCriteria{})
	var corrupt *persistence.CorruptRecordError
	if !errors.As(err, &corrupt) || !errors.Is(err, persistence.ErrCorrupt) {
		t.Fatalf("loading a corrupt snapshot returned %v, want a *CorruptRecordError", err)
	}
	if corrupt.PersistenceID != "victim" || corrupt.SequenceNr != 2 || !corrupt.Snapshot {
		t.Errorf("the error names %q #%d (snapshot %v), want snapshot \"victim\" #2", corrupt.PersistenceID, corrupt.SequenceNr, corrupt.Snapshot)
	}
	expectLoad(t, ctx, st, "victim", persistence.SnapshotCriteria{MaxSequenceNr: 1}, 1)
	expectLoad(t, ctx, st, "bystander", persistence.SnapshotCriteria{}, 2)
	// Deleting the damaged snapshot recovers the older one.
	if err := st.DeleteSnapshot(ctx, persistence.SnapshotMetadata{PersistenceID: "victim", SequenceNr: 2}); err != nil {
		t.Fatal(err)
	}
	expectLoad(t, ctx, st, "victim", persistence.SnapshotCriteria{}, 1)
}

func (s *snapshotSuite) testClosed(t *testing.T) {
	ctx := s.opts.context(t)
	st := s.open(t, t.TempDir())
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.SaveSnapshot(ctx, snapshot("closed", 1, epoch)); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("SaveSnapshot after Close: %v", err)
	}
	if _, _, err := st.LoadSnapshot(ctx, "closed", persistence.SnapshotCriteria{}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("LoadSnapshot after Close: %v", err)
	}
	if err := st.DeleteSnapshot(ctx, persistence.SnapshotMetadata{PersistenceID: "closed", SequenceNr: 1}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("DeleteSnapshot after Close: %v", err)
	}
	if err := st.DeleteSnapshots(ctx, "closed", persistence.SnapshotCriteria{}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("DeleteSnapshots after Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func (s *snapshotSuite) testInvalid(t *testing.T) {
	ctx := s.opts.context(t)
	st, _ := s.openFresh(t)
	if err := st.SaveSnapshot(ctx, snapshot("", 1, epoch)); !errors.Is(err, persistence.ErrInvalidWrite) {
		t.Errorf("SaveSnapshot with an empty persistence id: %v, want ErrInvalidWrite", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := st.SaveSnapshot(cancelled, snapshot("ctx", 1, epoch)); !errors.Is(err, context.Canceled) {
		t.Errorf("SaveSnapshot with a cancelled context: %v", err)
	}
	expectLoad(t, ctx, st, "ctx", persistence.SnapshotCriteria{}, 0)
}
