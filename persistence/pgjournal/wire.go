package pgjournal

import "encoding/binary"

// Array parameters in PostgreSQL's binary format.
//
// A group commit sends its writes as array parameters. pgx would encode
// them through reflection, element by element; the writer encodes them
// itself into one buffer per array, which takes a fraction of the time and
// no allocation per element. The format (array_send in PostgreSQL) is:
//
//	int32 dimensions (1, or 0 for an empty array)
//	int32 has-nulls flag
//	uint32 element type OID
//	int32 length, int32 lower bound (1)   only when dimensions is 1
//	per element: int32 byte length (-1 for NULL), then the bytes
//
// Elements are in their own binary format: bytea as is, int8 and int4 big
// endian, bool as one byte.

// OIDs of the element types.
const (
	oidBool  = 16
	oidBytea = 17
	oidInt8  = 20
	oidInt4  = 23
)

// arrayHeaderLen is the length of a one-dimensional array's header.
const arrayHeaderLen = 20

// array builds one array parameter.
type array struct {
	b       []byte
	n       int
	hasNull bool
	oid     uint32
}

// newArray starts an array of elements of type oid, with room for bytes of
// elements.
func newArray(oid uint32, bytes int) array {
	b := make([]byte, arrayHeaderLen, arrayHeaderLen+bytes)
	return array{b: b, oid: oid}
}

func (a *array) bytea(v []byte) {
	if v == nil {
		a.b = binary.BigEndian.AppendUint32(a.b, 0xffffffff)
		a.hasNull = true
	} else {
		a.b = binary.BigEndian.AppendUint32(a.b, uint32(len(v)))
		a.b = append(a.b, v...)
	}
	a.n++
}

func (a *array) int8(v int64) {
	a.b = binary.BigEndian.AppendUint32(a.b, 8)
	a.b = binary.BigEndian.AppendUint64(a.b, uint64(v))
	a.n++
}

func (a *array) int4(v int32) {
	a.b = binary.BigEndian.AppendUint32(a.b, 4)
	a.b = binary.BigEndian.AppendUint32(a.b, uint32(v))
	a.n++
}

func (a *array) bool(v bool) {
	a.b = binary.BigEndian.AppendUint32(a.b, 1)
	if v {
		a.b = append(a.b, 1)
	} else {
		a.b = append(a.b, 0)
	}
	a.n++
}

// value writes the header and returns the encoded parameter.
func (a *array) value() []byte {
	if a.n == 0 {
		b := a.b[:12]
		binary.BigEndian.PutUint32(b[0:], 0)
		binary.BigEndian.PutUint32(b[4:], 0)
		binary.BigEndian.PutUint32(b[8:], a.oid)
		return b
	}
	binary.BigEndian.PutUint32(a.b[0:], 1)
	var hasNull uint32
	if a.hasNull {
		hasNull = 1
	}
	binary.BigEndian.PutUint32(a.b[4:], hasNull)
	binary.BigEndian.PutUint32(a.b[8:], a.oid)
	binary.BigEndian.PutUint32(a.b[12:], uint32(a.n))
	binary.BigEndian.PutUint32(a.b[16:], 1)
	return a.b
}

// int8Param encodes a bigint parameter.
func int8Param(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
