package memjournal

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// Store is an in-memory persistence.Journal and persistence.SnapshotStore.
// It is safe for concurrent use. Its zero value is not usable; call New.
type Store struct {
	mu        sync.RWMutex
	closed    bool
	writeErr  error
	streams   map[string]*stream
	snapshots map[string]map[uint64]*storedSnapshot
	tags      map[string][]tagRef // per tag, ascending offsets
	offset    uint64              // the offset of the last tagged event
}

// tagRef is an entry of the tag index.
type tagRef struct {
	offset uint64
	pid    string
	seq    uint64
}

var (
	_ persistence.Journal       = (*Store)(nil)
	_ persistence.SnapshotStore = (*Store)(nil)
	_ persistence.TagQuerier    = (*Store)(nil)
)

// stream holds the events of one persistence id.
type stream struct {
	events  []storedRecord // ascending sequence numbers; deleted ones removed
	highest uint64         // survives deletes
}

type storedRecord struct {
	rec persistence.Record
	sum uint32
}

type storedSnapshot struct {
	snap persistence.Snapshot
	sum  uint32
}

// New returns an empty store.
func New() *Store {
	return &Store{
		streams:   map[string]*stream{},
		snapshots: map[string]map[uint64]*storedSnapshot{},
		tags:      map[string][]tagRef{},
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WriteMessages implements persistence.Journal. The whole call is applied
// under one lock, so it is atomic as a whole, and each write is checked and
// stored on its own. A write whose first sequence number is not above the
// highest, and every later write of its persistence id in the call, fail
// with persistence.ErrSequenceConflict.
func (s *Store) WriteMessages(ctx context.Context, writes []persistence.AtomicWrite) ([]error, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if s.writeErr != nil {
		return nil, s.writeErr
	}
	now := time.Now()
	results := make([]error, len(writes))
	var conflicted []string // persistence ids with a conflict in this call
	for i, w := range writes {
		if err := w.Validate(); err != nil {
			results[i] = err
			continue
		}
		if len(conflicted) > 0 && slices.Contains(conflicted, w.PersistenceID) {
			results[i] = fmt.Errorf("%w: %q: sequence number %d follows a conflict in the same call",
				persistence.ErrSequenceConflict, w.PersistenceID, w.Events[0].SequenceNr)
			continue
		}
		st := s.streams[w.PersistenceID]
		if st == nil {
			st = &stream{}
			s.streams[w.PersistenceID] = st
		}
		if first := w.Events[0].SequenceNr; first <= st.highest {
			results[i] = fmt.Errorf("%w: %q: sequence number %d, highest is %d",
				persistence.ErrSequenceConflict, w.PersistenceID, first, st.highest)
			conflicted = append(conflicted, w.PersistenceID)
			continue
		}
		for _, e := range w.Events {
			rec := cloneRecord(e)
			if rec.Timestamp.IsZero() {
				rec.Timestamp = now
			}
			rec.Timestamp = time.Unix(0, rec.Timestamp.UnixNano())
			st.events = append(st.events, storedRecord{rec: rec, sum: recordSum(rec)})
			if len(rec.Tags) > 0 {
				s.offset++
				for _, tag := range rec.Tags {
					s.tags[tag] = append(s.tags[tag], tagRef{offset: s.offset, pid: rec.PersistenceID, seq: rec.SequenceNr})
				}
			}
		}
		st.highest = w.Events[len(w.Events)-1].SequenceNr
	}
	return results, nil
}

// ReplayMessages implements persistence.Journal. fn runs without any lock
// held, on copies of the stored records.
func (s *Store) ReplayMessages(ctx context.Context, persistenceID string, fromSeq, toSeq, max uint64, fn func(persistence.Record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fromSeq = max1(fromSeq)
	var selected []storedRecord
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return persistence.ErrClosed
	}
	if st := s.streams[persistenceID]; st != nil && fromSeq <= toSeq {
		start, _ := slices.BinarySearchFunc(st.events, fromSeq, func(r storedRecord, seq uint64) int {
			return cmpSeq(r.rec.SequenceNr, seq)
		})
		for _, r := range st.events[start:] {
			if r.rec.SequenceNr > toSeq || (max != 0 && uint64(len(selected)) == max) {
				break
			}
			selected = append(selected, r)
		}
	}
	s.mu.RUnlock()

	for _, r := range selected {
		if err := ctx.Err(); err != nil {
			return err
		}
		if recordSum(r.rec) != r.sum {
			return &persistence.CorruptRecordError{
				PersistenceID: r.rec.PersistenceID, SequenceNr: r.rec.SequenceNr, Reason: "checksum mismatch"}
		}
		if err := fn(cloneRecord(r.rec)); err != nil {
			return err
		}
	}
	return nil
}

// EventsByTag implements persistence.TagQuerier. fn runs without any lock
// held, on copies of the stored records.
func (s *Store) EventsByTag(ctx context.Context, tag string, fromOffset, max uint64, fn func(persistence.TaggedRecord) error) error {
	if err := s.rlock(ctx); err != nil {
		return err
	}
	refs := s.tags[tag]
	start, _ := slices.BinarySearchFunc(refs, fromOffset, func(r tagRef, off uint64) int {
		return cmpSeq(r.offset, off)
	})
	var selected []persistence.TaggedRecord
	var sums []uint32
	for _, ref := range refs[start:] {
		if max != 0 && uint64(len(selected)) == max {
			break
		}
		st := s.streams[ref.pid]
		i, found := slices.BinarySearchFunc(st.events, ref.seq, func(r storedRecord, seq uint64) int {
			return cmpSeq(r.rec.SequenceNr, seq)
		})
		if !found {
			continue // deleted
		}
		selected = append(selected, persistence.TaggedRecord{Offset: ref.offset, Record: st.events[i].rec})
		sums = append(sums, st.events[i].sum)
	}
	s.mu.RUnlock()

	for i, tr := range selected {
		if err := ctx.Err(); err != nil {
			return err
		}
		if recordSum(tr.Record) != sums[i] {
			return &persistence.CorruptRecordError{
				PersistenceID: tr.Record.PersistenceID, SequenceNr: tr.Record.SequenceNr, Reason: "checksum mismatch"}
		}
		tr.Record = cloneRecord(tr.Record)
		if err := fn(tr); err != nil {
			return err
		}
	}
	return nil
}

// HighestSequenceNr implements persistence.Journal.
func (s *Store) HighestSequenceNr(ctx context.Context, persistenceID string) (uint64, error) {
	if err := s.rlock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if st := s.streams[persistenceID]; st != nil {
		return st.highest, nil
	}
	return 0, nil
}

// DeleteMessagesTo implements persistence.Journal.
func (s *Store) DeleteMessagesTo(ctx context.Context, persistenceID string, toSeq uint64) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	st := s.streams[persistenceID]
	var highest uint64
	if st != nil {
		highest = st.highest
	}
	if toSeq > highest {
		return fmt.Errorf("%w: %q: delete to %d, highest is %d",
			persistence.ErrBeyondHighest, persistenceID, toSeq, highest)
	}
	if st == nil {
		return nil
	}
	n, _ := slices.BinarySearchFunc(st.events, toSeq+1, func(r storedRecord, seq uint64) int {
		return cmpSeq(r.rec.SequenceNr, seq)
	})
	st.events = slices.Clone(st.events[n:])
	return nil
}

// SaveSnapshot implements persistence.SnapshotStore.
func (s *Store) SaveSnapshot(ctx context.Context, snap persistence.Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if snap.Metadata.PersistenceID == "" {
		return fmt.Errorf("%w: snapshot with an empty persistence id", persistence.ErrInvalidWrite)
	}
	snap = cloneSnapshot(snap)
	if snap.Metadata.Timestamp.IsZero() {
		snap.Metadata.Timestamp = time.Now()
	}
	snap.Metadata.Timestamp = time.Unix(0, snap.Metadata.Timestamp.UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persistence.ErrClosed
	}
	m := s.snapshots[snap.Metadata.PersistenceID]
	if m == nil {
		m = map[uint64]*storedSnapshot{}
		s.snapshots[snap.Metadata.PersistenceID] = m
	}
	m[snap.Metadata.SequenceNr] = &storedSnapshot{snap: snap, sum: snapshotSum(snap)}
	return nil
}

// LoadSnapshot implements persistence.SnapshotStore.
func (s *Store) LoadSnapshot(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) (persistence.Snapshot, bool, error) {
	if err := s.rlock(ctx); err != nil {
		return persistence.Snapshot{}, false, err
	}
	defer s.mu.RUnlock()
	var best *storedSnapshot
	for _, ss := range s.snapshots[persistenceID] {
		if c.Matches(ss.snap.Metadata) && (best == nil || ss.snap.Metadata.SequenceNr > best.snap.Metadata.SequenceNr) {
			best = ss
		}
	}
	if best == nil {
		return persistence.Snapshot{}, false, nil
	}
	if snapshotSum(best.snap) != best.sum {
		return persistence.Snapshot{}, false, &persistence.CorruptRecordError{
			PersistenceID: persistenceID, SequenceNr: best.snap.Metadata.SequenceNr,
			Snapshot: true, Reason: "checksum mismatch"}
	}
	return cloneSnapshot(best.snap), true, nil
}

// DeleteSnapshot implements persistence.SnapshotStore.
func (s *Store) DeleteSnapshot(ctx context.Context, m persistence.SnapshotMetadata) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	snaps := s.snapshots[m.PersistenceID]
	if ss, ok := snaps[m.SequenceNr]; ok {
		if m.Timestamp.IsZero() || m.Timestamp.Equal(ss.snap.Metadata.Timestamp) {
			delete(snaps, m.SequenceNr)
		}
	}
	return nil
}

// DeleteSnapshots implements persistence.SnapshotStore.
func (s *Store) DeleteSnapshots(ctx context.Context, persistenceID string, c persistence.SnapshotCriteria) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	snaps := s.snapshots[persistenceID]
	for seq, ss := range snaps {
		if c.Matches(ss.snap.Metadata) {
			delete(snaps, seq)
		}
	}
	return nil
}

// lock takes the store's lock for a call, unless ctx is done or the store is closed;
// on success the caller must unlock s.mu.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return persistence.ErrClosed
	}
	return nil
}

// rlock is lock for readers; on success the caller must s.mu.RUnlock.
func (s *Store) rlock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return persistence.ErrClosed
	}
	return nil
}

// Close implements persistence.Journal and persistence.SnapshotStore: it
// drops all data. Calling it again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.streams = nil
	s.snapshots = nil
	s.tags = nil
	return nil
}

// InjectWriteFailure makes every following WriteMessages call fail as a
// whole with err, writing nothing, until it is called again with nil. Tests
// use it to exercise how an entity reacts to a journal failure.
func (s *Store) InjectWriteFailure(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeErr = err
}

// CorruptEvent damages the stored event of persistenceID with sequence
// number seq without updating its checksum, as a flipped bit on a disk
// would, so that replaying it fails with a *persistence.CorruptRecordError.
// It reports an error when there is no such event.
func (s *Store) CorruptEvent(persistenceID string, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persistence.ErrClosed
	}
	if st := s.streams[persistenceID]; st != nil {
		for i := range st.events {
			if r := &st.events[i]; r.rec.SequenceNr == seq {
				if len(r.rec.Payload) == 0 {
					r.sum ^= 1
				} else {
					r.rec.Payload = slices.Clone(r.rec.Payload)
					r.rec.Payload[len(r.rec.Payload)/2] ^= 0x01
				}
				return nil
			}
		}
	}
	return fmt.Errorf("memjournal: no event %q #%d", persistenceID, seq)
}

// CorruptSnapshot damages the stored snapshot of persistenceID at sequence
// number seq without updating its checksum, so that loading it fails with a
// *persistence.CorruptRecordError. It reports an error when there is no
// such snapshot.
func (s *Store) CorruptSnapshot(persistenceID string, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return persistence.ErrClosed
	}
	ss, ok := s.snapshots[persistenceID][seq]
	if !ok {
		return fmt.Errorf("memjournal: no snapshot %q #%d", persistenceID, seq)
	}
	if len(ss.snap.Payload) == 0 {
		ss.sum ^= 1
	} else {
		ss.snap.Payload = slices.Clone(ss.snap.Payload)
		ss.snap.Payload[len(ss.snap.Payload)/2] ^= 0x01
	}
	return nil
}

func cloneRecord(r persistence.Record) persistence.Record {
	r.Payload = slices.Clone(r.Payload)
	r.Tags = slices.Clone(r.Tags)
	return r
}

func cloneSnapshot(s persistence.Snapshot) persistence.Snapshot {
	s.Payload = slices.Clone(s.Payload)
	return s
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func max1(seq uint64) uint64 {
	if seq == 0 {
		return 1
	}
	return seq
}

// recordSum is a CRC-32C over every field of r.
func recordSum(r persistence.Record) uint32 {
	h := crc32.New(castagnoli)
	writeString(h, r.PersistenceID)
	writeUint(h, r.SequenceNr)
	writeString(h, r.Manifest)
	writeBytes(h, r.Payload)
	writeUint(h, uint64(len(r.Tags)))
	for _, t := range r.Tags {
		writeString(h, t)
	}
	writeUint(h, uint64(r.Timestamp.UnixNano()))
	writeString(h, r.WriterID)
	return h.Sum32()
}

// snapshotSum is a CRC-32C over every field of s.
func snapshotSum(s persistence.Snapshot) uint32 {
	h := crc32.New(castagnoli)
	writeString(h, s.Metadata.PersistenceID)
	writeUint(h, s.Metadata.SequenceNr)
	writeUint(h, uint64(s.Metadata.Timestamp.UnixNano()))
	writeString(h, s.Manifest)
	writeBytes(h, s.Payload)
	return h.Sum32()
}

func writeUint(h hash.Hash32, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	h.Write(b[:])
}

func writeString(h hash.Hash32, s string) {
	writeBytes(h, []byte(s))
}

func writeBytes(h hash.Hash32, b []byte) {
	writeUint(h, uint64(len(b)))
	h.Write(b)
}
