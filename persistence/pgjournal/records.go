package pgjournal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/troupe-go/troupe/persistence"
)

// Rows and checksums.
//
// An event row holds its fields in columns (see migrations/0001_initial.sql)
// and a CRC-32C (Castagnoli) over all of them, computed by the writer and
// checked by every read, so that a row damaged on disk, or edited by hand,
// surfaces as a *persistence.CorruptRecordError naming its persistence id
// and sequence number. The checksum runs over, in order:
//
//	uvarint(len(persistence id)) persistence id
//	sequence number   8 bytes big-endian
//	written_at        8 bytes big-endian (Unix nanoseconds)
//	uvarint(len(manifest)) manifest
//	uvarint(len(writer id)) writer id
//	tags present      1 byte (0 or 1), then uvarint(len(tags)) tags
//	payload           the remaining bytes
//
// A snapshot's checksum is the same without writer id and tags. The tags
// column holds each tag as uvarint(len) followed by its bytes.

// MaxPersistenceIDLen is the longest persistence id the store accepts, in
// bytes: it is part of B-tree index keys, which PostgreSQL limits to about
// 2.7 KB. Longer ids are rejected with persistence.ErrInvalidWrite.
const MaxPersistenceIDLen = 2048

// MaxTagLen is the longest tag the store accepts, in bytes. A write with a
// longer tag is rejected with persistence.ErrInvalidWrite.
const MaxTagLen = 1024

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksummer computes the checksums of rows in a buffer it reuses. crc32
// reaches its implementation through a function value, so whatever it is
// given escapes: a buffer on the stack of each call would be a heap
// allocation per row.
type checksummer struct{ buf []byte }

// pid is the checksum state after the persistence id, the prefix of every
// checksum of its records.
func (c *checksummer) pid(pid string) uint32 {
	b := binary.AppendUvarint(c.buf[:0], uint64(len(pid)))
	b = append(b, pid...)
	c.buf = b
	return crc32.Update(0, castagnoli, b)
}

// event is the checksum of an event row; start is pid's result for its
// persistence id. A nil tags is an untagged event. The fixed-size fields and
// the short ones are gathered into one buffer, so that the checksum takes
// two passes rather than one per field.
func (c *checksummer) event(start uint32, seq uint64, ts int64, manifest, writer, tags, payload []byte) int32 {
	b := binary.BigEndian.AppendUint64(c.buf[:0], seq)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = binary.AppendUvarint(b, uint64(len(manifest)))
	b = append(b, manifest...)
	b = binary.AppendUvarint(b, uint64(len(writer)))
	b = append(b, writer...)
	if tags == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(tags)))
		b = append(b, tags...)
	}
	c.buf = b
	sum := crc32.Update(start, castagnoli, b)
	return int32(crc32.Update(sum, castagnoli, payload))
}

// snapshot is the checksum of a snapshot row.
func (c *checksummer) snapshot(pid string, seq uint64, ts int64, manifest, payload []byte) int32 {
	start := c.pid(pid)
	b := binary.BigEndian.AppendUint64(c.buf[:0], seq)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	b = binary.AppendUvarint(b, uint64(len(manifest)))
	b = append(b, manifest...)
	c.buf = b
	sum := crc32.Update(start, castagnoli, b)
	return int32(crc32.Update(sum, castagnoli, payload))
}

// appendTags appends the encoding of the tags column.
func appendTags(dst []byte, tags []string) []byte {
	for _, t := range tags {
		dst = binary.AppendUvarint(dst, uint64(len(t)))
		dst = append(dst, t...)
	}
	return dst
}

// errMalformed is the reason given when a tags column does not decode.
var errMalformed = errors.New("malformed tags column")

// decodeTags decodes the tags column.
func decodeTags(b []byte) ([]string, error) {
	var tags []string
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errMalformed
		}
		tags = append(tags, string(b[k:k+int(n)]))
		b = b[k+int(n):]
	}
	if tags == nil {
		tags = []string{} // present but empty cannot be written; keep it distinct anyway
	}
	return tags, nil
}

// unixNanos converts a record's timestamp, the current time when it is
// zero.
func unixNanos(t time.Time, now int64) int64 {
	if t.IsZero() {
		return now
	}
	return t.UnixNano()
}

// fitsInt64 reports whether v can be stored in a bigint column.
func fitsInt64(v uint64) bool { return v <= math.MaxInt64 }

// clampInt64 returns v, or math.MaxInt64 when v is above it.
func clampInt64(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// eventDecoder decodes event rows (sequence_nr, written_at, manifest,
// writer_id, tags, checksum, payload, at column offset col), reusing the
// strings of the previous row when they repeat, as manifests and writer ids
// usually do, and copying small payloads into shared blocks (see payload).
type eventDecoder struct {
	sums             checksummer
	manifest, writer string
	binary           bool   // the result columns are in binary format
	block            []byte // the free end of the current payload block
}

// Payloads of records are copied out of pgx's buffer, which the next row
// overwrites. A payload of at most maxBlockedPayload bytes is copied into a
// block of payloadBlockSize bytes that it shares with the payloads of the
// rows after it, so that a replay allocates once per block rather than once
// per event. A block is never reused: it is freed by the garbage collector
// once no record's payload refers to it, so a caller that keeps one record
// keeps at most payloadBlockSize bytes alive with it.
const (
	payloadBlockSize  = 8 << 10
	maxBlockedPayload = 512
)

// payload returns a copy of p that does not alias it. The copy's capacity
// is its length, so appending to it cannot reach a neighbour in its block.
func (d *eventDecoder) payload(p []byte) []byte {
	if len(p) > maxBlockedPayload {
		c := make([]byte, len(p))
		copy(c, p)
		return c
	}
	if len(p) > cap(d.block)-len(d.block) {
		d.block = make([]byte, 0, payloadBlockSize)
	}
	n := len(d.block)
	d.block = append(d.block, p...)
	return d.block[n:len(d.block):len(d.block)]
}

// eventColumns is the column list every event query selects, in the order
// eventDecoder reads.
const eventColumns = "e.sequence_nr, e.written_at, e.manifest, e.writer_id, e.tags, e.checksum, e.payload"

// prepare looks at the result's formats: the fast path reads binary
// columns directly, the slow one (a connection in simple-protocol mode
// returns text) scans through pgx.
func (d *eventDecoder) prepare(rows pgx.Rows) {
	d.binary = true
	for _, fd := range rows.FieldDescriptions() {
		if fd.Format != pgx.BinaryFormatCode {
			d.binary = false
		}
	}
}

// rawRow holds the columns of one event row.
type rawRow struct {
	seq, ts                         int64
	checksum                        int32
	manifest, writer, tags, payload []byte
	tagsNull                        bool
}

// read reads the event columns of the current row, which follow
// len(lead) other columns. In binary mode the caller reads those itself
// from rows.RawValues; in text mode read scans them into lead. The byte
// slices of r alias pgx's buffer until the next call to rows.Next.
func (d *eventDecoder) read(rows pgx.Rows, r *rawRow, lead ...any) error {
	col := len(lead)
	if !d.binary {
		var seq, ts int64
		var sum int32
		var manifest, writer, tags, payload []byte
		dst := append(lead, &seq, &ts, &manifest, &writer, &tags, &sum, &payload)
		if err := rows.Scan(dst...); err != nil {
			return err
		}
		*r = rawRow{seq: seq, ts: ts, checksum: sum, manifest: manifest, writer: writer, tags: tags, tagsNull: tags == nil, payload: payload}
		return nil
	}
	vals := rows.RawValues()
	if len(vals) < col+7 || len(vals[col]) != 8 || len(vals[col+1]) != 8 || len(vals[col+5]) != 4 {
		return fmt.Errorf("pgjournal: unexpected event row layout")
	}
	r.seq = int64(binary.BigEndian.Uint64(vals[col]))
	r.ts = int64(binary.BigEndian.Uint64(vals[col+1]))
	r.manifest = vals[col+2]
	r.writer = vals[col+3]
	r.tags = vals[col+4]
	r.tagsNull = vals[col+4] == nil
	r.checksum = int32(binary.BigEndian.Uint32(vals[col+5]))
	r.payload = vals[col+6]
	return nil
}

// record checks the row's checksum and builds the record, which does not
// alias the row. start is d.sums.pid(pid).
func (d *eventDecoder) record(pid string, start uint32, r *rawRow) (persistence.Record, error) {
	var tags []byte
	if !r.tagsNull {
		tags = r.tags
		if tags == nil {
			tags = []byte{}
		}
	}
	if d.sums.event(start, uint64(r.seq), r.ts, r.manifest, r.writer, tags, r.payload) != r.checksum {
		return persistence.Record{}, &persistence.CorruptRecordError{PersistenceID: pid, SequenceNr: uint64(r.seq), Reason: "checksum mismatch"}
	}
	rec := persistence.Record{PersistenceID: pid, SequenceNr: uint64(r.seq), Timestamp: time.Unix(0, r.ts)}
	if string(r.manifest) != d.manifest {
		d.manifest = string(r.manifest)
	}
	rec.Manifest = d.manifest
	if string(r.writer) != d.writer {
		d.writer = string(r.writer)
	}
	rec.WriterID = d.writer
	if !r.tagsNull {
		t, err := decodeTags(r.tags)
		if err != nil {
			return persistence.Record{}, &persistence.CorruptRecordError{PersistenceID: pid, SequenceNr: uint64(r.seq), Reason: err.Error()}
		}
		rec.Tags = t
	}
	if len(r.payload) > 0 {
		rec.Payload = d.payload(r.payload)
	}
	return rec, nil
}
