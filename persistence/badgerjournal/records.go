package badgerjournal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// Key layout. Every key starts with a kind byte.
//
// Events are keyed by a numeric id of their persistence id rather than by
// the persistence id itself: short keys of fixed width are cheaper to insert
// into badger's memtable and to compare, whatever the persistence ids look
// like. The id of a persistence id is assigned by the store when the first
// event of the persistence id is written, and stored in the same transaction
// as that event, in both directions. Event keys end with the sequence
// number as 8 big-endian bytes, so that byte order is sequence order and a
// replay is one forward iterator scan. Snapshot keys spell out the
// persistence id (its length as a uvarint, then its bytes, so that ids that
// are prefixes of each other never mix), which keeps the snapshot store
// independent of the journal's ids.
//
//	meta      0x00 "format"                         -> format version (1 byte)
//	meta      0x00 "offset"                         -> next tag offset (8 BE)
//	event     0x01 id(8 BE) seq(8 BE)               -> event value
//	highest   0x02 id(8 BE)                         -> seq (8 BE), written by deletes
//	snapshot  0x03 uvarint(len(pid)) pid seq(8 BE)  -> snapshot value
//	tag       0x04 uvarint(len(tag)) tag offset(8)  -> crc32c(4) id(8 BE) seq(8 BE)
//	id        0x05 uvarint(len(pid)) pid            -> crc32c(4) id(8 BE)
//	pid       0x06 id(8 BE)                         -> crc32c(4) pid
//
// Ids start at 1. The tag index holds one entry per tag of each tagged
// event; offsets are assigned by the writer in the order transactions are
// committed, so a tag's entries are in write order.
const (
	kindMeta     byte = 0x00
	kindEvent    byte = 0x01
	kindHighest  byte = 0x02
	kindSnapshot byte = 0x03
	kindTag      byte = 0x04
	kindID       byte = 0x05
	kindPID      byte = 0x06
)

// MaxPersistenceIDLen is the longest persistence id the store accepts, in
// bytes. Longer ids are rejected with persistence.ErrInvalidWrite.
const MaxPersistenceIDLen = 4096

// MaxTagLen is the longest tag the store accepts, in bytes. A write with a
// longer tag is rejected with persistence.ErrInvalidWrite.
const MaxTagLen = 1024

// formatVersion is the version of the key layout and value encodings. Open
// refuses a database written with another. Version 1 keyed events by the
// persistence id itself and had no tag index.
const formatVersion byte = 2

var (
	metaFormatKey = []byte{kindMeta, 'f', 'o', 'r', 'm', 'a', 't'}
	metaOffsetKey = []byte{kindMeta, 'o', 'f', 'f', 's', 'e', 't'}
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// eventKeyLen is the length of an event key.
const eventKeyLen = 1 + 8 + 8

// appendPrefix appends the key prefix of kind for pid, for the kinds keyed
// by the persistence id itself (snapshot, id).
func appendPrefix(dst []byte, kind byte, pid string) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(pid)))
	return append(dst, pid...)
}

// appendSeqKey appends the key of kind for pid and seq.
func appendSeqKey(dst []byte, kind byte, pid string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendPrefix(dst, kind, pid), seq)
}

// appendIDKey appends the key of kind (event, highest, pid) for the numeric id.
func appendIDKey(dst []byte, kind byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, kind), id)
}

// appendEventKey appends the key of the event of id and seq.
func appendEventKey(dst []byte, id, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendIDKey(dst, kindEvent, id), seq)
}

// appendTagKey appends the key of the tag index entry of tag at offset.
func appendTagKey(dst []byte, tag string, offset uint64) []byte {
	return binary.BigEndian.AppendUint64(appendPrefix(dst, kindTag, tag), offset)
}

// sealed returns crc32c(key, body) followed by body.
func sealed(key, body []byte) []byte {
	v := make([]byte, 4, 4+len(body))
	v = append(v, body...)
	binary.BigEndian.PutUint32(v, crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body))
	return v
}

// unseal checks a value written by sealed and returns its body.
func unseal(key, value []byte) ([]byte, error) {
	if len(value) < 4 {
		return nil, errMalformed
	}
	if crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, value[4:]) != binary.BigEndian.Uint32(value) {
		return nil, errChecksum
	}
	return value[4:], nil
}

// Value layout of an event (all integers big-endian or uvarint):
//
//	crc32c   4 bytes, over the key and then the rest of the value
//	version  1 byte (formatVersion)
//	time     8 bytes, Unix nanoseconds
//	manifest uvarint length, bytes
//	writer   uvarint length, bytes
//	tags     uvarint count, then per tag uvarint length, bytes
//	payload  the remaining bytes
//
// A snapshot value is the same without writer and tags. The checksum covers
// the key so that a value found under the wrong key is detected too.
const headerLen = 4 + 1 + 8

// eventSize is the exact encoded size of the key plus the value of r.
func eventSize(r *persistence.Record) int {
	n := eventKeyLen + headerLen + uvarintLen(len(r.Manifest)) + len(r.Manifest) +
		uvarintLen(len(r.WriterID)) + len(r.WriterID) + uvarintLen(len(r.Tags)) + len(r.Payload)
	for _, t := range r.Tags {
		n += uvarintLen(len(t)) + len(t)
	}
	return n
}

// appendEvent appends the key and then the value of r, stored under the
// persistence id's numeric id, to buf, and returns them. Given a buf with
// room for eventSize(r) more bytes it does not allocate.
func appendEvent(buf []byte, id uint64, r *persistence.Record, ts int64) (rest, key, value []byte) {
	start := len(buf)
	buf = appendEventKey(buf, id, r.SequenceNr)
	buf = append(buf, 0, 0, 0, 0, formatVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(ts))
	buf = appendString(buf, r.Manifest)
	buf = appendString(buf, r.WriterID)
	buf = binary.AppendUvarint(buf, uint64(len(r.Tags)))
	for _, t := range r.Tags {
		buf = appendString(buf, t)
	}
	buf = append(buf, r.Payload...)
	mid := start + eventKeyLen
	key, value = buf[start:mid:mid], buf[mid:len(buf):len(buf)]
	seal(key, value)
	return buf, key, value
}

// encodeSnapshot returns the key and value of s in one allocation.
func encodeSnapshot(s *persistence.Snapshot, ts int64) (key, value []byte) {
	pid := s.Metadata.PersistenceID
	keyLen := 1 + uvarintLen(len(pid)) + len(pid) + 8
	buf := make([]byte, 0, keyLen+headerLen+uvarintLen(len(s.Manifest))+len(s.Manifest)+len(s.Payload))
	buf = appendSeqKey(buf, kindSnapshot, pid, s.Metadata.SequenceNr)
	buf = append(buf, 0, 0, 0, 0, formatVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(ts))
	buf = appendString(buf, s.Manifest)
	buf = append(buf, s.Payload...)
	key, value = buf[:keyLen:keyLen], buf[keyLen:]
	seal(key, value)
	return key, value
}

// seal writes the checksum of key and value[4:] into value[:4].
func seal(key, value []byte) {
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, value[4:])
	binary.BigEndian.PutUint32(value, sum)
}

// errChecksum and errMalformed are the reasons given in CorruptRecordError.
var (
	errChecksum  = errors.New("checksum mismatch")
	errMalformed = errors.New("malformed value")
)

// openValue checks the value's checksum and version and returns the time
// stamp and the bytes after the header.
func openValue(key, value []byte) (ts int64, rest []byte, err error) {
	if len(value) < headerLen {
		return 0, nil, errMalformed
	}
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, value[4:])
	if sum != binary.BigEndian.Uint32(value) {
		return 0, nil, errChecksum
	}
	if value[4] != formatVersion {
		return 0, nil, errMalformed
	}
	return int64(binary.BigEndian.Uint64(value[5:])), value[headerLen:], nil
}

// eventDecoder decodes event values, reusing the strings of the previous
// record when they repeat (manifests and writer ids usually do).
type eventDecoder struct {
	manifest, writer string
}

// decode decodes the event of pid and seq stored under key. The record does
// not alias value.
func (d *eventDecoder) decode(pid string, seq uint64, key, value []byte) (persistence.Record, error) {
	ts, rest, err := openValue(key, value)
	if err != nil {
		return persistence.Record{}, err
	}
	r := persistence.Record{PersistenceID: pid, SequenceNr: seq, Timestamp: time.Unix(0, ts)}
	var b []byte
	if b, rest, err = readBytes(rest); err != nil {
		return persistence.Record{}, err
	}
	if string(b) != d.manifest {
		d.manifest = string(b)
	}
	r.Manifest = d.manifest
	if b, rest, err = readBytes(rest); err != nil {
		return persistence.Record{}, err
	}
	if string(b) != d.writer {
		d.writer = string(b)
	}
	r.WriterID = d.writer
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return persistence.Record{}, errMalformed
	}
	rest = rest[k:]
	if n > 0 {
		r.Tags = make([]string, n)
		for i := range r.Tags {
			if b, rest, err = readBytes(rest); err != nil {
				return persistence.Record{}, err
			}
			r.Tags[i] = string(b)
		}
	}
	if len(rest) > 0 {
		r.Payload = append([]byte(nil), rest...)
	}
	return r, nil
}

// decodeSnapshot decodes the snapshot of pid and seq stored under key.
func decodeSnapshot(pid string, seq uint64, key, value []byte) (persistence.Snapshot, error) {
	ts, rest, err := openValue(key, value)
	if err != nil {
		return persistence.Snapshot{}, err
	}
	s := persistence.Snapshot{Metadata: persistence.SnapshotMetadata{
		PersistenceID: pid, SequenceNr: seq, Timestamp: time.Unix(0, ts)}}
	var b []byte
	if b, rest, err = readBytes(rest); err != nil {
		return persistence.Snapshot{}, err
	}
	s.Manifest = string(b)
	if len(rest) > 0 {
		s.Payload = append([]byte(nil), rest...)
	}
	return s, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// readBytes reads a uvarint length and that many bytes.
func readBytes(b []byte) (field, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errMalformed
	}
	end := k + int(n)
	return b[k:end], b[end:], nil
}

func uvarintLen(n int) int {
	l := 1
	for x := uint64(n); x >= 0x80; x >>= 7 {
		l++
	}
	return l
}
