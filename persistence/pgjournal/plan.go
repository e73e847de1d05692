package pgjournal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reserveSQL reserves $1 tag offsets and locks the counter until commit.
const reserveSQL = `UPDATE troupe_tag_counter SET last_offset = last_offset + $1`

// lockSQL locks the rows of the persistence ids $1 that exist, in the
// order of their ids, before the batch's statements update them: the plan
// PostgreSQL picks for an update may visit rows in any order (a hash join
// follows the table's physical order), and two transactions that lock the
// same rows in different orders deadlock.
const lockSQL = `SELECT persistence_id FROM troupe_persistence_id
WHERE persistence_id = ANY($1::bytea[])
ORDER BY persistence_id
FOR NO KEY UPDATE`

// writeSQL stores one chunk of atomic writes, each of a distinct persistence
// id, and returns the positions (in the chunk) of the writes it did not
// claim, usually none; see the comment at the top of writer.go.
//
//	$1..$5   the writes: persistence id, first and last sequence number,
//	         position, and whether the persistence id may be new
//	$6..$13  their events, one array per column of troupe_event
//	$14..$17 tag index rows: tag, the event's number among the batch's
//	         tagged events (1..$18), persistence id, sequence number
//	$18      the number of offsets the batch reserved
const writeSQL = `WITH w AS (
    SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::int4[], $5::bool[])
        AS w(pid, first_seq, last_seq, idx, maybe_new)
), inserted AS (
    INSERT INTO troupe_persistence_id (persistence_id, highest_sequence_nr)
    SELECT w.pid, w.last_seq FROM w WHERE w.maybe_new
    ON CONFLICT (persistence_id) DO NOTHING
    RETURNING persistence_id
), updated AS (
    UPDATE troupe_persistence_id p SET highest_sequence_nr = w.last_seq
    FROM w
    WHERE p.persistence_id = w.pid AND p.highest_sequence_nr < w.first_seq
    RETURNING p.persistence_id
), claimed AS (
    SELECT persistence_id FROM inserted
    UNION ALL
    SELECT persistence_id FROM updated
), events AS (
    INSERT INTO troupe_event (persistence_id, sequence_nr, written_at, manifest, writer_id, tags, checksum, payload)
    SELECT e.pid, e.seq, e.ts, e.manifest, e.writer, e.tags, e.checksum, e.payload
    FROM unnest($6::bytea[], $7::int8[], $8::int8[], $9::bytea[], $10::bytea[], $11::bytea[], $12::int4[], $13::bytea[])
        AS e(pid, seq, ts, manifest, writer, tags, checksum, payload)
    WHERE e.pid IN (SELECT persistence_id FROM claimed)
), tagged AS (
    INSERT INTO troupe_event_tag (tag, tag_offset, persistence_id, sequence_nr)
    SELECT t.tag, c.last_offset - $18::int8 + t.n, t.pid, t.seq
    FROM unnest($14::bytea[], $15::int8[], $16::bytea[], $17::int8[]) AS t(tag, n, pid, seq)
    CROSS JOIN troupe_tag_counter c
    WHERE t.pid IN (SELECT persistence_id FROM claimed)
)
SELECT w.idx FROM w WHERE w.pid NOT IN (SELECT persistence_id FROM claimed)`

// Names of the statements, prepared once on each connection.
const (
	reserveStmt = "troupe_pgjournal_reserve_v1"
	lockStmt    = "troupe_pgjournal_lock_v1"
	writeStmt   = "troupe_pgjournal_write_v1"
)

// plan is a batch laid out as statements.
type plan struct {
	writes   []*pendingWrite // every write of the batch, in statement order
	pids     [][]byte        // the distinct persistence ids, sorted
	chunks   []*chunk
	reserved int64 // tagged events, one offset each
}

// chunk is one writeSQL statement: the writes p.writes[first:first+n].
type chunk struct {
	first, n int
	bytes    int // of the writes, as counted by encodeWrite
	events   int
	tagRows  int
}

// buildPlan numbers the batch's tagged events in write order, orders the
// writes into rounds (a persistence id's n-th write of the batch goes to
// round n), sorts each round by persistence id, and cuts the rounds into
// chunks.
func buildPlan(reqs []*writeRequest, chunkBytes, chunkEvents int, known *knownIDs) *plan {
	var rounds [][]*pendingWrite
	total := 0
	for _, r := range reqs {
		total += len(r.writes)
	}
	seen := make(map[string]int, total)
	for _, r := range reqs {
		for i := range r.writes {
			w := &r.writes[i]
			n := seen[w.pidKey]
			seen[w.pidKey] = n + 1
			if n == len(rounds) {
				rounds = append(rounds, make([]*pendingWrite, 0, len(r.writes)))
			}
			rounds[n] = append(rounds[n], w)
		}
	}
	// Tag offsets follow the order of the writes in the batch, whatever
	// the statement that stores them.
	p := &plan{writes: make([]*pendingWrite, 0, total)}
	for _, r := range reqs {
		for i := range r.writes {
			for k := range r.writes[i].events {
				if e := &r.writes[i].events[k]; len(e.tagSet) > 0 {
					p.reserved++
					e.tagN = p.reserved
				}
			}
		}
	}
	for r, round := range rounds {
		slices.SortStableFunc(round, func(a, b *pendingWrite) int { return bytes.Compare(a.pid, b.pid) })
		var c *chunk
		for _, w := range round {
			// A later round finds the row that round 0 inserted, or
			// that another transaction did.
			w.maybeNew = r == 0 && !known.has(w.pidKey)
			if c == nil || (c.n > 0 && (c.bytes+w.size > chunkBytes || c.events+len(w.events) > chunkEvents)) {
				c = &chunk{first: len(p.writes)}
				p.chunks = append(p.chunks, c)
			}
			c.n++
			c.bytes += w.size
			c.events += len(w.events)
			for i := range w.events {
				c.tagRows += len(w.events[i].tagSet)
			}
			p.writes = append(p.writes, w)
		}
	}
	p.pids = make([][]byte, len(rounds[0]))
	for i, w := range rounds[0] { // sorted, and holding every persistence id
		p.pids[i] = w.pid
	}
	return p
}

// params encodes the parameters of c's writeSQL statement.
func (p *plan) params(c *chunk) [][]byte {
	writes := p.writes[c.first : c.first+c.n]
	pidBytes, eventPIDBytes := 0, 0
	for _, w := range writes {
		pidBytes += 4 + len(w.pid)
		eventPIDBytes += len(w.events) * (4 + len(w.pid))
	}
	wPid := newArray(oidBytea, pidBytes)
	wFirst := newArray(oidInt8, 12*c.n)
	wLast := newArray(oidInt8, 12*c.n)
	wIdx := newArray(oidInt4, 8*c.n)
	wNew := newArray(oidBool, 5*c.n)
	ePid := newArray(oidBytea, eventPIDBytes)
	eSeq := newArray(oidInt8, 12*c.events)
	eTs := newArray(oidInt8, 12*c.events)
	eMan := newArray(oidBytea, 16*c.events)
	eWri := newArray(oidBytea, 16*c.events)
	eTag := newArray(oidBytea, 4*c.events)
	eSum := newArray(oidInt4, 8*c.events)
	ePay := newArray(oidBytea, c.bytes)
	tTag := newArray(oidBytea, 16*c.tagRows)
	tN := newArray(oidInt8, 12*c.tagRows)
	tPid := newArray(oidBytea, 16*c.tagRows)
	tSeq := newArray(oidInt8, 12*c.tagRows)
	for i, w := range writes {
		wPid.bytea(w.pid)
		wFirst.int8(w.first)
		wLast.int8(w.last)
		wIdx.int4(int32(i))
		wNew.bool(w.maybeNew)
		for k := range w.events {
			e := &w.events[k]
			ePid.bytea(w.pid)
			eSeq.int8(e.seq)
			eTs.int8(e.ts)
			eMan.bytea(e.manifest)
			eWri.bytea(e.writer)
			eTag.bytea(e.tags) // NULL for an untagged event
			eSum.int4(e.checksum)
			ePay.bytea(e.payload)
			for _, tag := range e.tagSet {
				tTag.bytea(tag)
				tN.int8(e.tagN)
				tPid.bytea(w.pid)
				tSeq.int8(e.seq)
			}
		}
	}
	return [][]byte{
		wPid.value(), wFirst.value(), wLast.value(), wIdx.value(), wNew.value(),
		ePid.value(), eSeq.value(), eTs.value(), eMan.value(), eWri.value(), eTag.value(), eSum.value(), ePay.value(),
		tTag.value(), tN.value(), tPid.value(), tSeq.value(), int8Param(p.reserved),
	}
}

// binaryFormats are the formats of up to 18 parameters, all binary.
var binaryFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// exec runs the plan as one pipeline, one implicit transaction, and
// reports which writes it claimed, by position in p.writes. An error means
// the transaction failed, or its outcome is unknown.
func (p *plan) exec(ctx context.Context, pool *pgxpool.Pool) ([]bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	for _, st := range [...][2]string{{reserveStmt, reserveSQL}, {lockStmt, lockSQL}, {writeStmt, writeSQL}} {
		// Prepared once per connection: pgx remembers the names.
		if _, err := conn.Conn().Prepare(ctx, st[0], st[1]); err != nil {
			return nil, err
		}
	}
	params := make([][][]byte, len(p.chunks))
	for i, c := range p.chunks {
		params[i] = p.params(c)
	}
	pl := conn.Conn().PgConn().StartPipeline(ctx)
	if p.reserved > 0 {
		pl.SendQueryPrepared(reserveStmt, [][]byte{int8Param(p.reserved)}, binaryFormats[:1], nil)
	}
	pids := newArray(oidBytea, 0)
	for _, pid := range p.pids {
		pids.bytea(pid)
	}
	pl.SendQueryPrepared(lockStmt, [][]byte{pids.value()}, binaryFormats[:1], nil)
	for i := range p.chunks {
		pl.SendQueryPrepared(writeStmt, params[i], binaryFormats, binaryFormats[:1])
	}
	claimed := make([]bool, len(p.writes))
	for i := range claimed {
		claimed[i] = true
	}
	err = pl.Sync()
	if err == nil {
		err = p.read(pl, claimed)
	}
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// read collects the results of the statements, the writes each statement
// did not claim, and then the outcome of the commit.
func (p *plan) read(pl *pgconn.Pipeline, claimed []bool) error {
	next := func() (*pgconn.ResultReader, error) {
		res, err := pl.GetResults()
		if err != nil {
			return nil, err
		}
		rr, ok := res.(*pgconn.ResultReader)
		if !ok {
			return nil, fmt.Errorf("unexpected pipeline result %T", res)
		}
		return rr, nil
	}
	if p.reserved > 0 {
		rr, err := next()
		if err != nil {
			return err
		}
		tag, err := rr.Close()
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("the tag offset counter has %d rows, want 1", tag.RowsAffected())
		}
	}
	rr, err := next() // the lock
	if err == nil {
		_, err = rr.Close()
	}
	if err != nil {
		return err
	}
	for _, c := range p.chunks {
		rr, err := next()
		if err != nil {
			return err
		}
		for rr.NextRow() {
			v := rr.Values()
			if len(v) != 1 || len(v[0]) != 4 {
				rr.Close()
				return fmt.Errorf("unexpected row from the write statement")
			}
			idx := int(int32(binary.BigEndian.Uint32(v[0])))
			if idx < 0 || idx >= c.n {
				rr.Close()
				return fmt.Errorf("unclaimed write %d of a chunk of %d", idx, c.n)
			}
			claimed[c.first+idx] = false
		}
		if _, err := rr.Close(); err != nil {
			return err
		}
	}
	// The commit: PostgreSQL answers the Sync once it has committed, or
	// with the error that prevented it.
	res, err := pl.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("unexpected pipeline result %T where the commit was expected", res)
	}
	return nil
}

// knownIDs remembers persistence ids known to have their row in
// troupe_persistence_id, which is never deleted, so that the statements
// of a batch need not try to insert it. It is bounded: when full it is
// emptied, which costs only a few needless inserts.
type knownIDs struct {
	mu    sync.Mutex
	ids   map[string]struct{}
	limit int
}

func newKnownIDs(limit int) *knownIDs {
	return &knownIDs{ids: make(map[string]struct{}), limit: limit}
}

func (k *knownIDs) has(pid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ids[pid]
	return ok
}

// add records the persistence ids of a committed batch: each has its row
// now, inserted by the batch or found there.
func (k *knownIDs) add(writes []*pendingWrite) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range writes {
		if _, ok := k.ids[w.pidKey]; ok {
			continue
		}
		if len(k.ids) >= k.limit {
			clear(k.ids)
		}
		k.ids[w.pidKey] = struct{}{}
	}
}
