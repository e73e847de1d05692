package remote

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// connect dials the peer and runs the handshake. The lane's queue is reset first, so
// the connection starts with an empty dictionary.
func (l *outLane) connect() (net.Conn, *bufio.Reader, error) {
	r := l.p.r
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.HandshakeTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if r.isBlocked(l.p.addr) {
		return nil, nil, errBlocked
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", l.p.addr.HostPort())
	if err != nil {
		if r.isClosed() {
			return nil, nil, ErrClosed
		}
		return nil, nil, err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if r.cfg.TLS != nil {
		cfg := r.cfg.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = l.p.addr.Host
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("tls: %w", err)
		}
		conn = tc
	}
	br := bufio.NewReaderSize(conn, 4096)
	uid, err := l.handshake(conn, br)
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	if !l.p.observe(uid) {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("peer incarnation %d is quarantined", uid)
	}
	l.mu.Lock()
	l.conn = conn
	l.mu.Unlock()
	if r.isClosed() {
		_ = conn.Close()
		return nil, nil, ErrClosed
	}
	return conn, br, nil
}

// handshake runs the dialer's side and returns the peer's uid.
func (l *outLane) handshake(conn net.Conn, br *bufio.Reader) (uint64, error) {
	r := l.p.r
	h := hello{version: protocolVersion, lane: l.lane, from: r.self, fromUID: r.uid, to: l.p.self}
	_, _ = rand.Read(h.nonce[:])
	if _, err := conn.Write(appendHello(nil, h)); err != nil {
		return 0, err
	}
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		return 0, fmt.Errorf("reading welcome: %w", err)
	}
	w, err := parseWelcome(body)
	if err != nil {
		return 0, err
	}
	switch {
	case w.version != protocolVersion:
		return 0, fmt.Errorf("%w: protocol version %d, want %d", ErrHandshakeRejected, w.version, protocolVersion)
	case w.addr != l.p.self:
		return 0, fmt.Errorf("%w: the peer is %s, not %s", ErrHandshakeRejected, sanitize(w.addr), l.p.self)
	case w.uid == 0:
		return 0, fmt.Errorf("%w: zero uid", errMalformed)
	case !checkMAC(r.cfg.Secret, roleAcceptor, h.nonce, w.uid, w.mac):
		return 0, fmt.Errorf("%w: the peer does not know the shared secret", ErrHandshakeRejected)
	}
	if _, err := conn.Write(appendProof(nil, handshakeMAC(r.cfg.Secret, roleDialer, w.nonce, r.uid))); err != nil {
		return 0, err
	}
	return w.uid, nil
}

// maxHandshakeFrame bounds handshake frames, whatever MaxFrameSize is.
const maxHandshakeFrame = 3*maxStringLen + 256
