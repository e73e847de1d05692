package pgjournal

import "encoding/binary"

// COPY's binary format, as the fast path writes events with it: a
// signature and two int32 (flags, header extension length), then per row
// an int16 count of fields and each field as an int32 length (-1 for
// NULL) and its bytes, in the type's binary format; an int16 -1 ends the
// data.

// copySQL is the COPY statement of the fast path.
const copySQL = `COPY troupe_event (persistence_id, sequence_nr, written_at, manifest, writer_id, tags, checksum, payload) FROM STDIN (FORMAT binary)`

// copySignature begins binary COPY data.
const copySignature = "PGCOPY\n\xff\r\n\x00"

// copyHeaderLen is the length of the header: the signature, the flags and
// the length of the header extension (none).
const copyHeaderLen = len(copySignature) + 8

// copyRowOverhead is what a row takes besides its variable-length fields:
// the field count, eight lengths, two int8 and an int4.
const copyRowOverhead = 2 + 8*4 + 8 + 8 + 4

func appendCopyHeader(b []byte) []byte {
	b = append(b, copySignature...)
	return binary.BigEndian.AppendUint64(b, 0)
}

func appendCopyTrailer(b []byte) []byte {
	return binary.BigEndian.AppendUint16(b, 0xffff)
}

// appendCopyRow appends the row of one event, its columns in copySQL's
// order.
func appendCopyRow(b, pid []byte, e *pendingEvent) []byte {
	b = binary.BigEndian.AppendUint16(b, 8)
	b = appendCopyBytes(b, pid)
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(e.seq))
	b = binary.BigEndian.AppendUint32(b, 8)
	b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
	b = appendCopyBytes(b, e.manifest)
	b = appendCopyBytes(b, e.writer)
	if e.tags == nil {
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // NULL: untagged
	} else {
		b = appendCopyBytes(b, e.tags)
	}
	b = binary.BigEndian.AppendUint32(b, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(e.checksum))
	return appendCopyBytes(b, e.payload)
}

func appendCopyBytes(b, v []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// copyBytes returns the length of the plan's events as COPY rows, with
// the trailer and without the header.
func (p *plan) copyBytes() int {
	n := 2
	for _, w := range p.writes {
		for k := range w.events {
			e := &w.events[k]
			n += copyRowOverhead + len(w.pid) + len(e.manifest) + len(e.writer) + len(e.tags) + len(e.payload)
		}
	}
	return n
}
