package remote

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The wire format. Every frame is a 4-byte big-endian body length followed by the body;
// the body's first byte is its kind. Variable integers are unsigned varints; strings
// are a varint length and the bytes.

// protocolVersion is exchanged in the handshake; peers with another version are
// rejected. Version 2 added the probe lane and the rule that a frame never replaces a
// dictionary entry it names; version 3 the flush frames of the user lane; version 4
// the system message that says a system shuts down (opTerminating); version 5 the
// traced user frames (kindTraced).
const protocolVersion = 5

// frameHeaderLen is the size of a frame's length prefix.
const frameHeaderLen = 4

// Frame kinds.
const (
	kindHello        byte = 1  // dialer -> acceptor: who I am, whom I want
	kindWelcome      byte = 2  // acceptor -> dialer: who I am, proof of the secret
	kindProof        byte = 3  // dialer -> acceptor: proof of the secret
	kindReject       byte = 4  // either way: why the handshake failed
	kindUser         byte = 10 // a user message
	kindSystem       byte = 11 // a sequenced system message
	kindAck          byte = 12 // acceptor -> dialer: system messages received up to seq
	kindHeartbeat    byte = 13 // dialer -> acceptor: are you there?
	kindHeartbeatRsp byte = 14 // acceptor -> dialer: yes, with my uid
	kindFlush        byte = 15 // dialer -> acceptor, user lane: acknowledge when all before me is delivered
	kindFlushAck     byte = 16 // acceptor -> dialer, user lane: the flush numbered n
	kindTraced       byte = 17 // a user message with its trace context (trace.go)
)

// Lanes: each peer gets one outbound connection per lane. A probe connection only
// asks which incarnation lives at an address: the acceptor answers its hello with a
// welcome and closes it.
const (
	laneUser   byte = 0
	laneSystem byte = 1
	laneProbe  byte = 2
)

// errMalformed marks a frame that does not follow the format: the connection that
// carried it is closed.
var errMalformed = errors.New("remote: malformed frame")

// frameReader reads length-prefixed frames from a buffered connection.
type frameReader struct {
	br      *bufio.Reader
	max     int
	scratch []byte
}

// next returns the next frame's body, valid until the following call. It fails for a
// length of zero or above max without reading the body.
func (r *frameReader) next() ([]byte, error) {
	hdr, err := r.br.Peek(frameHeaderLen)
	if err != nil {
		if err == io.EOF && len(hdr) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if n == 0 || n > r.max {
		return nil, fmt.Errorf("%w: frame length %d (maximum %d)", errMalformed, n, r.max)
	}
	if frameHeaderLen+n <= r.br.Size() {
		b, err := r.br.Peek(frameHeaderLen + n)
		if err != nil {
			return nil, unexpected(err)
		}
		_, _ = r.br.Discard(frameHeaderLen + n)
		return b[frameHeaderLen:], nil
	}
	_, _ = r.br.Discard(frameHeaderLen)
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	b := r.scratch[:n]
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, unexpected(err)
	}
	return b, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// beginFrame appends a frame header with a placeholder length and the kind, and
// returns the extended buffer and the frame's start.
func beginFrame(dst []byte, kind byte) ([]byte, int) {
	start := len(dst)
	return append(dst, 0, 0, 0, 0, kind), start
}

// endFrame fills in the length of the frame that starts at start.
func endFrame(b []byte, start int) {
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-frameHeaderLen))
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// decoder reads the fields of one frame body. The first error sticks; later reads
// return zero values, so a parse reads straight through and checks err once.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errMalformed, what)
	}
	d.b = nil
}

func (d *decoder) byte(what string) byte {
	if len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64(what string) uint64 {
	if len(d.b) < 8 {
		d.fail(what)
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// bytes returns a length-prefixed field of at most max bytes, aliasing the frame.
func (d *decoder) bytes(what string, max int) []byte {
	n := d.uvarint(what)
	if d.err != nil || n > uint64(max) || n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(what string, max int) string { return string(d.bytes(what, max)) }

// done fails if bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errMalformed, len(d.b))
	}
	return d.err
}

// maxStringLen bounds every string field (paths, addresses, manifests, reasons).
const maxStringLen = 4096
