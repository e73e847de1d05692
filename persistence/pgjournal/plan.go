package pgjournal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reserveSQL reserves $1 tag offsets and locks the counter until commit.
const reserveSQL = `UPDATE troupe_tag_counter SET last_offset = last_offset + $1`

// writeSQL stores one chunk of atomic writes, each of a distinct persistence
// id, and returns the positions (in the chunk) of the writes it rejected,
// usually none; see the comment at the top of writer.go.
//
//	$1..$3   the writes: persistence id, first sequence number, position
//	$4..$11  their events, one array per column of troupe_event
//	$12..$15 tag index rows: tag, the event's number among the batch's
//	         tagged events (1..$16), persistence id, sequence number
//	$16      the number of offsets the batch reserved
//
// A write is rejected when a stored event of its persistence id has a
// sequence number at or above its first one, or when the highest sequence
// number that a delete kept (troupe_persistence_id) is: both are index
// lookups that read, where a claim on a row per persistence id would
// write, and the primary key catches the writes that no lookup can see
// yet (two transactions in flight at once).
const writeSQL = `WITH w AS (
    SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int4[]) AS w(pid, first_seq, idx)
), rejected AS (
    SELECT w.pid, w.idx FROM w
    WHERE EXISTS (SELECT 1 FROM troupe_event e
                  WHERE e.persistence_id = w.pid AND e.sequence_nr >= w.first_seq)
       OR EXISTS (SELECT 1 FROM troupe_persistence_id p
                  WHERE p.persistence_id = w.pid AND p.highest_sequence_nr >= w.first_seq)
), events AS (
    INSERT INTO troupe_event (persistence_id, sequence_nr, written_at, manifest, writer_id, tags, checksum, payload)
    SELECT e.pid, e.seq, e.ts, e.manifest, e.writer, e.tags, e.checksum, e.payload
    FROM unnest($4::bytea[], $5::int8[], $6::int8[], $7::bytea[], $8::bytea[], $9::bytea[], $10::int4[], $11::bytea[])
        AS e(pid, seq, ts, manifest, writer, tags, checksum, payload)
    WHERE e.pid NOT IN (SELECT pid FROM rejected)
), tagged AS (
    INSERT INTO troupe_event_tag (tag, tag_offset, persistence_id, sequence_nr)
    SELECT t.tag, c.last_offset - $16::int8 + t.n, t.pid, t.seq
    FROM unnest($12::bytea[], $13::int8[], $14::bytea[], $15::int8[]) AS t(tag, n, pid, seq)
    CROSS JOIN troupe_tag_counter c
    WHERE t.pid NOT IN (SELECT pid FROM rejected)
)
SELECT idx FROM rejected`

// Names of the statements, prepared once on each connection.
const (
	reserveStmt = "troupe_pgjournal_reserve_v1"
	writeStmt   = "troupe_pgjournal_write_v2"
)

// plan is a batch laid out as statements.
type plan struct {
	writes   []*pendingWrite // every write of the batch, in statement order
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
func buildPlan(reqs []*writeRequest, chunkBytes, chunkEvents int) *plan {
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
	for _, round := range rounds {
		// Sorted, so that two transactions that insert the same keys
		// (two writers of one persistence id) meet them in the same
		// order and the second waits for the first instead of both
		// waiting for each other.
		slices.SortStableFunc(round, func(a, b *pendingWrite) int { return bytes.Compare(a.pid, b.pid) })
		var c *chunk
		for _, w := range round {
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
	wIdx := newArray(oidInt4, 8*c.n)
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
		wIdx.int4(int32(i))
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
		wPid.value(), wFirst.value(), wIdx.value(),
		ePid.value(), eSeq.value(), eTs.value(), eMan.value(), eWri.value(), eTag.value(), eSum.value(), ePay.value(),
		tTag.value(), tN.value(), tPid.value(), tSeq.value(), int8Param(p.reserved),
	}
}

// binaryFormats are the formats of up to 16 parameters, all binary.
var binaryFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// exec runs the plan as one pipeline, one implicit transaction, and
// reports which writes it stored, by position in p.writes. An error means
// the transaction failed, or its outcome is unknown.
func (p *plan) exec(ctx context.Context, pool *pgxpool.Pool) ([]bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	for _, st := range [...][2]string{{reserveStmt, reserveSQL}, {writeStmt, writeSQL}} {
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
	for i := range p.chunks {
		pl.SendQueryPrepared(writeStmt, params[i], binaryFormats, binaryFormats[:1])
	}
	stored := make([]bool, len(p.writes))
	for i := range stored {
		stored[i] = true
	}
	err = pl.Sync()
	if err == nil {
		err = p.read(pl, stored)
	}
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// read collects the results of the statements, the writes each statement
// rejected, and then the outcome of the commit.
func (p *plan) read(pl *pgconn.Pipeline, stored []bool) error {
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
				return fmt.Errorf("rejected write %d of a chunk of %d", idx, c.n)
			}
			stored[c.first+idx] = false
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
