package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/persistence"
)

// Group commit.
//
// WriteMessages validates its atomic writes and copies them, with their
// checksums, into one buffer on the caller's goroutine, queues them as one
// request and waits. A writer goroutine takes everything queued (up to
// Config.MaxBatchBytes) as one batch and hands it to a commit goroutine, up
// to Config.WriteConcurrency at once; while they run, new requests queue up
// for the next batch, so the batch size follows the load.
//
// A batch is one transaction, sent as a pipeline of statements, so it
// costs one commit and, on the fast path below, one round trip. The
// writers of a batch are answered only after the commit, when PostgreSQL
// has flushed it as its synchronous_commit setting says (by default to
// disk).
//
// A write is rejected, with persistence.ErrSequenceConflict and nothing
// stored, when its persistence id already has an event at or above the
// write's first sequence number, or a higher sequence number that a delete
// kept in troupe_persistence_id, and so is every later write of that
// persistence id in the same WriteMessages call (the careful path removes
// what its statements inserted for them, with unwriteSQL, before it
// commits); a rejected write does not affect the other writes of the
// batch. Nothing in the write path locks or updates a row per persistence
// id: schema version 1 advanced such a row in every write, with the rows
// locked in order first, and that held the store to about a third of what
// PostgreSQL inserts. That row is now written by deletes, and by the rare
// write that leaves a gap below it (see verifySQL).
//
// The fast path serves a batch that writes each persistence id once, on
// its first run: plain inserts of every write's events and their tag index
// rows, then verifySQL, all in one transaction and one round trip. A batch
// of fewer than copyMinEvents events goes as INSERT statements (unnest,
// encoded by wire.go) in one implicit transaction; a larger one as BEGIN,
// COPY (copyrows.go), the rest and COMMIT, as PostgreSQL stores rows from
// COPY faster (see plan.copied). A write is checked by the primary key
// (another writer's event at the same sequence number) and by verifySQL,
// which looks, after the inserts, for a higher sequence number kept by a
// delete or by a write that left a gap and, unless the write follows this
// store's own last write of the persistence id (see lastWritten), for an
// event above the write. verifySQL raises an error when it finds one,
// which rolls back the whole transaction; it also records the gap a write
// leaves below it, if any.
//
// The careful path serves the rest: batches that write some persistence id
// twice (its writes go to successive statements, "rounds", in call order,
// each of which sees what the ones before it inserted), and any batch run
// again. Each statement (writeSQL) looks up every write of its chunk, from
// the same view, inserts the events of the writes it accepts and returns
// the ones it rejects. That view may be older than a delete that commits
// while the statement runs, so once the results are in, verifySQL checks
// the writes stored, and only then does the transaction commit: two round
// trips, where the fast path takes one.
//
// Two writers of one persistence id (two nodes after a split brain) both
// recovered the same history, so both write the same next sequence number.
// Whichever commits first stores it. The second is rejected by a lookup
// when the first committed before the second's statement began; else its
// insert waits for the first transaction and fails with a unique violation
// once that commits. Such a failure, a deadlock (two transactions met on
// several keys in different orders; rounds are sorted by persistence id,
// which leaves only cycles across chunks) and verifySQL's error all roll
// the batch back whole, nothing of it stored, and the store runs it again
// on the careful path, where the lookups reject the writes that lost,
// alone.
//
// Tag offsets: a batch with tagged events reserves as many offsets as it
// has tagged events on the one row of troupe_tag_counter, before it stores
// their tag index rows, and holds that row's lock until it commits; transactions with tagged events therefore
// commit in the order of their offsets, and a reader never sees an offset
// appear below one it has already read.

// Bounds of one statement: large batches are split into several statements
// of the same transaction.
const (
	maxChunkBytes  = 4 << 20
	maxChunkEvents = 8192
)

// writeRequest is one WriteMessages call waiting for the group commit.
type writeRequest struct {
	ctx     context.Context
	writes  []pendingWrite
	results []error // one per atomic write of the call
	size    int     // bytes of the writes, for the batch bound
	done    chan struct{}
	err     error // a failure of the call as a whole, set before done closes
}

// pendingWrite is one valid atomic write, encoded. Its byte slices point
// into one buffer of the request.
type pendingWrite struct {
	result      *error // the write's entry in its request's results
	pid         []byte
	pidKey      string // pid, as a map key
	first, last int64
	size        int
	events      []pendingEvent
	follows     bool // first is the next number after this store's last write of pid (set by buildPlan)
	// prev is the write of pid before this one in the same WriteMessages
	// call and batch, if any (set by buildPlan); lost, set by the careful
	// path, says that this write is not stored.
	prev *pendingWrite
	lost bool
}

type pendingEvent struct {
	seq, ts                         int64
	manifest, writer, tags, payload []byte // tags nil when untagged
	checksum                        int32
	tagSet                          [][]byte // the distinct tags, for the index
	tagN                            int64    // the event's number among the batch's tagged events, from 1
}

// encodeWrite validates aw and copies it into a pendingWrite.
func (s *Store) encodeWrite(aw *persistence.AtomicWrite, now int64) (pendingWrite, error) {
	if err := aw.Validate(); err != nil {
		return pendingWrite{}, err
	}
	pid := aw.PersistenceID
	if len(pid) > MaxPersistenceIDLen {
		return pendingWrite{}, fmt.Errorf("%w: persistence id of %d bytes, at most %d",
			persistence.ErrInvalidWrite, len(pid), MaxPersistenceIDLen)
	}
	last := aw.Events[len(aw.Events)-1].SequenceNr
	if !fitsInt64(last) {
		return pendingWrite{}, fmt.Errorf("%w: %q: sequence number %d is above %d, PostgreSQL's bigint",
			persistence.ErrInvalidWrite, pid, last, int64(^uint64(0)>>1))
	}
	size := len(pid)
	for k := range aw.Events {
		e := &aw.Events[k]
		size += 64 + len(e.Manifest) + len(e.WriterID) + len(e.Payload)
		for _, tag := range e.Tags {
			if len(tag) > MaxTagLen {
				return pendingWrite{}, fmt.Errorf("%w: %q #%d: tag of %d bytes, at most %d",
					persistence.ErrInvalidWrite, pid, e.SequenceNr, len(tag), MaxTagLen)
			}
			size += 2*len(tag) + 2*4
		}
	}
	if size > s.cfg.MaxWriteBytes {
		return pendingWrite{}, fmt.Errorf("%w: %q: %d events of about %d bytes, at most %d (Config.MaxWriteBytes)",
			persistence.ErrTooLarge, pid, len(aw.Events), size, s.cfg.MaxWriteBytes)
	}
	buf := make([]byte, 0, size)
	take := func(b []byte) []byte {
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	w := pendingWrite{
		pid:    take([]byte(pid)),
		pidKey: pid,
		first:  int64(aw.Events[0].SequenceNr),
		last:   int64(last),
		size:   size,
		events: make([]pendingEvent, len(aw.Events)),
	}
	sums := checksummer{buf: make([]byte, 0, 128)}
	start := sums.pid(pid)
	for k := range aw.Events {
		e := &aw.Events[k]
		pe := &w.events[k]
		pe.seq = int64(e.SequenceNr)
		pe.ts = unixNanos(e.Timestamp, now)
		pe.manifest = take([]byte(e.Manifest))
		pe.writer = take([]byte(e.WriterID))
		pe.payload = take(e.Payload)
		if len(e.Tags) > 0 {
			at := len(buf)
			buf = appendTags(buf, e.Tags)
			pe.tags = buf[at:len(buf):len(buf)]
			for i, tag := range e.Tags {
				if !slices.Contains(e.Tags[:i], tag) {
					pe.tagSet = append(pe.tagSet, take([]byte(tag)))
				}
			}
		}
		pe.checksum = sums.event(start, e.SequenceNr, pe.ts, pe.manifest, pe.writer, pe.tags, pe.payload)
	}
	return w, nil
}

// WriteMessages implements persistence.Journal with group commit: see the
// package documentation. A write whose first sequence number is not above
// the highest stored for its persistence id, by this store or any other on
// the same database, is rejected with persistence.ErrSequenceConflict (two
// writes that race, from two stores, are caught by the primary key: see the
// package documentation). When
// the group commit fails as a whole (the connection broke, the server
// stopped, Config.WriteTimeout passed) every writer in it gets the error,
// wrapping ErrUnavailable for a connection problem, and the outcome is
// unknown.
func (s *Store) WriteMessages(ctx context.Context, writes []persistence.AtomicWrite) ([]error, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.leave()
	results := make([]error, len(writes))
	req := &writeRequest{ctx: ctx, results: results, done: make(chan struct{})}
	now := time.Now().UnixNano()
	for i := range writes {
		w, err := s.encodeWrite(&writes[i], now)
		if err != nil {
			results[i] = err
			continue
		}
		w.result = &results[i]
		req.size += w.size
		req.writes = append(req.writes, w)
	}
	if len(req.writes) == 0 {
		return results, nil
	}
	if err := s.w.enqueue(req); err != nil {
		return nil, err
	}
	select {
	case <-req.done:
	case <-ctx.Done():
		// The batch may still commit the writes: the outcome is unknown.
		return nil, fmt.Errorf("pgjournal: write abandoned, outcome unknown: %w", ctx.Err())
	}
	if req.err != nil {
		return nil, req.err
	}
	return results, nil
}

// writer owns the group-commit goroutine.
type writer struct {
	s *Store

	mu             sync.Mutex
	queue          []*writeRequest
	queuedWrites   int // atomic writes in the queue
	inflight       int // commits in flight
	inflightWrites int // atomic writes in them
	stopped        bool
	wake           chan struct{} // capacity 1: "the queue may be non-empty, or stop"
	done           chan struct{} // closed when the goroutine has returned

	slots   chan struct{} // a token per commit in flight
	commits sync.WaitGroup
	last    *lastWritten
}

// lastWrittenLimit bounds the persistence ids a writer remembers the last
// sequence number of.
const lastWrittenLimit = 1 << 16

func startWriter(s *Store) *writer {
	w := &writer{
		s:     s,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		slots: make(chan struct{}, s.cfg.WriteConcurrency),
		last:  newLastWritten(lastWrittenLimit),
	}
	go w.run()
	return w
}

// enqueue hands a request to the writer.
func (w *writer) enqueue(r *writeRequest) error {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return persistence.ErrClosed
	}
	w.queue = append(w.queue, r)
	w.queuedWrites += len(r.writes)
	w.mu.Unlock()
	w.signal()
	return nil
}

// stop makes the writer commit what is queued and return, and waits for it
// and for the commits in flight.
func (w *writer) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.signal()
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	defer w.commits.Wait()
	for {
		w.mu.Lock()
		queued, stopped := w.queuedWrites, w.stopped
		// Balance the commits in flight: while one runs, wait until the
		// queue holds a fair share of the writes it carries. A slot that
		// freed up would otherwise take the first few writes queued after
		// a large commit returned, and commit them at the cost of a full
		// one, while their fellows queue behind it.
		hold := w.inflight > 0 && queued*w.s.cfg.WriteConcurrency < w.inflightWrites
		w.mu.Unlock()
		if queued == 0 || (hold && !stopped) {
			if queued == 0 && stopped {
				return
			}
			<-w.wake
			continue
		}
		// Wait for a free slot; meanwhile the queue grows into a larger
		// batch.
		w.slots <- struct{}{}
		batch, n := w.take()
		w.commits.Add(1)
		go func() {
			defer w.commits.Done()
			w.commit(batch)
			w.mu.Lock()
			w.inflight--
			w.inflightWrites -= n
			w.mu.Unlock()
			<-w.slots
			w.signal()
		}()
	}
}

// signal wakes the writer goroutine.
func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take removes from the queue the requests of the next batch, at least
// one and more while they fit in Config.MaxBatchBytes, and returns them and
// their number of writes, which it counts as in flight.
func (w *writer) take() ([]*writeRequest, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, size, writes := 0, 0, 0
	for n < len(w.queue) && (n == 0 || size+w.queue[n].size <= w.s.cfg.MaxBatchBytes) {
		size += w.queue[n].size
		writes += len(w.queue[n].writes)
		n++
	}
	batch := slices.Clone(w.queue[:n])
	rest := copy(w.queue, w.queue[n:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.queuedWrites -= writes
	w.inflight++
	w.inflightWrites += writes
	return batch, writes
}

// commit writes one batch in one transaction and answers its requests.
func (w *writer) commit(batch []*writeRequest) {
	s := w.s
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	p := buildPlan(live, s.tun.chunkBytes, s.tun.chunkEvents, w.last)
	p.copyMin = s.tun.copyMinEvents
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
	stored, err := p.exec(ctx, s.pool, false)
	for attempt := 1; err != nil && attempt < maxAttempts && racedWriter(err); attempt++ {
		// Rolled back whole: run the batch again, carefully, where the
		// lookups reject the writes that lost.
		s.stats.reruns.Add(1)
		s.log.Warn("pgjournal: group commit met a write of another writer to one of its persistence ids; running it again",
			zap.Int("writes", len(p.writes)), zap.Int("attempt", attempt+1), zap.Error(err))
		stored, err = p.exec(ctx, s.pool, true)
	}
	cancel()
	w.last.committed(p.writes, stored)
	if err != nil {
		s.stats.failed.Add(1)
		err = storageError(fmt.Sprintf("group commit of %d atomic writes failed, outcome unknown", len(p.writes)), err)
		s.log.Error("pgjournal: group commit failed", zap.Int("writes", len(p.writes)), zap.Error(err))
		s.dropBroken(err) // the pooled connections are likely broken too
		for _, r := range live {
			r.err = err
			close(r.done)
		}
		return
	}
	var events, writes, conflicts int64
	for i, wr := range p.writes {
		if stored[i] {
			writes++
			events += int64(len(wr.events))
			continue
		}
		conflicts++
		if wr.prev != nil && wr.prev.lost {
			*wr.result = fmt.Errorf("%w: %q: sequence number %d follows a conflict in the same call",
				persistence.ErrSequenceConflict, wr.pidKey, wr.first)
			continue
		}
		*wr.result = fmt.Errorf("%w: %q: sequence number %d is not above the highest one written",
			persistence.ErrSequenceConflict, wr.pidKey, wr.first)
	}
	s.stats.commits.Add(1)
	s.stats.writes.Add(writes)
	s.stats.events.Add(events)
	s.stats.conflicts.Add(conflicts)
	for _, r := range live {
		close(r.done)
	}
}

// maxAttempts bounds how many times a group commit runs when it keeps
// meeting concurrent writers of its persistence ids: each run after the
// first rejects the writes that lost, so two are usually enough.
const maxAttempts = 5

// racedWriter reports whether a group commit was rolled back because of
// another writer's write to one of its persistence ids: a unique violation
// (the other transaction wrote the same key and committed first), a
// deadlock (two transactions met on several keys in different orders), or
// verifySQL's rejection (a write the fast path should not have made).
// Nothing of the transaction was stored.
func racedWriter(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "40P01" || pe.Code == rejectedCode)
}
