package remote

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// The handshake, on every new connection:
//
//	dialer   -> hello   {version, lane, from address, from uid, to address, nonce}
//	acceptor -> welcome {version, address, uid, nonce, mac over the dialer's nonce}
//	            or reject {reason}
//	dialer   -> proof   {mac over the acceptor's nonce}
//
// With a shared secret each side proves it knows the secret by an HMAC-SHA256 over the
// other side's fresh nonce, so the secret never crosses the wire and a recorded
// handshake cannot be replayed. The acceptor reads no other frame before a valid proof.
//
// A dialer proves its address by living there: unless the acceptor already knows the
// incarnation it claims, the acceptor dials the claimed address on the probe lane
// (hello, welcome, nothing more) and accepts the claim only if the same uid answers.

const nonceLen = 16

// hello opens a connection.
type hello struct {
	version uint64
	lane    byte
	from    string // the dialer's address, troupe://sys@host:port
	fromUID uint64
	to      string // the address the dialer wants to reach
	nonce   [nonceLen]byte
}

// welcome accepts a hello.
type welcome struct {
	version uint64
	addr    string
	uid     uint64
	nonce   [nonceLen]byte
	mac     []byte
}

func appendHello(dst []byte, h hello) []byte {
	dst, start := beginFrame(dst, kindHello)
	dst = binary.AppendUvarint(dst, h.version)
	dst = append(dst, h.lane)
	dst = appendString(dst, h.from)
	dst = binary.BigEndian.AppendUint64(dst, h.fromUID)
	dst = appendString(dst, h.to)
	dst = append(dst, h.nonce[:]...)
	endFrame(dst, start)
	return dst
}

func parseHello(body []byte) (hello, error) {
	d := decoder{b: body}
	var h hello
	if d.byte("kind") != kindHello {
		return h, fmt.Errorf("%w: expected hello", errMalformed)
	}
	h.version = d.uvarint("version")
	h.lane = d.byte("lane")
	h.from = d.string("from", maxStringLen)
	h.fromUID = d.uint64("uid")
	h.to = d.string("to", maxStringLen)
	copy(h.nonce[:], d.fixed("nonce", nonceLen))
	if err := d.done(); err != nil {
		return hello{}, err
	}
	if h.lane != laneUser && h.lane != laneSystem && h.lane != laneProbe {
		return hello{}, fmt.Errorf("%w: unknown lane %d", errMalformed, h.lane)
	}
	return h, nil
}

func appendWelcome(dst []byte, w welcome) []byte {
	dst, start := beginFrame(dst, kindWelcome)
	dst = binary.AppendUvarint(dst, w.version)
	dst = appendString(dst, w.addr)
	dst = binary.BigEndian.AppendUint64(dst, w.uid)
	dst = append(dst, w.nonce[:]...)
	dst = binary.AppendUvarint(dst, uint64(len(w.mac)))
	dst = append(dst, w.mac...)
	endFrame(dst, start)
	return dst
}

// rejectQuarantined is the reason an acceptor gives a dialler whose incarnation it
// has quarantined; the dialler recognises it (errQuarantinedThere).
const rejectQuarantined = "this incarnation is quarantined; restart it"

// errQuarantinedThere marks a handshake the acceptor refused because it has
// quarantined this incarnation.
var errQuarantinedThere = errors.New(rejectQuarantined)

// parseWelcome parses a welcome, or returns the reason of a reject as an error
// (wrapping errQuarantinedThere when the acceptor quarantined this incarnation).
func parseWelcome(body []byte) (welcome, error) {
	d := decoder{b: body}
	var w welcome
	switch d.byte("kind") {
	case kindWelcome:
	case kindReject:
		reason := d.string("reason", maxStringLen)
		if reason == rejectQuarantined {
			return w, fmt.Errorf("%w: %w", ErrHandshakeRejected, errQuarantinedThere)
		}
		return w, fmt.Errorf("%w: %s", ErrHandshakeRejected, sanitize(reason))
	default:
		return w, fmt.Errorf("%w: expected welcome", errMalformed)
	}
	w.version = d.uvarint("version")
	w.addr = d.string("address", maxStringLen)
	w.uid = d.uint64("uid")
	copy(w.nonce[:], d.fixed("nonce", nonceLen))
	w.mac = d.bytes("mac", sha256.Size)
	return w, d.done()
}

func appendProof(dst []byte, mac []byte) []byte {
	dst, start := beginFrame(dst, kindProof)
	dst = binary.AppendUvarint(dst, uint64(len(mac)))
	dst = append(dst, mac...)
	endFrame(dst, start)
	return dst
}

func parseProof(body []byte) ([]byte, error) {
	d := decoder{b: body}
	if d.byte("kind") != kindProof {
		return nil, fmt.Errorf("%w: expected proof", errMalformed)
	}
	mac := d.bytes("mac", sha256.Size)
	return mac, d.done()
}

func appendReject(dst []byte, reason string) []byte {
	dst, start := beginFrame(dst, kindReject)
	dst = appendString(dst, reason)
	endFrame(dst, start)
	return dst
}

// handshakeMAC proves knowledge of secret: an HMAC over a role label, the other
// side's nonce and the prover's uid. Without a secret it is empty.
func handshakeMAC(secret []byte, role string, nonce [nonceLen]byte, uid uint64) []byte {
	if len(secret) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write(nonce[:])
	var u [8]byte
	binary.BigEndian.PutUint64(u[:], uid)
	m.Write(u[:])
	return m.Sum(nil)
}

// checkMAC reports whether got proves the secret; with no secret configured any
// proof is accepted, and with one an empty proof is not.
func checkMAC(secret []byte, role string, nonce [nonceLen]byte, uid uint64, got []byte) bool {
	if len(secret) == 0 {
		return true
	}
	return len(got) == sha256.Size && hmac.Equal(got, handshakeMAC(secret, role, nonce, uid))
}

// Roles bound into the MACs so that one side's proof cannot be reflected as the
// other's.
const (
	roleAcceptor = "troupe-acceptor"
	roleDialer   = "troupe-dialer"
)

// fixed reads exactly n bytes.
func (d *decoder) fixed(what string, n int) []byte {
	if len(d.b) < n {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// sanitize keeps untrusted text printable and short for logs and errors.
func sanitize(s string) string {
	const max = 200
	b := make([]byte, 0, min(len(s), max))
	for i := 0; i < len(s) && len(b) < max; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b = append(b, c)
	}
	return string(b)
}
