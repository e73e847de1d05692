package pgjournal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
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

// insertSQL stores the events of one chunk of a batch on the fast path
// (see writer.go), $1..$8 one array per column of troupe_event.
const insertSQL = `INSERT INTO troupe_event (persistence_id, sequence_nr, written_at, manifest, writer_id, tags, checksum, payload)
SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::bytea[], $5::bytea[], $6::bytea[], $7::int4[], $8::bytea[])`

// tagIndexSQL stores the tag index rows of one chunk on the fast path: $1..$4
// as $12..$15 of writeSQL, $5 the number of offsets the batch reserved.
const tagIndexSQL = `INSERT INTO troupe_event_tag (tag, tag_offset, persistence_id, sequence_nr)
SELECT t.tag, c.last_offset - $5::int8 + t.n, t.pid, t.seq
FROM unnest($1::bytea[], $2::int8[], $3::bytea[], $4::int8[]) AS t(tag, n, pid, seq)
CROSS JOIN troupe_tag_counter c`

// verifySQL checks the writes of a batch after their events are inserted,
// in the same transaction, and raises TR001 (troupe_reject_write) for one
// that the lookups of writeSQL, run now, would reject: a persistence id
// whose highest sequence number kept by a delete, or by a write that left
// a gap, is at or above the write's first ($1, $2), or, where $4 says so,
// with an event above the write's last ($3): the write's own rows fill
// first..last. It runs after the inserts so that it sees what committed
// while they ran: a delete by another writer that removed the rows the
// inserts would otherwise have met on the primary key.
//
// It also records the gaps: where $5 says so, a write whose first sequence
// number is not right after a stored event (nor at or below a highest
// sequence number kept) leaves the numbers below it free, as after a write
// rejected as too large, whose numbers the runtime has used up. Such a
// write records its last sequence number in troupe_persistence_id, where
// verifySQL looks for every write, so that a stale writer's write into the
// gap is rejected even when it skips the look above (see lastWritten). The
// insert does not change what the rest of the statement reads.
const verifySQL = `WITH w AS (
    SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::bool[], $5::bool[])
        AS w(pid, first_seq, last_seq, probe, gap)
), gaps AS (
    INSERT INTO troupe_persistence_id AS p (persistence_id, highest_sequence_nr)
    SELECT w.pid, max(w.last_seq) FROM w
    WHERE w.gap AND w.first_seq > 1
      AND NOT EXISTS (SELECT 1 FROM troupe_event e
                      WHERE e.persistence_id = w.pid AND e.sequence_nr = w.first_seq - 1)
      AND NOT EXISTS (SELECT 1 FROM troupe_persistence_id p
                      WHERE p.persistence_id = w.pid AND p.highest_sequence_nr >= w.first_seq - 1)
    GROUP BY w.pid ORDER BY w.pid
    ON CONFLICT (persistence_id) DO UPDATE
    SET highest_sequence_nr = greatest(p.highest_sequence_nr, excluded.highest_sequence_nr)
)
SELECT troupe_reject_write(w.pid, w.first_seq) FROM w
WHERE (w.probe AND EXISTS (SELECT 1 FROM troupe_event e
                           WHERE e.persistence_id = w.pid AND e.sequence_nr > w.last_seq))
   OR EXISTS (SELECT 1 FROM troupe_persistence_id p
              WHERE p.persistence_id = w.pid AND p.highest_sequence_nr >= w.first_seq)`

// unwriteSQL removes, before the careful path commits, the events and tag
// index rows its statements inserted for writes that must not be stored
// after all: writes that follow, in their WriteMessages call, a write of
// their persistence id that was rejected (see plan.chained). $1..$3: their
// persistence ids, first and last sequence numbers. The rows are this
// transaction's own (its inserts hold their keys), so no one else has seen
// them.
const unwriteSQL = `WITH w AS (
    SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[]) AS w(pid, first_seq, last_seq)
), tags AS (
    DELETE FROM troupe_event_tag t USING w
    WHERE t.persistence_id = w.pid AND t.sequence_nr BETWEEN w.first_seq AND w.last_seq
)
DELETE FROM troupe_event e USING w
WHERE e.persistence_id = w.pid AND e.sequence_nr BETWEEN w.first_seq AND w.last_seq`

// rejectedCode is the SQLSTATE troupe_reject_write raises.
const rejectedCode = "TR001"

// Names of the statements, prepared once on each connection.
const (
	reserveStmt  = "troupe_pgjournal_reserve_v1"
	writeStmt    = "troupe_pgjournal_write_v2"
	insertStmt   = "troupe_pgjournal_insert_v2"
	tagIndexStmt = "troupe_pgjournal_tag_v2"
	verifyStmt   = "troupe_pgjournal_verify_v3"
	unwriteStmt  = "troupe_pgjournal_unwrite_v1"
)

// plan is a batch laid out as statements.
type plan struct {
	writes   []*pendingWrite // every write of the batch, in statement order
	chunks   []*chunk
	rounds   int   // 1 when no persistence id has two writes in the batch
	reserved int64 // tagged events, one offset each
	copyMin  int   // events from which the fast path uses COPY; <= 0: never
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
func buildPlan(reqs []*writeRequest, chunkBytes, chunkEvents int, last *lastWritten) *plan {
	var rounds [][]*pendingWrite
	total := 0
	for _, r := range reqs {
		total += len(r.writes)
	}
	type pidSeen struct {
		n    int           // writes of the persistence id so far
		last *pendingWrite // the last of them
		req  *writeRequest // its request
	}
	seen := make(map[string]pidSeen, total)
	for _, r := range reqs {
		for i := range r.writes {
			w := &r.writes[i]
			ps := seen[w.pidKey]
			w.prev = nil
			if ps.req == r {
				w.prev = ps.last
			}
			seen[w.pidKey] = pidSeen{n: ps.n + 1, last: w, req: r}
			n := ps.n
			if n == len(rounds) {
				rounds = append(rounds, make([]*pendingWrite, 0, len(r.writes)))
			}
			rounds[n] = append(rounds[n], w)
		}
	}
	// Tag offsets follow the order of the writes in the batch, whatever
	// the statement that stores them.
	p := &plan{writes: make([]*pendingWrite, 0, total), rounds: len(rounds)}
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
			w.follows = last.follows(w)
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

// params encodes the parameters of c's writeSQL statement: the writes,
// their events and their tag index rows.
func (p *plan) params(c *chunk) [][]byte {
	return slices.Concat(p.writeArrays(c), p.eventArrays(c), p.tagArrays(c))
}

// writeArrays encodes c's writes: persistence id, first sequence number,
// position in the chunk.
func (p *plan) writeArrays(c *chunk) [][]byte {
	writes := p.writes[c.first : c.first+c.n]
	pidBytes := 0
	for _, w := range writes {
		pidBytes += 4 + len(w.pid)
	}
	pid := newArray(oidBytea, pidBytes)
	first := newArray(oidInt8, 12*c.n)
	idx := newArray(oidInt4, 8*c.n)
	for i, w := range writes {
		pid.bytea(w.pid)
		first.int8(w.first)
		idx.int4(int32(i))
	}
	return [][]byte{pid.value(), first.value(), idx.value()}
}

// eventArrays encodes the events of c's writes, one array per column of
// troupe_event (insertSQL's parameters).
func (p *plan) eventArrays(c *chunk) [][]byte {
	writes := p.writes[c.first : c.first+c.n]
	pidBytes := 0
	for _, w := range writes {
		pidBytes += len(w.events) * (4 + len(w.pid))
	}
	pid := newArray(oidBytea, pidBytes)
	seq := newArray(oidInt8, 12*c.events)
	ts := newArray(oidInt8, 12*c.events)
	man := newArray(oidBytea, 16*c.events)
	wri := newArray(oidBytea, 16*c.events)
	tags := newArray(oidBytea, 4*c.events)
	sum := newArray(oidInt4, 8*c.events)
	pay := newArray(oidBytea, c.bytes)
	for _, w := range writes {
		for k := range w.events {
			e := &w.events[k]
			pid.bytea(w.pid)
			seq.int8(e.seq)
			ts.int8(e.ts)
			man.bytea(e.manifest)
			wri.bytea(e.writer)
			tags.bytea(e.tags) // NULL for an untagged event
			sum.int4(e.checksum)
			pay.bytea(e.payload)
		}
	}
	return [][]byte{pid.value(), seq.value(), ts.value(), man.value(), wri.value(), tags.value(), sum.value(), pay.value()}
}

// tagArrays encodes the tag index rows of c's events (tag, the event's
// number among the batch's tagged events, persistence id, sequence number)
// and the number of offsets the batch reserved: tagIndexSQL's parameters.
func (p *plan) tagArrays(c *chunk) [][]byte {
	tag := newArray(oidBytea, 16*c.tagRows)
	n := newArray(oidInt8, 12*c.tagRows)
	pid := newArray(oidBytea, 16*c.tagRows)
	seq := newArray(oidInt8, 12*c.tagRows)
	for _, w := range p.writes[c.first : c.first+c.n] {
		for k := range w.events {
			e := &w.events[k]
			for _, t := range e.tagSet {
				tag.bytea(t)
				n.int8(e.tagN)
				pid.bytea(w.pid)
				seq.int8(e.seq)
			}
		}
	}
	return [][]byte{tag.value(), n.value(), pid.value(), seq.value(), int8Param(p.reserved)}
}

// binaryFormats are the formats of up to 16 parameters, all binary.
var binaryFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// verifyParams encodes the parameters of verifySQL for writes. verifySQL
// looks for a gap below every write that does not follow this store's own
// last write of its persistence id, and, with probe (on the fast path; the
// careful path's lookups did that before the inserts), for events above it.
func verifyParams(writes []*pendingWrite, probe bool) [][]byte {
	params := spanParams(writes)
	probes := newArray(oidBool, 5*len(writes))
	gaps := newArray(oidBool, 5*len(writes))
	for _, w := range writes {
		probes.bool(probe && !w.follows)
		gaps.bool(!w.follows)
	}
	return append(params, probes.value(), gaps.value())
}

// statements are the statements a plan may send, prepared once on each
// connection (pgx remembers the names).
var statements = [...][2]string{
	{reserveStmt, reserveSQL}, {writeStmt, writeSQL}, {insertStmt, insertSQL},
	{tagIndexStmt, tagIndexSQL}, {verifyStmt, verifySQL}, {unwriteStmt, unwriteSQL},
}

// exec runs the plan in one transaction and reports which writes it
// stored, by position in p.writes. An error means the transaction failed,
// or its outcome is unknown; racedWriter tells the errors after which
// nothing was stored and the plan may run again, carefully.
//
// The fast path serves a batch that writes each persistence id once, on
// its first run, in one round trip: it inserts every write (by INSERT, or,
// from p.copyMin events, by COPY), then verifies them, and any
// write that should have been rejected aborts the whole transaction. The
// careful path rejects writes one by one and takes two round trips: see
// the comment at the top of writer.go.
func (p *plan) exec(ctx context.Context, pool *pgxpool.Pool, careful bool) ([]bool, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	for _, st := range statements {
		if _, err := conn.Conn().Prepare(ctx, st[0], st[1]); err != nil {
			return nil, err
		}
	}
	stored := make([]bool, len(p.writes))
	for i := range stored {
		stored[i] = true
	}
	pc := conn.Conn().PgConn()
	switch {
	case careful || p.rounds > 1:
		err = p.inPipeline(ctx, pc, func(pl *pgconn.Pipeline) error { return p.careful(pl, stored) })
	case p.copyMin > 0 && p.events() >= p.copyMin:
		err = p.copied(ctx, pc)
	default:
		err = p.inPipeline(ctx, pc, p.fast)
	}
	if err != nil {
		if pc.TxStatus() != 'I' {
			// An explicit transaction (the careful path's, or the
			// copy's), failed: end it, so that the connection goes back
			// to the pool clean (the pool closes one that is not).
			_, _ = pc.Exec(ctx, "ROLLBACK").ReadAll()
		}
		return nil, err
	}
	return stored, nil
}

// inPipeline runs send in a pipeline of pc's.
func (p *plan) inPipeline(ctx context.Context, pc *pgconn.PgConn, send func(*pgconn.Pipeline) error) error {
	pl := pc.StartPipeline(ctx)
	err := send(pl)
	if cerr := pl.Close(); err == nil {
		err = cerr
	}
	return err
}

// events returns the number of events in the plan.
func (p *plan) events() int {
	n := 0
	for _, c := range p.chunks {
		n += c.events
	}
	return n
}

// copyMinEvents is the size from which the fast path sends the events
// with COPY, which PostgreSQL stores faster than an INSERT of the same
// rows (about a fifth less time for a batch of 330 events, commit
// included); below it, building the COPY data costs more than it saves.
const copyMinEvents = 64

// copied is the fast path for a large batch, in one round trip and one
// explicit transaction. pgconn cannot put COPY in a pipeline, so copied
// writes the protocol's messages itself, all at once: BEGIN and the COPY
// as simple queries, the COPY's data, then the tag rows and verifySQL as
// prepared statements and a Sync, then COMMIT. PostgreSQL takes them in
// order and answers each simple query, and the Sync, with ReadyForQuery.
// After an error it skips what remains up to the next ReadyForQuery (the
// COPY's data, which it ignores outside a COPY; the prepared statements up
// to the Sync), and the COMMIT of a failed transaction rolls it back.
func (p *plan) copied(ctx context.Context, pc *pgconn.PgConn) error {
	// The COPY's data as one CopyData message, encoded here: 'd', the
	// length, the rows.
	msg := make([]byte, 5, 5+copyHeaderLen+p.copyBytes())
	msg[0] = 'd'
	msg = appendCopyHeader(msg)
	for _, w := range p.writes {
		for k := range w.events {
			msg = appendCopyRow(msg, w.pid, &w.events[k])
		}
	}
	msg = appendCopyTrailer(msg)
	binary.BigEndian.PutUint32(msg[1:5], uint32(len(msg)-1))

	f := pc.Frontend()
	f.SendQuery(&pgproto3.Query{String: "BEGIN"})
	f.SendQuery(&pgproto3.Query{String: copySQL})
	if err := withinDeadline(ctx, pc, func() error { return f.SendUnbufferedEncodedCopyData(msg) }); err != nil {
		return err
	}
	f.Send(&pgproto3.CopyDone{})
	bind := func(stmt string, params [][]byte) {
		f.SendBind(&pgproto3.Bind{PreparedStatement: stmt, ParameterFormatCodes: binaryFormats[:1], Parameters: params})
		f.SendExecute(&pgproto3.Execute{})
	}
	tagged := p.sendTagRows(bind)
	bind(verifyStmt, verifyParams(p.writes, true))
	f.SendSync(&pgproto3.Sync{})
	f.SendQuery(&pgproto3.Query{String: "COMMIT"})
	if err := withinDeadline(ctx, pc, f.Flush); err != nil {
		return err
	}

	// Read up to the fourth ReadyForQuery: BEGIN, COPY, Sync, COMMIT.
	var first error // the first error the server reported
	var tags []pgconn.CommandTag
	for ready := 0; ready < 4; {
		msg, err := pc.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.CommandComplete:
			tags = append(tags, pgconn.NewCommandTag(string(m.CommandTag)))
		case *pgproto3.ReadyForQuery:
			ready++
		}
	}
	if first != nil {
		return first
	}
	// BEGIN, COPY, the reservation and the tag rows, the check, COMMIT.
	statements := 4 + tagged
	if p.reserved > 0 {
		statements++
	}
	if len(tags) != statements {
		return fmt.Errorf("%d results for the %d statements of a group commit", len(tags), statements)
	}
	if p.reserved > 0 && tags[2].RowsAffected() != 1 {
		return fmt.Errorf("the tag offset counter has %d rows, want 1", tags[2].RowsAffected())
	}
	if commit := tags[len(tags)-1].String(); commit != "COMMIT" {
		return fmt.Errorf("the transaction ended with %q, not COMMIT", commit)
	}
	return nil
}

// withinDeadline runs write, which writes to pc's connection, within
// ctx's deadline.
func withinDeadline(ctx context.Context, pc *pgconn.PgConn, write func() error) error {
	if d, ok := ctx.Deadline(); ok {
		if err := pc.Conn().SetWriteDeadline(d); err != nil {
			return err
		}
		defer func() { _ = pc.Conn().SetWriteDeadline(time.Time{}) }()
	}
	return write()
}

// sendTagRows sends, with send, the reservation of the batch's tag offsets
// and the statements that store its tag index rows, and returns how many
// of the latter it sent.
func (p *plan) sendTagRows(send func(stmt string, params [][]byte)) int {
	if p.reserved == 0 {
		return 0
	}
	send(reserveStmt, [][]byte{int8Param(p.reserved)})
	sent := 0
	for _, c := range p.chunks {
		if c.tagRows > 0 {
			send(tagIndexStmt, p.tagArrays(c))
			sent++
		}
	}
	return sent
}

// sender returns a send function for sendTagRows that sends on pl.
func sender(pl *pgconn.Pipeline) func(stmt string, params [][]byte) {
	return func(stmt string, params [][]byte) {
		pl.SendQueryPrepared(stmt, params, binaryFormats[:len(params)], nil)
	}
}

// readCommit reads the result of a COMMIT, which PostgreSQL answers with
// ROLLBACK when the transaction had failed.
func readCommit(pl *pgconn.Pipeline) error {
	tag, err := nextResult(pl)
	if err != nil {
		return err
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("the transaction ended with %q, not COMMIT", tag.String())
	}
	return nil
}

// fast sends the plan as one implicit transaction: the inserts, then
// verifySQL over every write, probing for events of the persistence ids
// this store did not write last.
func (p *plan) fast(pl *pgconn.Pipeline) error {
	for _, c := range p.chunks {
		pl.SendQueryPrepared(insertStmt, p.eventArrays(c), binaryFormats[:8], nil)
	}
	tagged := p.sendTagRows(sender(pl))
	pl.SendQueryPrepared(verifyStmt, verifyParams(p.writes, true), binaryFormats[:5], nil)
	if err := pl.Sync(); err != nil {
		return err
	}
	for range p.chunks {
		if _, err := nextResult(pl); err != nil {
			return err
		}
	}
	if err := p.readReserve(pl); err != nil {
		return err
	}
	for range tagged + 1 { // tag rows, verify
		if _, err := nextResult(pl); err != nil {
			return err
		}
	}
	return readSync(pl)
}

// careful sends the plan as an explicit transaction: writeSQL, which
// rejects writes one by one, then, once their results are in, verifySQL
// over the writes stored, and the commit.
func (p *plan) careful(pl *pgconn.Pipeline, stored []bool) error {
	pl.SendQueryParams("BEGIN", nil, nil, nil, nil)
	if p.reserved > 0 {
		pl.SendQueryPrepared(reserveStmt, [][]byte{int8Param(p.reserved)}, binaryFormats[:1], nil)
	}
	for _, c := range p.chunks {
		pl.SendQueryPrepared(writeStmt, p.params(c), binaryFormats, binaryFormats[:1])
	}
	if err := pl.Sync(); err != nil {
		return err
	}
	if _, err := nextResult(pl); err != nil { // BEGIN
		return err
	}
	if err := p.readReserve(pl); err != nil {
		return err
	}
	for _, c := range p.chunks {
		if err := readRejected(pl, c, stored); err != nil {
			return err
		}
	}
	if err := readSync(pl); err != nil {
		return err
	}
	unwrite := p.chained(stored)
	var kept []*pendingWrite
	for i, w := range p.writes {
		if stored[i] {
			kept = append(kept, w)
		}
	}
	if len(unwrite) > 0 {
		pl.SendQueryPrepared(unwriteStmt, spanParams(unwrite), binaryFormats[:3], nil)
	}
	pl.SendQueryPrepared(verifyStmt, verifyParams(kept, false), binaryFormats[:5], nil)
	pl.SendQueryParams("COMMIT", nil, nil, nil, nil)
	if err := pl.Sync(); err != nil {
		return err
	}
	if len(unwrite) > 0 {
		if _, err := nextResult(pl); err != nil { // unwrite
			return err
		}
	}
	if _, err := nextResult(pl); err != nil { // verify
		return err
	}
	if err := readCommit(pl); err != nil {
		return err
	}
	return readSync(pl)
}

// chained marks as not stored every write that follows, in its
// WriteMessages call, a write of its persistence id that was not stored
// (its prev, in an earlier round), and returns the ones the statements had
// stored, whose rows must go before the commit. A writer whose write lost
// to another writer's has lost its place in the history: what it wrote
// next, even above the highest sequence number, would land on top of the
// other writer's events. Only the careful path can reject a write, and
// only a batch with more than one round has writes with a prev.
func (p *plan) chained(stored []bool) []*pendingWrite {
	if p.rounds == 1 {
		return nil
	}
	var out []*pendingWrite
	for i, w := range p.writes {
		w.lost = !stored[i]
		if !w.lost && w.prev != nil && w.prev.lost {
			w.lost, stored[i] = true, false
			out = append(out, w)
		}
	}
	return out
}

// spanParams encodes the parameters of unwriteSQL for writes (persistence ids, first
// and last sequence numbers), which are the first three of verifySQL's.
func spanParams(writes []*pendingWrite) [][]byte {
	pidBytes := 0
	for _, w := range writes {
		pidBytes += 4 + len(w.pid)
	}
	pids := newArray(oidBytea, pidBytes)
	firsts := newArray(oidInt8, 12*len(writes))
	lasts := newArray(oidInt8, 12*len(writes))
	for _, w := range writes {
		pids.bytea(w.pid)
		firsts.int8(w.first)
		lasts.int8(w.last)
	}
	return append(make([][]byte, 0, 5), pids.value(), firsts.value(), lasts.value())
}

// nextResult reads the next statement's result of the pipeline, and
// discards its rows.
func nextResult(pl *pgconn.Pipeline) (pgconn.CommandTag, error) {
	rr, err := nextReader(pl)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return rr.Close()
}

// nextReader returns the reader of the next statement's result of the
// pipeline.
func nextReader(pl *pgconn.Pipeline) (*pgconn.ResultReader, error) {
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

// readReserve reads the result of the tag offsets' reservation, if the
// plan has one.
func (p *plan) readReserve(pl *pgconn.Pipeline) error {
	if p.reserved == 0 {
		return nil
	}
	tag, err := nextResult(pl)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("the tag offset counter has %d rows, want 1", tag.RowsAffected())
	}
	return nil
}

// readRejected reads the writes c's writeSQL rejected and marks them.
func readRejected(pl *pgconn.Pipeline, c *chunk, stored []bool) error {
	rr, err := nextReader(pl)
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
	_, err = rr.Close()
	return err
}

// readSync reads the end of a pipeline's Sync: for an implicit
// transaction, PostgreSQL answers it once it has committed, or with the
// error that prevented it.
func readSync(pl *pgconn.Pipeline) error {
	res, err := pl.GetResults()
	if err != nil {
		return err
	}
	if _, ok := res.(*pgconn.PipelineSync); !ok {
		return fmt.Errorf("unexpected pipeline result %T where the end of a transaction was expected", res)
	}
	return nil
}

// lastWritten remembers, per persistence id, the last sequence number
// this store committed, so that a write that follows it (its first is
// the next number) need not probe for events above it. Another writer's
// events above this store's last begin at that next number, which the
// write's insert meets on the primary key; or they were deleted since, or
// they begin higher, leaving a gap (the other writer's write of the next
// number was rejected, and the runtime used its number up): the delete
// and the write that left the gap both recorded a highest sequence number
// in troupe_persistence_id, which verifySQL checks for every write. A
// write that leaves a gap never follows this store's last write (the
// number before it is this store's, stored), so verifySQL looks for the
// gap below it. It is bounded: when full it is emptied, which costs only
// a few probes.
type lastWritten struct {
	mu    sync.Mutex
	seqs  map[string]int64
	limit int
}

func newLastWritten(limit int) *lastWritten {
	return &lastWritten{seqs: make(map[string]int64), limit: limit}
}

// follows reports whether w begins right after the last sequence number
// this store committed for its persistence id.
func (l *lastWritten) follows(w *pendingWrite) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.seqs[w.pidKey]
	return ok && w.first == last+1
}

// committed records the outcome of a batch: the last sequence number of
// each write stored, and forgets the persistence ids of the others.
// With stored nil, the batch failed and its outcome is unknown.
func (l *lastWritten) committed(writes []*pendingWrite, stored []bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range writes {
		if stored == nil || !stored[i] {
			delete(l.seqs, w.pidKey)
			continue
		}
		if _, ok := l.seqs[w.pidKey]; !ok && len(l.seqs) >= l.limit {
			clear(l.seqs)
		}
		if w.last > l.seqs[w.pidKey] {
			l.seqs[w.pidKey] = w.last
		}
	}
}
