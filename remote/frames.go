package remote

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/actor"
)

// User frames carry three header fields before the payload: the recipient (its path
// and uid in the receiving system), the sender (a full actor path, or absent) and the
// message's manifest. Each field is compressed with a per-connection dictionary that
// the writer fills and the reader mirrors, so a steady stream names each actor and
// type once per connection. A field is one varint tag:
//
//	0        absent
//	2i+1     a literal string follows; the reader stores it as entry i
//	         (i == dictSize means: do not store it)
//	2i+2     entry i, defined earlier on this connection
//
// The reader also caches what it resolved each entry to, so the steady state looks up
// no actor and allocates nothing but the message itself.

// dictSize is the number of dictionary entries per connection.
const dictSize = 1024

// encDict is the writer's half of the dictionary.
type encDict struct {
	strs  map[string]uint32
	refs  map[actor.Ref]uint32
	names []string // entry -> string, to rewrite queued frames for a new connection
	next  uint32
}

// reset empties the dictionary for a new connection and rewrites queued, unwritten
// frames so that they refer only to entries they define themselves. It returns the
// rewritten frames, in place of queued.
func (d *encDict) reset(queued []byte) []byte {
	old := d.names
	clear(d.strs)
	clear(d.refs)
	d.names, d.next = nil, 0
	if len(queued) == 0 {
		return queued
	}
	out := make([]byte, 0, len(queued)+len(queued)/4)
	for len(queued) >= frameHeaderLen {
		n := frameHeaderLen + int(binary.BigEndian.Uint32(queued))
		frame := queued[:n]
		queued = queued[n:]
		body := frame[frameHeaderLen:]
		if body[0] != kindUser {
			out = append(out, frame...)
			continue
		}
		dec := decoder{b: body[1:]}
		var start int
		out, start = beginFrame(out, kindUser)
		for f := 0; f < 3; f++ {
			tag := dec.uvarint("field")
			switch {
			case tag == 0:
				out = append(out, 0)
			case tag%2 == 0:
				out = d.appendStr(out, old[(tag-1)/2])
			case (tag-1)/2 == dictSize:
				out = binary.AppendUvarint(out, 2*dictSize+1)
				out = appendString(out, dec.string("field", maxStringLen))
			default:
				out = d.appendStr(out, dec.string("field", maxStringLen))
			}
		}
		out = append(out, dec.b...)
		endFrame(out, start)
	}
	return out
}

// take reserves the next entry, or returns dictSize when the dictionary is full.
func (d *encDict) take() uint32 {
	if d.next == dictSize {
		return dictSize
	}
	d.next++
	return d.next - 1
}

// appendStr appends s as a field.
func (d *encDict) appendStr(dst []byte, s string) []byte {
	if i, ok := d.strs[s]; ok {
		return binary.AppendUvarint(dst, 2*uint64(i)+2)
	}
	i := d.take()
	if i < dictSize {
		if d.strs == nil {
			d.strs = make(map[string]uint32)
		}
		d.strs[s] = i
		d.names = append(d.names, s)
	}
	dst = binary.AppendUvarint(dst, 2*uint64(i)+1)
	return appendString(dst, s)
}

// appendRef appends a sender ref as a field. Temporary refs (asks) are sent as
// literals: each is used once, and would only crowd the dictionary. A ref whose path
// is longer than a field may be is sent as no sender: it cannot be a reply address.
func (d *encDict) appendRef(dst []byte, r actor.Ref) []byte {
	if r.IsZero() {
		return append(dst, 0)
	}
	if i, ok := d.refs[r]; ok {
		return binary.AppendUvarint(dst, 2*uint64(i)+2)
	}
	uri := r.URI()
	if len(uri) > maxStringLen {
		return append(dst, 0)
	}
	i := uint32(dictSize)
	if !isTempURI(uri) {
		i = d.take()
	}
	if i < dictSize {
		if d.refs == nil {
			d.refs = make(map[actor.Ref]uint32)
		}
		d.refs[r] = i
		d.names = append(d.names, uri)
	}
	dst = binary.AppendUvarint(dst, 2*uint64(i)+1)
	return appendString(dst, uri)
}

// isTempURI reports whether a full actor path names a temporary actor (an ask).
func isTempURI(uri string) bool {
	rest := strings.TrimPrefix(uri, actor.Scheme+"://")
	i := strings.IndexByte(rest, '/')
	return i >= 0 && strings.HasPrefix(rest[i:], "/temp/")
}

// decEntry is one dictionary entry on the reader's side, with what it resolved to.
type decEntry struct {
	s       string
	defined bool
	ref     actor.Ref // the recipient or sender it names, once resolved
	cached  bool
}

// decDict is the reader's half of the dictionary.
type decDict struct {
	e       []decEntry
	scratch decEntry
}

// read parses a field. It returns nil for an absent field; the entry it returns is the
// scratch entry for literals that are not stored (do not cache into it beyond the
// frame).
func (d *decDict) read(dec *decoder, what string) *decEntry {
	tag := dec.uvarint(what)
	if dec.err != nil || tag == 0 {
		return nil
	}
	i := (tag - 1) / 2
	if i > dictSize {
		dec.fail(what)
		return nil
	}
	if tag%2 == 0 {
		if i >= uint64(len(d.e)) || !d.e[i].defined {
			dec.fail(what + " entry")
			return nil
		}
		return &d.e[i]
	}
	s := dec.string(what, maxStringLen)
	if dec.err != nil {
		return nil
	}
	if i == dictSize {
		d.scratch = decEntry{s: s, defined: true}
		return &d.scratch
	}
	if i >= uint64(len(d.e)) {
		d.e = append(d.e, make([]decEntry, int(i)+1-len(d.e))...)
	}
	d.e[i] = decEntry{s: s, defined: true}
	return &d.e[i]
}

// userHeader is a parsed user frame without its payload.
type userHeader struct {
	rcpt, sender, manifest *decEntry
	payload                []byte
}

func parseUser(body []byte, dict *decDict) (userHeader, error) {
	d := decoder{b: body[1:]}
	h := userHeader{}
	h.rcpt = dict.read(&d, "recipient")
	h.sender = dict.read(&d, "sender")
	h.manifest = dict.read(&d, "manifest")
	if d.err != nil {
		return userHeader{}, d.err
	}
	if h.rcpt == nil || h.manifest == nil {
		return userHeader{}, fmt.Errorf("%w: user frame without recipient or manifest", errMalformed)
	}
	h.payload = d.b
	return h, nil
}

// System-message operations.
const (
	opWatch   byte = 1 // target: the watchee (path#uid here); other: the watcher's URI
	opUnwatch byte = 2 // as opWatch
	opDeath   byte = 3 // target: the watcher (path#uid here); other: the dead actor's URI
	opStop    byte = 4 // target: the actor to stop (path#uid here); other: empty
)

// sysMessage is the payload of a system frame.
type sysMessage struct {
	op                byte
	target, other     string
	addressTerminated bool
}

// appendSystem appends a complete system frame.
func appendSystem(dst []byte, seq uint64, m sysMessage) []byte {
	dst, start := beginFrame(dst, kindSystem)
	dst = binary.AppendUvarint(dst, seq)
	dst = append(dst, m.op)
	dst = appendString(dst, m.target)
	dst = appendString(dst, m.other)
	flag := byte(0)
	if m.addressTerminated {
		flag = 1
	}
	dst = append(dst, flag)
	endFrame(dst, start)
	return dst
}

func parseSystem(body []byte) (uint64, sysMessage, error) {
	d := decoder{b: body[1:]}
	seq := d.uvarint("seq")
	m := sysMessage{op: d.byte("op")}
	m.target = d.string("target", maxStringLen)
	m.other = d.string("other", maxStringLen)
	flag := d.byte("flag")
	if err := d.done(); err != nil {
		return 0, sysMessage{}, err
	}
	if m.op < opWatch || m.op > opStop || flag > 1 || seq == 0 {
		return 0, sysMessage{}, fmt.Errorf("%w: system message op %d flag %d seq %d", errMalformed, m.op, flag, seq)
	}
	m.addressTerminated = flag == 1
	return seq, m, nil
}

// appendControl appends a control frame: an ack (n = seq), a heartbeat (no n) or a
// heartbeat response (n = uid).
func appendControl(dst []byte, kind byte, n uint64) []byte {
	dst, start := beginFrame(dst, kind)
	switch kind {
	case kindAck:
		dst = binary.AppendUvarint(dst, n)
	case kindHeartbeatRsp:
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	endFrame(dst, start)
	return dst
}

func parseControl(body []byte) (kind byte, n uint64, err error) {
	d := decoder{b: body}
	kind = d.byte("kind")
	switch kind {
	case kindAck:
		n = d.uvarint("seq")
	case kindHeartbeatRsp:
		n = d.uint64("uid")
	case kindHeartbeat:
	default:
		return 0, 0, fmt.Errorf("%w: unexpected frame kind %d", errMalformed, kind)
	}
	return kind, n, d.done()
}
