package badgerjournal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// Key layout. Every key starts with a kind byte. Keys of one persistence id
// continue with the id's length as a uvarint and the id's bytes, so that the
// keys of an id are contiguous and no id's keys share a prefix with another
// id's, whatever bytes the ids hold: "p" and "p\x00..." differ in their
// length byte. Event and snapshot keys end with the sequence number as 8
// big-endian bytes, so that byte order is sequence order and a replay is one
// forward iterator scan.
//
//	meta      0x00 "format"                        -> format version (1 byte)
//	event     0x01 uvarint(len(pid)) pid seq(8 BE) -> event value
//	highest   0x02 uvarint(len(pid)) pid           -> seq (8 BE), written by deletes
//	snapshot  0x03 uvarint(len(pid)) pid seq(8 BE) -> snapshot value
//
// Kind 0x04 is reserved for an index of events by tag.
const (
	kindMeta     byte = 0x00
	kindEvent    byte = 0x01
	kindHighest  byte = 0x02
	kindSnapshot byte = 0x03
)

// MaxPersistenceIDLen is the longest persistence id the store accepts, in
// bytes. Longer ids are rejected with persistence.ErrInvalidWrite.
const MaxPersistenceIDLen = 4096

// formatVersion is the version of the key layout and value encodings. Open
// refuses a database written with another.
const formatVersion byte = 1

var metaFormatKey = []byte{kindMeta, 'f', 'o', 'r', 'm', 'a', 't'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendPrefix appends the key prefix of kind for pid.
func appendPrefix(dst []byte, kind byte, pid string) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(pid)))
	return append(dst, pid...)
}

// appendSeqKey appends the key of kind for pid and seq.
func appendSeqKey(dst []byte, kind byte, pid string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendPrefix(dst, kind, pid), seq)
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
func eventSize(keyLen int, r *persistence.Record) int {
	n := keyLen + headerLen + uvarintLen(len(r.Manifest)) + len(r.Manifest) +
		uvarintLen(len(r.WriterID)) + len(r.WriterID) + uvarintLen(len(r.Tags)) + len(r.Payload)
	for _, t := range r.Tags {
		n += uvarintLen(len(t)) + len(t)
	}
	return n
}

// encodeEvent returns the key and value of r in one allocation.
func encodeEvent(r *persistence.Record, ts int64) (key, value []byte) {
	keyLen := 1 + uvarintLen(len(r.PersistenceID)) + len(r.PersistenceID) + 8
	buf := make([]byte, 0, eventSize(keyLen, r))
	buf = appendSeqKey(buf, kindEvent, r.PersistenceID, r.SequenceNr)
	buf = append(buf, 0, 0, 0, 0, formatVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(ts))
	buf = appendString(buf, r.Manifest)
	buf = appendString(buf, r.WriterID)
	buf = binary.AppendUvarint(buf, uint64(len(r.Tags)))
	for _, t := range r.Tags {
		buf = appendString(buf, t)
	}
	buf = append(buf, r.Payload...)
	key, value = buf[:keyLen:keyLen], buf[keyLen:]
	seal(key, value)
	return key, value
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
