package serialization

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxDepth is the deepest nesting of msgpack arrays and maps that Unmarshal
// accepts. It bounds the decoder's recursion on hostile input.
const MaxDepth = 64

// timestampExt is msgpack's predefined extension type for timestamps, the
// only extension Unmarshal accepts.
const timestampExt = -1

var errTruncated = errors.New("truncated input")

// checkWellFormed walks b without decoding it and reports whether it is
// exactly one msgpack value such that:
//   - every string, binary and extension length fits in the bytes that remain;
//   - every array or map declares no more elements than bytes remain (each
//     element takes at least one byte), so a decoder that preallocates a
//     container allocates at most len(b) elements, not the 2^32 a hostile
//     header may claim;
//   - nesting is at most MaxDepth deep;
//   - the only extension type is the timestamp (-1), with a valid length;
//   - no byte follows the value.
//
// It never allocates on the heap and runs in time linear in len(b).
func checkWellFormed(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty input")
	}
	// pending[k] counts the values still to read in the k-th open container;
	// pending[0] is the single top-level value.
	var backing [MaxDepth + 1]uint64
	pending := backing[:1]
	pending[0] = 1
	i := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if i >= len(b) {
			return errTruncated
		}
		c := b[i]
		i++

		var skip uint64     // payload bytes following the header
		var children uint64 // values nested in a container
		container := false
		var err error

		switch {
		case c <= 0x7f || c >= 0xe0: // positive and negative fixint
		case c <= 0x8f: // fixmap
			children, container = 2*uint64(c&0x0f), true
		case c <= 0x9f: // fixarray
			children, container = uint64(c&0x0f), true
		case c <= 0xbf: // fixstr
			skip = uint64(c & 0x1f)
		default:
			switch c {
			case 0xc0, 0xc2, 0xc3: // nil, false, true
			case 0xc1:
				return fmt.Errorf("reserved byte 0xc1 at %d", i-1)
			case 0xc4, 0xd9: // bin8, str8
				skip, i, err = readLen(b, i, 1)
			case 0xc5, 0xda: // bin16, str16
				skip, i, err = readLen(b, i, 2)
			case 0xc6, 0xdb: // bin32, str32
				skip, i, err = readLen(b, i, 4)
			case 0xc7, 0xc8, 0xc9: // ext8, ext16, ext32
				width := 1 << (c - 0xc7)
				skip, i, err = readLen(b, i, width)
				if err == nil {
					i, err = checkExt(b, i, skip)
				}
			case 0xcc, 0xd0: // uint8, int8
				skip = 1
			case 0xcd, 0xd1: // uint16, int16
				skip = 2
			case 0xca, 0xce, 0xd2: // float32, uint32, int32
				skip = 4
			case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
				skip = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
				skip = 1 << (c - 0xd4)
				i, err = checkExt(b, i, skip)
			case 0xdc: // array16
				children, i, err = readLen(b, i, 2)
				container = true
			case 0xdd: // array32
				children, i, err = readLen(b, i, 4)
				container = true
			case 0xde: // map16
				children, i, err = readLen(b, i, 2)
				children *= 2
				container = true
			case 0xdf: // map32
				children, i, err = readLen(b, i, 4)
				children *= 2
				container = true
			}
		}
		if err != nil {
			return err
		}
		remaining := uint64(len(b) - i)
		if skip > remaining {
			return errTruncated
		}
		i += int(skip)
		if container && children > 0 {
			if children > remaining {
				return fmt.Errorf("container at %d declares %d values but only %d bytes remain", i, children, remaining)
			}
			if len(pending) > MaxDepth {
				return fmt.Errorf("nesting deeper than %d", MaxDepth)
			}
			pending = append(pending, children)
		}
	}
	if i != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-i)
	}
	return nil
}

// readLen reads a big-endian length of width bytes at b[i:].
func readLen(b []byte, i, width int) (uint64, int, error) {
	if len(b)-i < width {
		return 0, i, errTruncated
	}
	switch width {
	case 1:
		return uint64(b[i]), i + 1, nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b[i:])), i + 2, nil
	default:
		return uint64(binary.BigEndian.Uint32(b[i:])), i + 4, nil
	}
}

// checkExt reads the extension type byte at b[i] and accepts only a timestamp
// of a valid length. It returns the index after the type byte.
func checkExt(b []byte, i int, size uint64) (int, error) {
	if i >= len(b) {
		return i, errTruncated
	}
	typ := int8(b[i])
	if typ != timestampExt {
		return i, fmt.Errorf("msgpack extension type %d is not accepted", typ)
	}
	if size != 4 && size != 8 && size != 12 {
		return i, fmt.Errorf("timestamp extension of %d bytes", size)
	}
	return i + 1, nil
}
