package remote

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// connect dials the peer and runs the handshake for the lane. Dials to a peer never
// reached take one of a bounded number of slots, so that refs to made-up systems
// cannot make this system dial without limit.
func (l *outLane) connect() (net.Conn, *bufio.Reader, error) {
	r := l.p.r
	if r.isClosed() {
		return nil, nil, ErrClosed
	}
	if l.p.currentUID() == 0 {
		select {
		case r.dialSlots <- struct{}{}:
			defer func() { <-r.dialSlots }()
		case <-r.done:
			return nil, nil, ErrClosed
		}
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	conn, err := r.dial(ctx, l.p.addr)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(conn, 4096)
	w, err := r.greet(conn, br, l.lane, l.p.self)
	if err != nil {
		_ = conn.Close()
		if errors.Is(err, errQuarantinedThere) {
			r.quarantinedBy(l.p.addr)
		}
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	if !l.p.observe(w.uid) {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("peer incarnation %d is quarantined", w.uid)
	}
	l.mu.Lock()
	l.conn, l.raw, l.written, l.failing = conn, newRawWriter(conn), 0, false
	l.mu.Unlock()
	if r.isClosed() {
		_ = conn.Close()
		return nil, nil, ErrClosed
	}
	return conn, br, nil
}

// dial opens a connection to addr through Config.Dial, with TLS when configured,
// within ctx (whose deadline it also sets on the connection).
func (r *Remote) dial(ctx context.Context, addr actor.Address) (net.Conn, error) {
	conn, err := r.cfg.Dial(ctx, "tcp", addr.HostPort())
	if err != nil {
		if r.isClosed() {
			return nil, ErrClosed
		}
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if r.cfg.TLS == nil {
		return conn, nil
	}
	cfg := r.cfg.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = addr.Host
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("tls: %w", err)
	}
	return tc, nil
}

// greet runs the dialler's side of the handshake on lane, towards the system that
// should be at to, and returns the acceptor's checked welcome. Except on the probe
// lane, it then proves the shared secret.
func (r *Remote) greet(conn net.Conn, br *bufio.Reader, lane byte, to string) (welcome, error) {
	h := hello{version: protocolVersion, lane: lane, from: r.self, fromUID: r.uid, to: to}
	_, _ = rand.Read(h.nonce[:])
	if _, err := conn.Write(appendHello(nil, h)); err != nil {
		return welcome{}, err
	}
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		return welcome{}, fmt.Errorf("reading welcome: %w", err)
	}
	w, err := parseWelcome(body)
	if err != nil {
		return welcome{}, err
	}
	switch {
	case w.version != protocolVersion:
		return welcome{}, fmt.Errorf("%w: protocol version %d, want %d", ErrHandshakeRejected, w.version, protocolVersion)
	case w.addr != to:
		return welcome{}, fmt.Errorf("%w: the peer is %s, not %s", ErrHandshakeRejected, sanitize(w.addr), to)
	case w.uid == 0:
		return welcome{}, fmt.Errorf("%w: zero uid", errMalformed)
	case !checkMAC(r.cfg.Secret, roleAcceptor, h.nonce, w.uid, w.mac):
		return welcome{}, fmt.Errorf("%w: the peer does not know the shared secret", ErrHandshakeRejected)
	}
	if lane == laneProbe {
		return w, nil
	}
	if _, err := conn.Write(appendProof(nil, handshakeMAC(r.cfg.Secret, roleDialer, w.nonce, r.uid))); err != nil {
		return welcome{}, err
	}
	return w, nil
}

// verification is a check, in progress or done, of which incarnation lives at an
// address; concurrent checks of one address share it.
type verification struct {
	done chan struct{}
	uid  uint64
	err  error
}

// verify dials addr and returns the uid of the incarnation that answers there: the
// proof an inbound connection's claim to be that incarnation needs. Checks of one
// address at a time share one dial; at most maxVerifyDials run at once.
func (r *Remote) verify(addr actor.Address) (uint64, error) {
	r.mu.Lock()
	if v, ok := r.verifying[addr]; ok {
		r.mu.Unlock()
		select {
		case <-v.done:
			return v.uid, v.err
		case <-r.done:
			return 0, ErrClosed
		}
	}
	v := &verification{done: make(chan struct{})}
	r.verifying[addr] = v
	r.mu.Unlock()
	v.uid, v.err = r.probe(addr)
	r.mu.Lock()
	delete(r.verifying, addr)
	r.mu.Unlock()
	close(v.done)
	return v.uid, v.err
}

// probe runs a handshake on the probe lane with addr and returns the acceptor's uid.
func (r *Remote) probe(addr actor.Address) (uint64, error) {
	select {
	case r.verifySlots <- struct{}{}:
		defer func() { <-r.verifySlots }()
	case <-r.done:
		return 0, ErrClosed
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	conn, err := r.dial(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	w, err := r.greet(conn, bufio.NewReaderSize(conn, 512), laneProbe, addr.String())
	if err != nil {
		return 0, err
	}
	return w.uid, nil
}

// maxHandshakeFrame bounds handshake frames, whatever MaxFrameSize is.
const maxHandshakeFrame = 3*maxStringLen + 256
