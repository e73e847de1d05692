package pgjournal

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// reserveSQL reserves $1 tag offsets and locks the counter until commit.
const reserveSQL = `UPDATE troupe_tag_counter SET last_offset = last_offset + $1`

// writeSQL stores one chunk of atomic writes, each of a distinct persistence
// id, and returns the positions (in the chunk) of the writes it claimed; see
// the comment at the top of writer.go.
//
//	$1..$4   the writes: persistence id, first and last sequence number, position
//	$5..$12  their events, one array per column of troupe_event
//	$13..$16 tag index rows: tag, the event's number among the batch's
//	         tagged events (1..$17), persistence id, sequence number
//	$17      the number of offsets the batch reserved
const writeSQL = `WITH w AS (
    SELECT * FROM unnest($1::bytea[], $2::int8[], $3::int8[], $4::int4[]) AS w(pid, first_seq, last_seq, idx)
), inserted AS (
    INSERT INTO troupe_persistence_id (persistence_id, highest_sequence_nr)
    SELECT w.pid, w.last_seq FROM w
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
    FROM unnest($5::bytea[], $6::int8[], $7::int8[], $8::bytea[], $9::bytea[], $10::bytea[], $11::int4[], $12::bytea[])
        AS e(pid, seq, ts, manifest, writer, tags, checksum, payload)
    WHERE e.pid IN (SELECT persistence_id FROM claimed)
), tagged AS (
    INSERT INTO troupe_event_tag (tag, tag_offset, persistence_id, sequence_nr)
    SELECT t.tag, c.last_offset - $17::int8 + t.n, t.pid, t.seq
    FROM unnest($13::bytea[], $14::int8[], $15::bytea[], $16::int8[]) AS t(tag, n, pid, seq)
    CROSS JOIN troupe_tag_counter c
    WHERE t.pid IN (SELECT persistence_id FROM claimed)
)
SELECT w.idx FROM w WHERE w.pid IN (SELECT persistence_id FROM claimed)`

// plan is a batch laid out as statements.
type plan struct {
	writes   []*pendingWrite // every write of the batch
	chunks   []*chunk
	reserved int64 // tagged events, one offset each
}

// chunk is the arguments of one writeSQL statement.
type chunk struct {
	first int // position in plan.writes of the chunk's first write
	n     int // writes in the chunk
	bytes int
	args  chunkArgs
}

type chunkArgs struct {
	wPid                   [][]byte
	wFirst, wLast          []int64
	wIdx                   []int32
	ePid                   [][]byte
	eSeq, eTs              []int64
	eMan, eWri, eTag, ePay [][]byte
	eSum                   []int32
	tTag                   [][]byte
	tN                     []int64
	tPid                   [][]byte
	tSeq                   []int64
}

func (c *chunk) events() int { return len(c.args.eSeq) }

// buildPlan numbers the batch's tagged events in write order, orders the
// writes into rounds (a persistence id's n-th write of the batch goes to
// round n), sorts each round by persistence id, and cuts the rounds into
// chunks.
func buildPlan(reqs []*writeRequest, chunkBytes, chunkEvents int) *plan {
	var rounds [][]*pendingWrite
	seen := make(map[string]int)
	for _, r := range reqs {
		for i := range r.writes {
			w := &r.writes[i]
			n := seen[w.pidKey]
			seen[w.pidKey] = n + 1
			if n == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[n] = append(rounds[n], w)
		}
	}
	// Tag offsets follow the order of the writes in the batch, whatever
	// the statement that stores them.
	p := &plan{}
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
		slices.SortStableFunc(round, func(a, b *pendingWrite) int { return bytes.Compare(a.pid, b.pid) })
		var c *chunk
		for _, w := range round {
			if c == nil || (c.n > 0 && (c.bytes+w.size > chunkBytes || c.events()+len(w.events) > chunkEvents)) {
				c = &chunk{first: len(p.writes)}
				p.chunks = append(p.chunks, c)
			}
			p.add(c, w)
		}
	}
	return p
}

// add appends w to chunk c.
func (p *plan) add(c *chunk, w *pendingWrite) {
	a := &c.args
	a.wPid = append(a.wPid, w.pid)
	a.wFirst = append(a.wFirst, w.first)
	a.wLast = append(a.wLast, w.last)
	a.wIdx = append(a.wIdx, int32(c.n))
	for i := range w.events {
		e := &w.events[i]
		a.ePid = append(a.ePid, w.pid)
		a.eSeq = append(a.eSeq, e.seq)
		a.eTs = append(a.eTs, e.ts)
		a.eMan = append(a.eMan, e.manifest)
		a.eWri = append(a.eWri, e.writer)
		a.eTag = append(a.eTag, e.tags)
		a.ePay = append(a.ePay, e.payload)
		a.eSum = append(a.eSum, e.checksum)
		if len(e.tagSet) > 0 {
			for _, tag := range e.tagSet {
				a.tTag = append(a.tTag, tag)
				a.tN = append(a.tN, e.tagN)
				a.tPid = append(a.tPid, w.pid)
				a.tSeq = append(a.tSeq, e.seq)
			}
		}
	}
	p.writes = append(p.writes, w)
	c.n++
	c.bytes += w.size
}

// exec runs the plan as one pipeline, one implicit transaction, and
// reports which writes it claimed, by position in p.writes. An error means
// the transaction failed, or its outcome is unknown.
func (p *plan) exec(ctx context.Context, pool *pgxpool.Pool) ([]bool, error) {
	b := &pgx.Batch{}
	if p.reserved > 0 {
		b.Queue(reserveSQL, p.reserved)
	}
	for _, c := range p.chunks {
		a := &c.args
		// Empty byte slices must reach PostgreSQL as empty values, not
		// NULL; only the tags of untagged events are NULL.
		b.Queue(writeSQL, a.wPid, a.wFirst, a.wLast, a.wIdx,
			a.ePid, a.eSeq, a.eTs, nonNil(a.eMan), nonNil(a.eWri), a.eTag, a.eSum, nonNil(a.ePay),
			a.tTag, a.tN, a.tPid, a.tSeq, p.reserved)
	}
	br := pool.SendBatch(ctx, b)
	claimed := make([]bool, len(p.writes))
	err := p.read(br, claimed)
	if cerr := br.Close(); err == nil {
		err = cerr // the commit's own outcome
	}
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// read collects the results of the statements.
func (p *plan) read(br pgx.BatchResults, claimed []bool) error {
	if p.reserved > 0 {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("the tag offset counter has %d rows, want 1", tag.RowsAffected())
		}
	}
	for _, c := range p.chunks {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var idx int32
			if err := rows.Scan(&idx); err != nil {
				rows.Close()
				return err
			}
			if idx < 0 || int(idx) >= c.n {
				rows.Close()
				return fmt.Errorf("claimed write %d of a chunk of %d", idx, c.n)
			}
			claimed[c.first+int(idx)] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// nonNil replaces nil slices by empty ones, which pgx sends as empty
// values rather than NULL.
func nonNil(col [][]byte) [][]byte {
	for i, v := range col {
		if v == nil {
			col[i] = []byte{}
		}
	}
	return col
}
