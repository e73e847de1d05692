package remote

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"

	"github.com/troupe-go/troupe/internal/tracewire"
)

// pipe drives a userQueue as an outbound lane does and decodes what it writes as the
// other side does: one decDict per connection. It records what arrived.
type pipe struct {
	t       testing.TB
	q       userQueue
	dec     decDict
	size    uint32
	sent    []userFields // in order; arrived or lost
	next    int          // the first of sent not yet accounted for
	batch   []byte       // taken, not yet written
	arrived int
	lost    int
}

func newPipe(t testing.TB, size uint32) *pipe {
	p := &pipe{t: t, size: size}
	p.q.dict.size = size
	p.dec.size = uint64(size)
	return p
}

// send queues a frame.
func (p *pipe) send(rcpt, sender, manifest string, temp bool) {
	f := userFields{rcpt: rcpt, sender: sender, manifest: manifest, temp: temp && sender != "",
		payload: []byte(strconv.Itoa(len(p.sent)))}
	if len(p.sent)%3 == 1 { // every third frame is traced: restarts keep its context
		f.trace = tracewire.Append(nil, testSpanContext(len(p.sent), len(p.sent)%2 == 0))
	}
	p.q.buf = p.q.addFields(p.q.buf, f)
	p.q.frames++
	p.sent = append(p.sent, f)
}

// take hands the queue to the writer.
func (p *pipe) take() {
	if p.batch != nil {
		p.t.Fatal("take with a batch in flight")
	}
	p.batch, _ = p.q.take(nil)
}

// write writes the batch whole to the current connection.
func (p *pipe) write() {
	p.deliver(p.batch)
	p.batch = nil
}

// cut writes the first n bytes of the batch and breaks the connection; the writer
// restarts on a new one.
func (p *pipe) cut(n int) {
	n = min(n, len(p.batch))
	p.deliver(p.batch[:n])
	reached := framesBefore(p.batch, n)
	if reached > framesWithin(p.batch, n) {
		p.next++ // the frame the cut went through is lost
		p.lost++
	}
	if lost := p.q.restart(p.batch, n); lost != reached {
		p.t.Fatalf("restart reports %d frames lost, %d were reached", lost, reached)
	}
	p.batch = nil
	p.dec = decDict{size: uint64(p.size)}
}

// idleBreak breaks the connection while the writer holds no batch.
func (p *pipe) idleBreak() {
	if p.batch != nil {
		p.write()
	}
	if lost := p.q.restart(nil, 0); lost != 0 {
		p.t.Fatalf("restart of an idle lane lost %d", lost)
	}
	p.dec = decDict{size: uint64(p.size)}
}

// deliver decodes the whole frames of b and checks each is the next one sent.
func (p *pipe) deliver(b []byte) {
	for len(b) >= frameHeaderLen {
		n := frameHeaderLen + int(binary.BigEndian.Uint32(b))
		if n > len(b) {
			return
		}
		if b[frameHeaderLen] == kindFlush {
			b = b[n:] // defines nothing; not a message
			continue
		}
		h, err := parseUser(b[frameHeaderLen:n], &p.dec)
		if err != nil {
			p.t.Fatalf("frame %d: %v", p.next, err)
		}
		if p.next >= len(p.sent) {
			p.t.Fatalf("more frames arrived than were sent")
		}
		want := p.sent[p.next]
		got := userFields{rcpt: h.rcpt.s, manifest: h.manifest.s, payload: h.payload}
		if h.trace.IsValid() {
			got.trace = tracewire.Append(nil, &h.trace)
		}
		if h.sender != nil {
			got.sender, got.temp = h.sender.s, h.sender.temp
		}
		if got.rcpt != want.rcpt || got.sender != want.sender || got.manifest != want.manifest ||
			got.temp != want.temp || string(got.payload) != string(want.payload) || string(got.trace) != string(want.trace) {
			p.t.Fatalf("frame %d arrived as %+v, sent as %+v", p.next, got, want)
		}
		p.next++
		p.arrived++
		b = b[n:]
	}
}

// framesBefore counts the user frames that start in the first n bytes of b.
func framesBefore(b []byte, n int) int {
	frames := 0
	for off := 0; off < n && off+frameHeaderLen <= len(b); {
		if isUserKind(b[off+frameHeaderLen]) {
			frames++
		}
		off += frameHeaderLen + int(binary.BigEndian.Uint32(b[off:]))
	}
	return frames
}

// finish writes everything and checks that every frame arrived or was counted lost.
func (p *pipe) finish() {
	if p.batch != nil {
		p.write()
	}
	p.take()
	p.write()
	if p.next != len(p.sent) || p.arrived+p.lost != len(p.sent) {
		p.t.Fatalf("%d sent, %d arrived, %d lost", len(p.sent), p.arrived, p.lost)
	}
}

func TestQueuedFramesAreRewrittenForANewConnection(t *testing.T) {
	p := newPipe(t, 0)
	for i := range 3 {
		p.send("/user/a#1", "", "test.Ping", false)
		if i == 0 {
			p.take()
			p.write() // the first went out on the old connection
		}
	}
	p.idleBreak()
	p.finish()
}

// Far more names than entries cross one connection: the writer replaces entries and
// says so, and every frame arrives with its own fields, across broken connections.
func TestDictionaryReplacesEntriesWhenFull(t *testing.T) {
	p := newPipe(t, 8)
	for i := range 200 {
		p.send("/user/r"+strconv.Itoa(i%37), "troupe://a@h:1/user/s"+strconv.Itoa(i%23), "m"+strconv.Itoa(i%5), i%7 == 0)
		switch i % 50 {
		case 10:
			p.take()
		case 20:
			p.cut(7) // inside the batch's first frame
		case 30:
			p.take()
			p.write()
		case 40:
			p.idleBreak()
		}
	}
	p.finish()
	if len(p.q.dict.slots) != 8 {
		t.Errorf("%d entries in use", len(p.q.dict.slots))
	}
}

// The frame that names an entry is never the one that replaces it, on either side.
func TestAFrameNeverReplacesAnEntryItNames(t *testing.T) {
	var enc encDict
	enc.size = 4
	var buf []byte
	for i := range 4 {
		enc.startFrame()
		buf = enc.appendStr(buf, fmt.Sprint(i))
	}
	// Every entry is recently used; the frame names entry 0 and needs two new ones:
	// the clock must skip entry 0 though it clears its bit.
	enc.startFrame()
	buf = enc.appendStr(buf[:0], "0")
	buf = enc.appendStr(buf, "x")
	_ = enc.appendStr(buf, "y")
	if i := enc.strs["0"]; i != 0 {
		t.Fatalf("entry of 0 = %d", i)
	}
	if enc.strs["x"] == 0 || enc.strs["y"] == 0 {
		t.Fatalf("a new name replaced the entry its frame names: %v", enc.strs)
	}

	// A frame that names entry 0 and then defines it is refused.
	dec := decDict{size: 4}
	body := []byte{kindUser}
	body = appendString(binary.AppendUvarint(body, 1), "a") // defines 0
	body = append(body, 0)
	body = appendString(binary.AppendUvarint(body, 3), "m") // defines 1
	if _, err := parseUser(body, &dec); err != nil {
		t.Fatal(err)
	}
	bad := []byte{kindUser}
	bad = binary.AppendUvarint(bad, 2)                    // names 0
	bad = append(bad, 0)                                  // no sender
	bad = appendString(binary.AppendUvarint(bad, 1), "b") // defines 0 again
	if _, err := parseUser(bad, &dec); err == nil {
		t.Fatal("a frame that replaces an entry it names was accepted")
	}
}

// The three literals of one frame that define no entry keep their own values.
func TestLiteralsThatDefineNoEntryDoNotAlias(t *testing.T) {
	body := []byte{kindUser}
	for _, s := range []string{"/user/r", "troupe://a@h:1/user/s", "test.M"} {
		body = appendString(binary.AppendUvarint(body, 2*dictSize+1), s)
	}
	var dec decDict
	h, err := parseUser(body, &dec)
	if err != nil {
		t.Fatal(err)
	}
	if h.rcpt.s != "/user/r" || h.sender.s != "troupe://a@h:1/user/s" || h.manifest.s != "test.M" {
		t.Fatalf("fields %q %q %q", h.rcpt.s, h.sender.s, h.manifest.s)
	}
}

func TestIsTempURI(t *testing.T) {
	for uri, want := range map[string]bool{
		"troupe://a@127.0.0.1:1/temp/$3#3":   true,
		"troupe://a/temp/$x":                 true,
		"troupe://a@127.0.0.1:1/user/temp/x": false,
		"troupe://a@127.0.0.1:1/user/a#5":    false,
	} {
		if got := isTempURI(uri); got != want {
			t.Errorf("isTempURI(%q) = %v", uri, got)
		}
	}
}
