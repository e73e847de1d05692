package remote

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// inConn is an accepted connection after its handshake.
type inConn struct {
	conn net.Conn
	uid  uint64        // the peer incarnation, once known
	from actor.Address // the peer, once known
}

// inboundState is the system-lane receive state for one peer incarnation: the next
// sequence number it expects. It outlives connections, so a resend after a reconnect
// is recognised as a duplicate.
type inboundState struct {
	mu   sync.Mutex
	next uint64
}

func (r *Remote) acceptLoop() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			r.log.Warn("accept failed", zap.Error(err))
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.done:
				return
			}
			continue
		}
		ic := &inConn{conn: c}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			_ = c.Close()
			return
		}
		r.inbound[ic] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serveInbound(ic)
	}
}

// serveInbound runs the acceptor's side of the handshake and then reads frames until
// the connection ends. A malformed frame closes this connection only.
func (r *Remote) serveInbound(ic *inConn) {
	defer r.wg.Done()
	defer func() {
		_ = ic.conn.Close()
		r.mu.Lock()
		delete(r.inbound, ic)
		r.mu.Unlock()
	}()
	remoteAddr := ic.conn.RemoteAddr().String()
	_ = ic.conn.SetDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
	conn := ic.conn
	if r.cfg.TLS != nil {
		tc := tls.Server(conn, r.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			r.reject(remoteAddr, fmt.Errorf("tls: %w", err))
			return
		}
		conn = tc
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	h, p, err := r.acceptHandshake(conn, br)
	if err != nil {
		r.reject(remoteAddr, err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	r.mu.Lock()
	ic.uid, ic.from = h.fromUID, p.addr
	_, quarantined := r.quarantined[h.fromUID]
	_, blocked := r.blocked[p.addr]
	r.mu.Unlock()
	if quarantined || blocked || r.isClosed() {
		return
	}
	in := &inbound{r: r, p: p, conn: conn, uid: h.fromUID}
	fr := frameReader{br: br, max: r.cfg.MaxFrameSize}
	if h.lane == laneSystem {
		in.state = r.inboundStateFor(h.fromUID)
	}
	err = in.read(&fr, br)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), r.isClosed():
	case errors.Is(err, errMalformed):
		r.stats.rejected.Add(1)
		r.rejectLog.log(r.log, "closing connection after a malformed frame", zap.String("peer", p.self), zap.String("remote", remoteAddr), zap.Error(err))
	default:
		r.log.Info("inbound connection ended", zap.String("peer", p.self), zap.Error(err))
	}
}

func (r *Remote) reject(remoteAddr string, err error) {
	r.stats.rejected.Add(1)
	if !r.isClosed() {
		r.rejectLog.log(r.log, "inbound connection refused", zap.String("remote", remoteAddr), zap.Error(err))
	}
}

// acceptHandshake reads a hello, answers, and checks the proof. On a refusal it tells
// the dialer why (except for a wrong secret, which gets no detail).
func (r *Remote) acceptHandshake(conn net.Conn, br *bufio.Reader) (hello, *peer, error) {
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		return hello{}, nil, fmt.Errorf("reading hello: %w", err)
	}
	h, err := parseHello(body)
	if err != nil {
		return hello{}, nil, err
	}
	refuse := func(reason string) (hello, *peer, error) {
		_, _ = conn.Write(appendReject(nil, reason))
		return hello{}, nil, fmt.Errorf("%w: %s", ErrHandshakeRejected, reason)
	}
	from, err := actor.ParseAddress(h.from)
	switch {
	case h.version != protocolVersion:
		return refuse(fmt.Sprintf("protocol version %d, want %d", h.version, protocolVersion))
	case h.to != r.self:
		return refuse(fmt.Sprintf("this is %s, not %s", r.self, sanitize(h.to)))
	case err != nil || !from.HasHost():
		return refuse("bad sender address")
	case from == r.addr:
		return refuse("sender claims this system's own address")
	case h.fromUID == 0:
		return refuse("zero uid")
	case r.isQuarantined(h.fromUID):
		return refuse("this incarnation is quarantined; restart it")
	case r.isBlocked(from):
		return hello{}, nil, errBlocked
	}
	w := welcome{version: protocolVersion, addr: r.self, uid: r.uid, mac: handshakeMAC(r.cfg.Secret, roleAcceptor, h.nonce, r.uid)}
	_, _ = rand.Read(w.nonce[:])
	if _, err := conn.Write(appendWelcome(nil, w)); err != nil {
		return hello{}, nil, err
	}
	body, err = fr.next()
	if err != nil {
		return hello{}, nil, fmt.Errorf("reading proof: %w", err)
	}
	mac, err := parseProof(body)
	if err != nil {
		return hello{}, nil, err
	}
	if !checkMAC(r.cfg.Secret, roleDialer, w.nonce, h.fromUID, mac) {
		return hello{}, nil, fmt.Errorf("%w: %s does not know the shared secret", ErrHandshakeRejected, from)
	}
	p, err := r.peerFor(from)
	if err != nil {
		return hello{}, nil, err
	}
	if !p.observe(h.fromUID) {
		return hello{}, nil, fmt.Errorf("%w: incarnation %d of %s is quarantined", ErrHandshakeRejected, h.fromUID, from)
	}
	return h, p, nil
}

func (r *Remote) inboundStateFor(uid uint64) *inboundState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.inState[uid]
	if st == nil {
		st = &inboundState{next: 1}
		r.inState[uid] = st
	}
	return st
}

// inbound reads one accepted connection.
type inbound struct {
	r     *Remote
	p     *peer
	conn  net.Conn
	uid   uint64
	dict  decDict
	codec *serialization.Codec
	state *inboundState // system lane only
	out   []byte        // control frames to send back
}

func (in *inbound) read(fr *frameReader, br *bufio.Reader) error {
	r := in.r
	lastAck := uint64(0)
	for {
		body, err := fr.next()
		if err != nil {
			return err
		}
		r.stats.msgsIn.Add(1)
		r.stats.bytesIn.Add(uint64(len(body) + frameHeaderLen))
		switch body[0] {
		case kindUser:
			err = in.deliverUser(body)
		case kindSystem:
			err = in.deliverSystem(body)
		case kindHeartbeat:
			in.out = appendControl(in.out, kindHeartbeatRsp, r.uid)
		default:
			err = fmt.Errorf("%w: unexpected frame kind %d", errMalformed, body[0])
		}
		if err != nil {
			return err
		}
		if br.Buffered() > 0 {
			continue
		}
		// The batch is consumed: acknowledge and answer before blocking on the next.
		if in.state != nil {
			in.state.mu.Lock()
			ack := in.state.next - 1
			in.state.mu.Unlock()
			if ack != lastAck {
				in.out = appendControl(in.out, kindAck, ack)
				lastAck = ack
			}
		}
		if len(in.out) > 0 {
			_ = in.conn.SetWriteDeadline(time.Now().Add(r.cfg.HandshakeTimeout))
			if _, err := in.conn.Write(in.out); err != nil {
				return err
			}
			in.out = in.out[:0]
		}
	}
}

// deliverUser decodes a user message and hands it to its recipient. A message that
// cannot be decoded (an unknown type) is dropped with a log line; the connection
// stays up.
func (in *inbound) deliverUser(body []byte) error {
	r := in.r
	h, err := parseUser(body, &in.dict)
	if err != nil {
		return err
	}
	rcpt, found := in.recipient(h.rcpt)
	var sender actor.Ref
	if h.sender != nil {
		if !h.sender.cached {
			h.sender.ref, err = r.refFromURI(h.sender.s)
			if err != nil {
				return fmt.Errorf("%w: sender %q: %v", errMalformed, sanitize(h.sender.s), err)
			}
			h.sender.cached = true
		}
		sender = h.sender.ref
	}
	if in.codec == nil {
		in.codec = r.cfg.Registry.NewCodec(r)
	}
	msg, err := in.codec.Decode(h.manifest.s, h.payload)
	if err != nil {
		r.stats.deadLetters.Add(1)
		r.dropLog.log(r.log, "inbound message dropped", zap.String("peer", in.p.self), zap.String("recipient", sanitize(h.rcpt.s)), zap.Error(err))
		return nil
	}
	if !found {
		r.stats.deadLetters.Add(1)
		r.host.DeadLetter(actor.Ref{}, msg, sender, fmt.Errorf("%w: %s", actor.ErrNotFound, sanitize(h.rcpt.s)))
		return nil
	}
	// A local delivery error means a full bounded mailbox, which has already handled
	// the message as its policy says.
	_ = rcpt.Send(msg, sender)
	return nil
}

// recipient resolves the recipient field, caching refs that name one incarnation.
func (in *inbound) recipient(e *decEntry) (actor.Ref, bool) {
	if e.cached {
		return e.ref, true
	}
	ref, err := in.r.sys.Resolve(e.s)
	if err != nil {
		return actor.Ref{}, false
	}
	if ref.UID() != 0 && e != &in.dict.scratch {
		// Only a path with a uid stays valid: without one, a later actor at the path
		// is another recipient.
		_, _, uid, _ := actor.ParsePath(e.s)
		if uid != 0 {
			e.ref, e.cached = ref, true
		}
	}
	return ref, true
}

// deliverSystem applies a sequenced system message once, in order.
func (in *inbound) deliverSystem(body []byte) error {
	if in.state == nil {
		return fmt.Errorf("%w: system message on the user lane", errMalformed)
	}
	seq, m, err := parseSystem(body)
	if err != nil {
		return err
	}
	in.state.mu.Lock()
	fresh := seq == in.state.next
	if fresh {
		in.state.next++
	}
	in.state.mu.Unlock()
	if fresh {
		in.apply(m)
	}
	return nil
}

func (in *inbound) apply(m sysMessage) {
	r, p := in.r, in.p
	switch m.op {
	case opWatch, opUnwatch:
		watcher, err := r.refFromURI(m.other)
		if err != nil || watcher.IsLocal() {
			r.log.Warn("bad watcher in a watch request", zap.String("peer", p.self), zap.String("watcher", sanitize(m.other)))
			return
		}
		watchee, err := r.sys.Resolve(m.target)
		if m.op == opUnwatch {
			if err == nil {
				p.watchedByPeer(watchee, watcher, false)
				r.host.Unwatch(watchee, watcher)
			}
			return
		}
		if err != nil {
			// Already gone: answer as a local dead actor would.
			rp, _ := r.host.Remote(watcher)
			rr := rp.(remoteRef)
			rr.peer.sys.sendSystem(sysMessage{op: opDeath, target: rr.wire, other: r.self + m.target})
			return
		}
		p.watchedByPeer(watchee, watcher, true)
		r.host.Watch(watchee, watcher)
	case opDeath:
		watcher, err := r.sys.Resolve(m.target)
		if err != nil {
			return // the watcher is gone too
		}
		p.deathOf(watcher, m.other, m.addressTerminated)
	case opStop:
		if target, err := r.sys.Resolve(m.target); err == nil {
			_ = r.sys.Stop(target)
		}
	}
}
