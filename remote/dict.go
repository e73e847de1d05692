package remote

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// User frames carry three header fields before the payload: the recipient (its path
// and uid in the receiving system), the sender (a full actor path, or absent) and the
// message's manifest. Each field is compressed with a per-connection dictionary of
// dictSize entries that the writer fills and the reader mirrors, so a steady stream
// names each actor and type once per connection. A field is one varint tag:
//
//	0        absent
//	2i+1     a literal string follows; the reader stores it as entry i, replacing
//	         what entry i held (i == dictSize: do not store it)
//	2i+2     entry i, defined earlier on this connection
//
// The writer alone decides which entry a new name replaces once all are in use (a
// clock sweep that spares recently used entries), and says so in the tag: the reader
// never evicts anything, so the two halves cannot disagree. A frame never replaces an
// entry that it names itself: the reader refuses such a frame as malformed.
//
// The reader also caches what it resolved each entry to, so the steady state looks up
// no actor and allocates nothing but the message itself.

// dictSize is the number of dictionary entries per connection.
const dictSize = 1024

// encSlot is one entry on the writer's side.
type encSlot struct {
	name   string
	ref    actor.Ref // the sender the entry was made for; zero for a plain string
	recent bool      // used since the clock hand last passed it
}

// undoRec records what an entry held before a definition replaced it.
type undoRec struct {
	slot uint32
	old  string // "" when the entry was empty
}

// encDict is the writer's half of the dictionary. It also keeps an undo log of its
// definitions since the start of the oldest frame that may still have to be written
// again (see userQueue), so that such frames can be read back.
type encDict struct {
	size  uint32 // entries: dictSize, set where a lane is made (0 means dictSize)
	strs  map[string]uint32
	refs  map[actor.Ref]uint32
	slots []encSlot
	hand  uint32
	frame [3]uint32 // entries the frame being written names
	named int
	undo  []undoRec

	// The entries used last, checked before the maps: a stream names the same
	// recipient, sender and type frame after frame.
	hotStr [2]hotEntry
	hotRef uint32 // entry index + 1 of the sender ref used last; 0 for none
	hotIdx int    // the hotStr slot to replace next
}

// hotEntry remembers which entry a string was found in.
type hotEntry struct {
	s string
	i uint32
}

func (d *encDict) capacity() uint32 {
	if d.size == 0 {
		return dictSize
	}
	return d.size
}

// clear empties the dictionary for a new connection.
func (d *encDict) clear() {
	clear(d.strs)
	clear(d.refs)
	d.slots, d.hand, d.named, d.undo = d.slots[:0], 0, 0, d.undo[:0]
	d.hotStr, d.hotRef = [2]hotEntry{}, 0
}

// startFrame begins a frame: its fields may replace any entry but those it names.
func (d *encDict) startFrame() { d.named = 0 }

func (d *encDict) name(i uint32) {
	if d.named < len(d.frame) {
		d.frame[d.named] = i
		d.named++
	}
}

func (d *encDict) namedInFrame(i uint32) bool {
	for _, j := range d.frame[:d.named] {
		if j == i {
			return true
		}
	}
	return false
}

// take returns the entry a new name goes into: the next unused one, or once all are in
// use the first the clock hand finds that was not used since it last passed and that
// the current frame does not name.
func (d *encDict) take() uint32 {
	size := d.capacity()
	if uint32(len(d.slots)) < size {
		d.slots = append(d.slots, encSlot{})
		return uint32(len(d.slots) - 1)
	}
	for {
		i := d.hand
		d.hand = (d.hand + 1) % size
		s := &d.slots[i]
		if d.namedInFrame(i) {
			continue
		}
		if s.recent {
			s.recent = false
			continue
		}
		if s.ref.IsZero() {
			if j, ok := d.strs[s.name]; ok && j == i {
				delete(d.strs, s.name)
			}
		} else {
			delete(d.refs, s.ref)
		}
		return i
	}
}

// define stores name (for sender ref, when not zero) in entry i.
func (d *encDict) define(i uint32, name string, ref actor.Ref) {
	s := &d.slots[i]
	d.undo = append(d.undo, undoRec{slot: i, old: s.name})
	*s = encSlot{name: name, ref: ref, recent: true}
	if ref.IsZero() {
		if d.strs == nil {
			d.strs = make(map[string]uint32)
		}
		d.strs[name] = i
	} else {
		if d.refs == nil {
			d.refs = make(map[actor.Ref]uint32)
		}
		d.refs[ref] = i
	}
	d.name(i)
}

// use appends a reference to entry i.
func (d *encDict) use(dst []byte, i uint32) []byte {
	d.slots[i].recent = true
	d.name(i)
	return binary.AppendUvarint(dst, 2*uint64(i)+2)
}

// appendStr appends s as a field.
func (d *encDict) appendStr(dst []byte, s string) []byte {
	for k := range d.hotStr {
		if h := &d.hotStr[k]; h.s == s && int(h.i) < len(d.slots) {
			if slot := &d.slots[h.i]; slot.name == s && slot.ref.IsZero() {
				return d.use(dst, h.i)
			}
		}
	}
	if i, ok := d.strs[s]; ok {
		d.hotStr[d.hotIdx] = hotEntry{s: s, i: i}
		d.hotIdx = (d.hotIdx + 1) % len(d.hotStr)
		return d.use(dst, i)
	}
	i := d.take()
	d.define(i, s, actor.Ref{})
	dst = binary.AppendUvarint(dst, 2*uint64(i)+1)
	return appendString(dst, s)
}

// appendLiteral appends s as a literal that defines no entry.
func (d *encDict) appendLiteral(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, 2*uint64(d.capacity())+1)
	return appendString(dst, s)
}

// appendRcpt appends a recipient as a field. A temporary actor (an ask's reply
// address) is sent as a literal: it is used once, and would only crowd the
// dictionary.
func (d *encDict) appendRcpt(dst []byte, rcpt string) []byte {
	if strings.HasPrefix(rcpt, tempPrefix) {
		return d.appendLiteral(dst, rcpt)
	}
	return d.appendStr(dst, rcpt)
}

// tempPrefix starts the path of every temporary actor.
const tempPrefix = "/temp/"

// appendRef appends a sender ref as a field. Temporary refs (asks) are sent as
// literals: each is used once, and would only crowd the dictionary. A ref whose path
// is longer than a field may be is sent as no sender: it cannot be a reply address.
// self is this system's address, and selfStr its string, the start of the full path
// of this system's actors.
func (d *encDict) appendRef(dst []byte, r actor.Ref, self actor.Address, selfStr string) []byte {
	if r.IsZero() {
		return append(dst, 0)
	}
	if h := d.hotRef; h != 0 && int(h) <= len(d.slots) && d.slots[h-1].ref == r {
		return d.use(dst, h-1)
	}
	if i, ok := d.refs[r]; ok {
		d.hotRef = i + 1
		return d.use(dst, i)
	}
	if selfStr != "" && r.IsLocal() && r.Address() == self {
		if path := r.Path(); strings.HasPrefix(path, tempPrefix) {
			// An ask's reply address: its full path goes straight into the frame,
			// as Ref.URI would spell it, without making the string.
			var digits [20]byte
			uid := strconv.AppendUint(digits[:0], r.UID(), 10)
			n := len(selfStr) + len(path) + 1 + len(uid)
			if n > maxStringLen {
				return append(dst, 0)
			}
			dst = binary.AppendUvarint(dst, 2*uint64(d.capacity())+1)
			dst = binary.AppendUvarint(dst, uint64(n))
			dst = append(append(append(append(dst, selfStr...), path...), '#'), uid...)
			return dst
		}
	}
	uri := r.URI()
	if len(uri) > maxStringLen {
		return append(dst, 0)
	}
	if isTempURI(uri) {
		return d.appendLiteral(dst, uri)
	}
	i := d.take()
	d.define(i, uri, r)
	dst = binary.AppendUvarint(dst, 2*uint64(i)+1)
	return appendString(dst, uri)
}

// tableAt returns the entries as they were after the first k definitions of the undo
// log: the current entries with the later definitions undone. "" is an empty entry.
func (d *encDict) tableAt(k int) []string {
	t := make([]string, d.capacity())
	for i, s := range d.slots {
		t[i] = s.name
	}
	for j := len(d.undo) - 1; j >= k; j-- {
		t[d.undo[j].slot] = d.undo[j].old
	}
	return t
}

// forget drops the first k definitions from the undo log: the frames they belong to
// will not be written again.
func (d *encDict) forget(k int) {
	n := copy(d.undo, d.undo[k:])
	d.undo = d.undo[:n]
}

// isTempURI reports whether a full actor path names a temporary actor (an ask).
func isTempURI(uri string) bool {
	rest := strings.TrimPrefix(uri, actor.Scheme+"://")
	i := strings.IndexByte(rest, '/')
	return i >= 0 && strings.HasPrefix(rest[i:], tempPrefix)
}

// userFields are the header fields of one queued user frame, read back with a table.
type userFields struct {
	rcpt, sender, manifest string
	temp                   bool // the sender is a literal that defined no entry
	payload                []byte
	trace                  []byte // the trace block of a traced frame, else nil
}

// readBack parses a user frame body that this side wrote, resolving its fields with
// table (the entries as they were when it was written) and applying its definitions
// to table. ok is false for a body that is not a well-formed user frame.
func readBack(body []byte, table []string) (f userFields, ok bool) {
	block, fields, ok := userFieldsAt(body)
	if !ok {
		return f, false
	}
	f.trace = block
	d := decoder{b: fields}
	size := uint64(len(table))
	var out [3]string
	for k := range 3 {
		tag := d.uvarint("field")
		if d.err != nil {
			return f, false
		}
		if tag == 0 {
			continue
		}
		i := (tag - 1) / 2
		if tag%2 == 0 {
			if i >= size {
				return f, false
			}
			out[k] = table[i]
			continue
		}
		s := d.string("field", maxStringLen)
		switch {
		case d.err != nil || i > size:
			return f, false
		case i == size:
			f.temp = k == 1
		default:
			table[i] = s
		}
		out[k] = s
	}
	f.rcpt, f.sender, f.manifest, f.payload = out[0], out[1], out[2], d.b
	return f, f.rcpt != "" && f.manifest != ""
}

// decEntry is one dictionary entry on the reader's side, with what it resolved to.
type decEntry struct {
	s       string
	defined bool
	temp    bool      // a literal that defined no entry: valid for its frame only
	ref     actor.Ref // the recipient or sender it names, once resolved
	cached  bool
	refused error // why the sender it names is refused, once decided
}

// decDict is the reader's half of the dictionary.
type decDict struct {
	size    uint64 // entries: dictSize, set where a connection is read (0 means dictSize)
	e       []decEntry
	scratch [3]decEntry // the literals of the current frame that define no entry
	named   [3]uint64   // the entries the current frame names
	n       int
}

// read parses field k of a frame. It returns nil for an absent field; the entry it
// returns for a literal that defines no entry is valid until the next frame.
func (d *decDict) read(dec *decoder, k int, what string) *decEntry {
	tag := dec.uvarint(what)
	if dec.err != nil || tag == 0 {
		return nil
	}
	size := d.size
	if size == 0 {
		size = dictSize
	}
	i := (tag - 1) / 2
	if i > size {
		dec.fail(what)
		return nil
	}
	if tag%2 == 0 {
		if i >= uint64(len(d.e)) || !d.e[i].defined {
			dec.fail(what + " entry")
			return nil
		}
		d.named[d.n] = i
		d.n++
		return &d.e[i]
	}
	s := dec.string(what, maxStringLen)
	if dec.err != nil {
		return nil
	}
	if i == size {
		d.scratch[k] = decEntry{s: s, defined: true, temp: true}
		return &d.scratch[k]
	}
	for _, j := range d.named[:d.n] {
		if j == i {
			dec.fail(what + " replacing an entry its frame names")
			return nil
		}
	}
	if i >= uint64(len(d.e)) {
		d.e = append(d.e, make([]decEntry, int(i)+1-len(d.e))...)
	}
	d.e[i] = decEntry{s: s, defined: true}
	d.named[d.n] = i
	d.n++
	return &d.e[i]
}

// userHeader is a parsed user frame without its payload.
type userHeader struct {
	rcpt, sender, manifest *decEntry
	payload                []byte
	trace                  trace.SpanContext // of a traced frame; invalid otherwise
}

func parseUser(body []byte, dict *decDict) (userHeader, error) {
	block, fields, ok := userFieldsAt(body)
	if !ok {
		return userHeader{}, fmt.Errorf("%w: traced frame shorter than its trace block", errMalformed)
	}
	h := userHeader{}
	if block != nil {
		sc, err := tracewire.Parse(block)
		if err != nil {
			return userHeader{}, fmt.Errorf("%w: %w", errMalformed, err)
		}
		h.trace = sc
	}
	d := decoder{b: fields}
	dict.n = 0
	h.rcpt = dict.read(&d, 0, "recipient")
	h.sender = dict.read(&d, 1, "sender")
	h.manifest = dict.read(&d, 2, "manifest")
	if d.err != nil {
		return userHeader{}, d.err
	}
	if h.rcpt == nil || h.manifest == nil {
		return userHeader{}, fmt.Errorf("%w: user frame without recipient or manifest", errMalformed)
	}
	h.payload = d.b
	return h, nil
}
