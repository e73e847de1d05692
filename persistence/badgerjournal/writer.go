package badgerjournal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/troupe-go/troupe/persistence"
)

// Group commit.
//
// WriteMessages validates and encodes its atomic writes on the caller's
// goroutine (so that encoding runs in parallel), queues them as one request
// and waits. A single writer goroutine packs the queued requests into a
// badger transaction. One transaction at a time is handed to badger, which
// writes it to its log and syncs once; every caller in it is answered when
// it is done. While it is being written and synced, the writer keeps packing
// the requests that arrive into the next transaction, and hands that one to
// badger as soon as the previous one is done. So the batch size adapts to
// the load: a writer alone gets one sync per write, a thousand concurrent
// writers share each sync among hundreds of events, and no request waits
// behind a transaction that is already packed but not yet written (which
// would split the writers into more, smaller batches). Badger applies
// transactions in the order they are committed, so writes of one
// persistence id stay in order.
//
// Atomicity: an atomic write is always entirely inside one transaction.
// When adding a write would exceed badger's transaction limits, the
// transaction is rebuilt without it and committed (after the one in flight
// is done), and the write starts the next transaction; a write that does not
// fit in an empty transaction is rejected with persistence.ErrTooLarge. A
// batch therefore commits as one or more transactions, each all-or-nothing.
//
// Sequence numbers: the writer rejects a write whose first sequence number
// is not above the highest already written for its persistence id
// (persistence.ErrSequenceConflict), and the later writes of that
// persistence id in the same WriteMessages call. It remembers the highest sequence
// number of the persistence ids it wrote recently, counting writes packed
// or in flight, and reads the database for the others. Only the writer
// writes events, so what it remembers is exact, except after a failed
// commit: the persistence ids of a failed transaction are forgotten before
// the writer packs more, but writes packed while the failure was in flight
// may have been checked against them. A failed commit fails every writer in
// the transaction, and an entity stops after one.

// maxInFlight bounds the transactions handed to badger and not yet done.
// One is enough: badger writes transactions one after the other anyway, and
// what arrives meanwhile is better packed into one transaction (one sync)
// than split over several.
const maxInFlight = 1

// writeRequest is one WriteMessages call waiting for the writer.
type writeRequest struct {
	ctx     context.Context
	writes  []encodedWrite
	results []error       // one per atomic write; written by the writer goroutine only
	done    chan struct{} // closed when every transaction holding a write of the request is done

	// refs counts the holders that must finish before done closes: the
	// writer goroutine while it packs the batch, plus each transaction
	// holding a write of the request.
	refs atomic.Int32

	mu  sync.Mutex
	err error // a failure of the call as a whole
}

func (r *writeRequest) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

func (r *writeRequest) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *writeRequest) release() {
	if r.refs.Add(-1) == 0 {
		close(r.done)
	}
}

// encodedWrite is one atomic write, ready for badger.
type encodedWrite struct {
	index   int // position in writeRequest.results
	pid     string
	id      uint64 // the numeric id of pid
	newID   bool   // entries hold the mapping of pid to id
	first   uint64
	last    uint64
	entries []badger.Entry // the events, then the mapping when newID
	tags    [][]string     // the tags of each event; nil when none has any

	// extra holds the tag index entries and the next offset, made by the
	// writer goroutine when it adds the write to a transaction.
	extra []badger.Entry
}

// writer owns the group-commit goroutine.
type writer struct {
	db  *badger.DB
	ids *idRegistry
	log *zap.Logger

	mu      sync.Mutex
	queue   []*writeRequest
	stopped bool
	invalid []string      // persistence ids of failed transactions, to forget
	wake    chan struct{} // capacity 1: "the queue may be non-empty"
	done    chan struct{} // closed when the goroutine has returned

	inflight chan struct{} // a token per transaction handed to badger

	// Owned by the writer goroutine.
	highest      map[string]uint64
	highestLimit int
	b            *txnBuilder // the transaction being packed
	nextOffset   uint64      // the offset of the next tagged event

	// Observed by tests only.
	commits atomic.Int64 // transactions committed
}

// newWriter returns a writer whose goroutine is not started yet: requests
// enqueued before start wait in its queue.
func newWriter(db *badger.DB, ids *idRegistry, nextOffset uint64, log *zap.Logger, cacheSize int) *writer {
	return &writer{
		db:           db,
		ids:          ids,
		nextOffset:   nextOffset,
		log:          log,
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		inflight:     make(chan struct{}, maxInFlight),
		highest:      make(map[string]uint64),
		highestLimit: cacheSize,
	}
}

// start starts the writer's goroutine. It is called once.
func (w *writer) start() {
	go w.run()
}

// enqueue hands a request to the writer.
func (w *writer) enqueue(r *writeRequest) error {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return persistence.ErrClosed
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// stop makes the writer finish what is queued and return, and waits for it
// and for the transactions it handed to badger.
func (w *writer) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	defer w.drain()
	b := &txnBuilder{w: w}
	w.b = b
	b.reset()
	defer b.discard()
	// packed holds the requests whose writes are packed into b, or were
	// answered without it; each still holds the writer's reference, which
	// is released once b has been handed to badger.
	var batch, packed []*writeRequest
	for {
		w.mu.Lock()
		batch, w.queue = w.queue, batch[:0]
		stopped := w.stopped
		invalid := w.invalid
		w.invalid = nil
		w.mu.Unlock()
		for _, pid := range invalid {
			delete(w.highest, pid)
		}
		took := len(batch) > 0
		for _, req := range batch {
			w.pack(b, req)
		}
		packed = append(packed, batch...)
		clear(batch)
		if len(b.members) > 0 {
			select {
			case w.inflight <- struct{}{}:
				b.commit()
			case <-w.wake:
				continue // more requests: pack them into the same transaction
			}
		}
		for i, r := range packed {
			r.release()
			packed[i] = nil
		}
		packed = packed[:0]
		if !took {
			if stopped {
				return
			}
			<-w.wake
		}
	}
}

// drain waits until no transaction is in flight.
func (w *writer) drain() {
	for range maxInFlight {
		w.inflight <- struct{}{}
	}
	for range maxInFlight {
		<-w.inflight
	}
}

// remember records the highest sequence number of pid. When the cache is
// full it is emptied, after the transaction in flight is done, so that a
// database read never misses a write the cache knew of; the writes packed
// but not yet committed are remembered again at once.
func (w *writer) remember(pid string, seq uint64) {
	if _, ok := w.highest[pid]; !ok && len(w.highest) >= w.highestLimit {
		w.drain()
		clear(w.highest)
		if w.b != nil {
			for _, m := range w.b.members {
				w.highest[m.write.pid] = max(w.highest[m.write.pid], m.write.last)
			}
		}
	}
	w.highest[pid] = seq
}

// highestFor returns the highest sequence number of pid, counting the
// writes in flight.
func (w *writer) highestFor(pid string) (uint64, error) {
	if seq, ok := w.highest[pid]; ok {
		return seq, nil
	}
	id, _, err := w.ids.lookup(pid, false)
	if err != nil {
		return 0, err
	}
	var seq uint64
	if id != 0 {
		seq, err = readHighest(w.db, pid, id)
	}
	if err != nil {
		return 0, err
	}
	w.remember(pid, seq)
	return seq, nil
}

// txnBuilder accumulates atomic writes into one badger transaction.
type txnBuilder struct {
	w       *writer
	txn     *badger.Txn
	members []member
}

type member struct {
	req   *writeRequest
	write *encodedWrite
}

func (b *txnBuilder) reset() {
	if b.txn != nil {
		b.txn.Discard()
	}
	b.txn = b.w.db.NewTransaction(true)
	b.members = b.members[:0]
}

// discard drops the transaction being built.
func (b *txnBuilder) discard() {
	if b.txn != nil {
		b.txn.Discard()
		b.txn = nil
	}
}

// add puts all entries of ew into the transaction, or none. The tag index
// entries of ew's events get their offsets here, in commit order.
func (b *txnBuilder) add(req *writeRequest, ew *encodedWrite) error {
	w := b.w
	offset := w.nextOffset
	if ew.tags != nil {
		ew.extra = w.tagEntries(ew, ew.extra[:0])
	}
	n := 0
	for _, list := range [2][]badger.Entry{ew.entries, ew.extra} {
		for i := range list {
			if err := b.txn.SetEntry(&list[i]); err != nil {
				w.nextOffset = offset
				if n > 0 {
					b.rebuild()
				}
				return err
			}
			n++
		}
	}
	b.members = append(b.members, member{req, ew})
	w.remember(ew.pid, ew.last)
	return nil
}

// tagEntries appends to dst the tag index entries of ew's tagged events,
// one offset per event, and the entry that stores the next offset.
func (w *writer) tagEntries(ew *encodedWrite, dst []badger.Entry) []badger.Entry {
	for k, tags := range ew.tags {
		if len(tags) == 0 {
			continue
		}
		var ref [16]byte
		binary.BigEndian.PutUint64(ref[:8], ew.id)
		binary.BigEndian.PutUint64(ref[8:], ew.first+uint64(k))
		for _, tag := range tags {
			key := appendTagKey(nil, tag, w.nextOffset)
			dst = append(dst, badger.Entry{Key: key, Value: sealed(key, ref[:])})
		}
		w.nextOffset++
	}
	return append(dst, badger.Entry{Key: metaOffsetKey, Value: binary.BigEndian.AppendUint64(nil, w.nextOffset)})
}

// rebuild replaces the transaction by one holding only the members, after
// a write was added partly. The members fitted together with part of that
// write, so they fit again; should badger disagree, the members fail as a
// whole rather than be stored partly.
func (b *txnBuilder) rebuild() {
	b.txn.Discard()
	b.txn = b.w.db.NewTransaction(true)
	for _, m := range b.members {
		for _, list := range [2][]badger.Entry{m.write.entries, m.write.extra} {
			for i := range list {
				if err := b.txn.SetEntry(&list[i]); err != nil {
					for _, f := range b.members {
						f.req.fail(fmt.Errorf("badgerjournal: rebuilding a transaction: %w", err))
						delete(b.w.highest, f.write.pid)
					}
					b.reset()
					return
				}
			}
		}
	}
}

// commit hands the transaction to badger and starts the next one. The
// caller holds a token of w.inflight, which is given back when badger is
// done; then the members' requests learn the outcome and are released.
func (b *txnBuilder) commit() {
	members := slices.Clone(b.members)
	txn := b.txn
	b.txn = nil
	b.reset()
	w := b.w
	var reqs []*writeRequest // distinct, in order
	for _, m := range members {
		if len(reqs) == 0 || reqs[len(reqs)-1] != m.req {
			m.req.refs.Add(1)
			reqs = append(reqs, m.req)
		}
	}
	w.commits.Add(1)
	txn.CommitWith(func(err error) {
		if err != nil {
			w.log.Error("group commit failed", zap.Int("writes", len(members)), zap.Error(err))
			w.mu.Lock()
			for _, m := range members {
				w.invalid = append(w.invalid, m.write.pid)
			}
			w.mu.Unlock()
			for _, r := range reqs {
				r.fail(fmt.Errorf("badgerjournal: commit: %w", err))
			}
		}
		if err == nil {
			for _, m := range members {
				if m.write.newID {
					w.ids.committed(m.write.pid, m.write.id)
				}
			}
		}
		<-w.inflight
		for _, r := range reqs {
			r.release()
		}
	})
}

// pack adds the writes of req to b. When b is full it is committed, once
// the transaction in flight is done, and the write goes to the next one.
func (w *writer) pack(b *txnBuilder, req *writeRequest) {
	if err := req.ctx.Err(); err != nil {
		req.fail(err)
		return
	}
	var conflicted []string // persistence ids with a conflict in this request
	for i := range req.writes {
		ew := &req.writes[i]
		if len(conflicted) > 0 && slices.Contains(conflicted, ew.pid) {
			req.results[ew.index] = fmt.Errorf("%w: %q: sequence number %d follows a conflict in the same call",
				persistence.ErrSequenceConflict, ew.pid, ew.first)
			continue
		}
		highest, err := w.highestFor(ew.pid)
		if err != nil {
			req.fail(err)
			return
		}
		if ew.first <= highest {
			req.results[ew.index] = fmt.Errorf("%w: %q: sequence number %d, highest is %d",
				persistence.ErrSequenceConflict, ew.pid, ew.first, highest)
			conflicted = append(conflicted, ew.pid)
			continue
		}
		err = b.add(req, ew)
		if err == nil {
			continue
		}
		if errors.Is(err, badger.ErrTxnTooBig) && len(b.members) > 0 {
			// Commit what fits and start the next transaction with
			// this write.
			w.inflight <- struct{}{}
			b.commit()
			err = b.add(req, ew)
		}
		if err != nil {
			if errors.Is(err, badger.ErrTxnTooBig) {
				err = fmt.Errorf("%w: %q: %d events exceed one badger transaction",
					persistence.ErrTooLarge, ew.pid, len(ew.entries))
			} else {
				err = fmt.Errorf("%w: %q: %v", persistence.ErrTooLarge, ew.pid, err)
			}
			req.results[ew.index] = err
		}
	}
}

// WriteMessages implements persistence.Journal with group commit: see the
// package documentation.
func (s *Store) WriteMessages(ctx context.Context, writes []persistence.AtomicWrite) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()

	results := make([]error, len(writes))
	now := time.Now().UnixNano()
	// Validate, and size one buffer and one entry slice for every write.
	var size, events, valid int
	for i := range writes {
		aw := &writes[i]
		if err := validate(aw); err != nil {
			results[i] = err
			continue
		}
		valid++
		events += len(aw.Events) + 2 // room for the mapping of a new id
		for k := range aw.Events {
			size += eventSize(&aw.Events[k])
		}
	}
	if valid == 0 {
		return results, nil
	}
	encoded := make([]encodedWrite, 0, valid)
	entries := make([]badger.Entry, 0, events)
	buf := make([]byte, 0, size)
	for i := range writes {
		aw := &writes[i]
		if results[i] != nil {
			continue
		}
		id, newID, err := s.ids.lookup(aw.PersistenceID, true)
		if err != nil {
			return nil, err
		}
		ew := encodedWrite{
			index: i,
			pid:   aw.PersistenceID,
			id:    id,
			newID: newID,
			first: aw.Events[0].SequenceNr,
			last:  aw.Events[len(aw.Events)-1].SequenceNr,
		}
		start := len(entries)
		for k := range aw.Events {
			e := &aw.Events[k]
			ts := now
			if !e.Timestamp.IsZero() {
				ts = e.Timestamp.UnixNano()
			}
			var key, value []byte
			buf, key, value = appendEvent(buf, id, e, ts)
			entries = append(entries, badger.Entry{Key: key, Value: value})
			if len(e.Tags) > 0 && ew.tags == nil {
				ew.tags = make([][]string, len(aw.Events))
			}
			if ew.tags != nil {
				ew.tags[k] = e.Tags
			}
		}
		if newID {
			m := mappingEntries(aw.PersistenceID, id)
			entries = append(entries, m[:]...)
		}
		ew.entries = entries[start:len(entries):len(entries)]
		encoded = append(encoded, ew)
	}

	req := &writeRequest{ctx: ctx, writes: encoded, results: results, done: make(chan struct{})}
	req.refs.Store(1) // the writer's, released when it has packed the batch
	if err := s.w.enqueue(req); err != nil {
		return nil, err
	}
	select {
	case <-req.done:
	case <-ctx.Done():
		// The writer may still store the writes; the outcome is unknown.
		return nil, fmt.Errorf("badgerjournal: write abandoned, outcome unknown: %w", ctx.Err())
	}
	if err := req.failure(); err != nil {
		return nil, err
	}
	return results, nil
}

// validate checks an atomic write against the rules of every journal and
// the limits of this one.
func validate(aw *persistence.AtomicWrite) error {
	if err := aw.Validate(); err != nil {
		return err
	}
	if len(aw.PersistenceID) > MaxPersistenceIDLen {
		return fmt.Errorf("%w: persistence id of %d bytes, at most %d",
			persistence.ErrInvalidWrite, len(aw.PersistenceID), MaxPersistenceIDLen)
	}
	for _, e := range aw.Events {
		for _, tag := range e.Tags {
			if len(tag) > MaxTagLen {
				return fmt.Errorf("%w: %q #%d: tag of %d bytes, at most %d",
					persistence.ErrInvalidWrite, aw.PersistenceID, e.SequenceNr, len(tag), MaxTagLen)
			}
		}
	}
	return nil
}
