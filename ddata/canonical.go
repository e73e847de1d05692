package ddata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// msgpack's encoder sorts only maps keyed by strings with string, bool or interface
// values; any other map in a user's value would encode in Go's random map order.
// canonicalize rewrites an encoded value so that the entries of every map are in the
// order of their encoded keys, which makes the encoding a function of the value.

const maxCanonicalDepth = 64

var errCanonTruncated = errors.New("truncated msgpack value")

// msgHeader describes the msgpack item at b[i].
type msgHeader struct {
	hdr      int    // header bytes
	payload  uint64 // payload bytes after the header (strings, binaries, numbers, extensions)
	children uint64 // nested values (arrays: elements, maps: keys and values)
	isMap    bool
}

func readHeader(b []byte, i int) (msgHeader, error) {
	if i >= len(b) {
		return msgHeader{}, errCanonTruncated
	}
	c := b[i]
	be := func(w int) (uint64, error) {
		if len(b)-i-1 < w {
			return 0, errCanonTruncated
		}
		switch w {
		case 1:
			return uint64(b[i+1]), nil
		case 2:
			return uint64(binary.BigEndian.Uint16(b[i+1:])), nil
		}
		return uint64(binary.BigEndian.Uint32(b[i+1:])), nil
	}
	h := msgHeader{hdr: 1}
	var err error
	switch {
	case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
	case c <= 0x8f:
		h.children, h.isMap = 2*uint64(c&0x0f), true
	case c <= 0x9f:
		h.children = uint64(c & 0x0f)
	case c <= 0xbf:
		h.payload = uint64(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		h.hdr = 2
		h.payload, err = be(1)
	case c == 0xc5 || c == 0xda:
		h.hdr = 3
		h.payload, err = be(2)
	case c == 0xc6 || c == 0xdb:
		h.hdr = 5
		h.payload, err = be(4)
	case c == 0xc7, c == 0xc8, c == 0xc9:
		w := 1 << (c - 0xc7)
		h.hdr = 1 + w + 1
		h.payload, err = be(w)
	case c == 0xcc || c == 0xd0:
		h.payload = 1
	case c == 0xcd || c == 0xd1:
		h.payload = 2
	case c == 0xca || c == 0xce || c == 0xd2:
		h.payload = 4
	case c == 0xcb || c == 0xcf || c == 0xd3:
		h.payload = 8
	case c >= 0xd4 && c <= 0xd8:
		h.hdr, h.payload = 2, 1<<(c-0xd4)
	case c == 0xdc:
		h.hdr = 3
		h.children, err = be(2)
	case c == 0xdd:
		h.hdr = 5
		h.children, err = be(4)
	case c == 0xde:
		h.hdr, h.isMap = 3, true
		h.children, err = be(2)
		h.children *= 2
	case c == 0xdf:
		h.hdr, h.isMap = 5, true
		h.children, err = be(4)
		h.children *= 2
	default:
		return h, fmt.Errorf("msgpack byte 0x%x", c)
	}
	if err != nil {
		return h, err
	}
	if uint64(len(b)-i) < uint64(h.hdr)+h.payload {
		return h, errCanonTruncated
	}
	return h, nil
}

// scanValue returns the end of the value at b[i] and whether it holds a map.
func scanValue(b []byte, i, depth int) (end int, hasMap bool, err error) {
	if depth > maxCanonicalDepth {
		return 0, false, fmt.Errorf("msgpack nesting deeper than %d", maxCanonicalDepth)
	}
	h, err := readHeader(b, i)
	if err != nil {
		return 0, false, err
	}
	end = i + h.hdr + int(h.payload)
	hasMap = h.isMap
	if h.children > uint64(len(b)) {
		return 0, false, errCanonTruncated
	}
	for range h.children {
		var m bool
		if end, m, err = scanValue(b, end, depth+1); err != nil {
			return 0, false, err
		}
		hasMap = hasMap || m
	}
	return end, hasMap, nil
}

// canonicalize returns b with every map's entries sorted by encoded key; b itself
// when it holds no map.
func canonicalize(b []byte) ([]byte, error) {
	end, hasMap, err := scanValue(b, 0, 0)
	if err != nil {
		return nil, err
	}
	if !hasMap {
		return b, nil
	}
	out, _, err := rewrite(nil, b[:end], 0)
	return out, err
}

// rewrite appends the canonical form of the value at b[i] to dst.
func rewrite(dst, b []byte, i int) ([]byte, int, error) {
	h, err := readHeader(b, i)
	if err != nil {
		return nil, 0, err
	}
	head := i + h.hdr + int(h.payload)
	dst = append(dst, b[i:head]...)
	j := head
	if !h.isMap {
		for range h.children {
			if dst, j, err = rewrite(dst, b, j); err != nil {
				return nil, 0, err
			}
		}
		return dst, j, nil
	}
	type entry struct{ key, kv []byte }
	entries := make([]entry, 0, h.children/2)
	for range h.children / 2 {
		var kv []byte
		if kv, j, err = rewrite(nil, b, j); err != nil {
			return nil, 0, err
		}
		klen := len(kv)
		if kv, j, err = rewrite(kv, b, j); err != nil {
			return nil, 0, err
		}
		entries = append(entries, entry{key: kv[:klen], kv: kv})
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	for _, e := range entries {
		dst = append(dst, e.kv...)
	}
	return dst, j, nil
}
