package remote

import (
	"bufio"
	"container/list"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/syslane"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// Undecodable is the Message of a dead letter for a message this system received but
// could not decode: its type is not registered here, its bytes are not a valid
// encoding of that type, or a ref inside it was refused. The dead letter's Reason
// says which.
type Undecodable struct {
	// Manifest is the name the message's type was sent under.
	Manifest string
	// Size is the size of its encoding, in bytes.
	Size int
}

// inConn is an accepted connection.
type inConn struct {
	conn    net.Conn
	pending *list.Element // in Remote.pending until the handshake completes
	evicted bool          // closed to admit a newer connection (guarded by Remote.mu)
	uid     uint64        // the peer incarnation, once known
	from    actor.Address // the peer, once known
	seq     int           // accept order
	frames  atomic.Uint64 // frames read (roughly), for a newer connection of the lane that waits
	done    chan struct{} // closed when its goroutine no longer delivers anything
}

// readerKey names a lane of a peer incarnation: one connection at a time is read for
// it. A peer dials a lane again when its connection has failed on its side, and
// sends on the new one the frames it did not write on the old; this side may still be
// reading frames written earlier from the old one. So the new connection's reader
// waits until the old one's has delivered them all and stopped: the frames reach
// their recipients in the order sent.
type readerKey struct {
	uid  uint64
	lane byte
}

// takeOverWait is how long the old connection's reader may read nothing before a
// new connection's reader, waiting for it to read to its end (which the peer closed),
// closes it: its end was lost with the network that broke the connection, and what
// it has not read yet is lost.
const takeOverWait = time.Second

// takeOver makes ic the connection read for its peer incarnation's lane, and waits
// until the reader of the connection it replaces has stopped. It reports false when
// ic is older than the connection read already (its handshake ended later: the peer
// has given it up), or when the transport closes meanwhile.
func (r *Remote) takeOver(ic *inConn, lane byte) bool {
	key := readerKey{ic.uid, lane}
	r.mu.Lock()
	prev := r.readers[key]
	if ic.evicted || prev != nil && prev.seq > ic.seq {
		r.mu.Unlock()
		return false
	}
	r.readers[key] = ic
	r.mu.Unlock()
	if prev == nil {
		return true
	}
	t := time.NewTicker(takeOverWait)
	defer t.Stop()
	tick, read := t.C, prev.frames.Load()
	for {
		select {
		case <-prev.done:
			return true
		case <-tick:
			if n := prev.frames.Load(); n != read {
				read = n // still reading: wait on
				continue
			}
			_ = prev.conn.Close()
			tick = nil // its reader ends now, with what it had read
			r.connectLog.info(r.log, "an old connection read nothing for a while after its peer connected again; closed, what it had not read is lost",
				zap.Stringer("peer", ic.from), zap.Uint8("lane", lane), zap.Duration("waited", takeOverWait))
		case <-r.done:
			return false
		}
	}
}

// readerDone records that ic is no longer read.
func (r *Remote) readerDone(ic *inConn, lane byte) {
	key := readerKey{ic.uid, lane}
	r.mu.Lock()
	if r.readers[key] == ic {
		delete(r.readers, key)
	}
	r.mu.Unlock()
}

// inboundState is the system-lane receive state for one peer incarnation. It outlives
// connections, so a resend after a reconnect is recognised as a duplicate.
type inboundState struct {
	mu sync.Mutex
	rx syslane.Receiver
}

// handshakeBuffer is the read buffer of a connection before its handshake completes:
// small, since a stranger can hold many such connections. A hello fits; a larger
// handshake frame is read into a buffer of its own size.
const handshakeBuffer = 512

// readBuffer is the read buffer of a connection after its handshake.
const readBuffer = 64 << 10

func (r *Remote) acceptLoop() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.isClosed() || errors.Is(err, net.ErrClosed) {
				return
			}
			r.rejectLog.log(r.log, "accept failed", zap.Error(err))
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.done:
				return
			}
			continue
		}
		ic := &inConn{conn: c, done: make(chan struct{})}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			_ = c.Close()
			return
		}
		r.inbound[ic] = struct{}{}
		r.accepted++
		ic.seq = r.accepted
		ic.pending = r.pending.PushBack(ic)
		var oldest *inConn
		if r.pending.Len() > r.cfg.MaxPendingConnections {
			oldest = r.pending.Remove(r.pending.Front()).(*inConn)
			oldest.pending, oldest.evicted = nil, true
		}
		r.wg.Add(1)
		r.mu.Unlock()
		if oldest != nil {
			_ = oldest.conn.Close()
			r.stats.rejected.Add(1)
			r.rejectLog.log(r.log, "connection closed before its handshake to admit a newer one",
				zap.String("remote", oldest.conn.RemoteAddr().String()), zap.Int("pending", r.cfg.MaxPendingConnections))
		}
		go r.serveInbound(ic)
	}
}

// handshakeDone takes ic out of the pending connections.
func (r *Remote) handshakeDone(ic *inConn) {
	r.mu.Lock()
	if ic.pending != nil {
		r.pending.Remove(ic.pending)
		ic.pending = nil
	}
	r.mu.Unlock()
}

// serveInbound runs the acceptor's side of the handshake and then reads frames until
// the connection ends. A malformed frame closes this connection only.
func (r *Remote) serveInbound(ic *inConn) {
	defer r.wg.Done()
	defer func() {
		_ = ic.conn.Close()
		close(ic.done)
		r.handshakeDone(ic)
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
			r.mu.Lock()
			evicted := ic.evicted
			r.mu.Unlock()
			if !evicted {
				r.reject(remoteAddr, fmt.Errorf("tls: %w", err))
			}
			return
		}
		conn = tc
	}
	small := bufio.NewReaderSize(conn, handshakeBuffer)
	h, p, err := r.acceptHandshake(conn, small)
	if err != nil {
		r.mu.Lock()
		evicted := ic.evicted // counted and logged already
		r.mu.Unlock()
		if !evicted && !errors.Is(err, errProbed) {
			r.reject(remoteAddr, err)
		}
		return
	}
	r.handshakeDone(ic)
	_ = conn.SetDeadline(time.Time{})
	r.mu.Lock()
	ic.uid, ic.from = h.fromUID, p.addr
	_, quarantined := r.quarantined[h.fromUID]
	r.mu.Unlock()
	if quarantined || r.isClosed() {
		return
	}
	p.user.redialNow()
	p.sys.redialNow()
	in := &inbound{r: r, ic: ic, p: p, conn: conn, uid: h.fromUID, dict: decDict{size: dictSize}}
	br := bufio.NewReaderSize(small, readBuffer) // reads through small, which is empty after its first fill
	fr := frameReader{br: br, max: r.cfg.MaxFrameSize}
	if h.lane == laneSystem {
		in.state = r.inboundStateFor(h.fromUID)
	}
	if !r.takeOver(ic, h.lane) {
		return
	}
	defer r.readerDone(ic, h.lane)
	err = in.read(&fr, br)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), r.isClosed():
	case errors.Is(err, errMalformed):
		r.stats.rejected.Add(1)
		r.rejectLog.log(r.log, "closing connection after a malformed frame", zap.String("peer", p.self), zap.String("remote", remoteAddr), zap.Error(err))
	default:
		r.connectLog.info(r.log, "inbound connection ended", zap.String("peer", p.self), zap.Error(err))
	}
}

func (r *Remote) reject(remoteAddr string, err error) {
	r.stats.rejected.Add(1)
	switch {
	case r.isClosed():
	case errors.As(err, new(refusedQuarantined)), errors.Is(err, errNoHello):
		// The quarantine was logged when it happened; an incarnation that left or was
		// removed dials until it learns of it, and each refusal is counted only. A
		// connection closed before it sent a byte is a dialer that gave up (a node
		// shutting down) or a TCP probe of the port: counted only too.
		r.log.Debug("inbound connection refused", zap.String("remote", remoteAddr), zap.Error(err))
	default:
		r.rejectLog.log(r.log, "inbound connection refused", zap.String("remote", remoteAddr), zap.Error(err))
	}
}

// errNoHello is the error of an inbound connection closed before its hello began.
var errNoHello = errors.New("closed before its hello")

// refusedQuarantined is the error of a handshake refused because the dialler's
// incarnation is quarantined here.
type refusedQuarantined struct{ error }

func (e refusedQuarantined) Unwrap() error { return e.error }

// errProbed ends a probe-lane connection once its welcome is sent.
var errProbed = errors.New("remote: probe answered")

// acceptHandshake reads a hello, answers, and checks the proof and the claimed
// incarnation. On a refusal it tells the dialer why (except for a wrong secret, which
// gets no detail, and a wrong address, which does not learn this one).
func (r *Remote) acceptHandshake(conn net.Conn, br *bufio.Reader) (hello, *peer, error) {
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errNoHello
		}
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
	w := welcome{version: protocolVersion, addr: r.self, uid: r.uid, mac: handshakeMAC(r.cfg.Secret, roleAcceptor, h.nonce, r.uid)}
	_, _ = rand.Read(w.nonce[:])
	switch {
	case h.version != protocolVersion:
		return refuse(fmt.Sprintf("protocol version %d, want %d", h.version, protocolVersion))
	case h.to != r.self:
		return refuse("wrong address")
	case h.lane == laneProbe:
		// Someone checks which incarnation lives here: answer, and that is all.
		_, _ = conn.Write(appendWelcome(nil, w))
		return hello{}, nil, errProbed
	}
	from, err := actor.ParseAddress(h.from)
	switch {
	case err != nil || !from.HasHost():
		return refuse("bad sender address")
	case from == r.addr:
		return refuse("sender claims this system's own address")
	case h.fromUID == 0:
		return refuse("zero uid")
	case r.isQuarantined(h.fromUID):
		h, p, err := refuse(rejectQuarantined)
		return h, p, refusedQuarantined{err}
	}
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
	p, err := r.confirm(from, h.fromUID)
	if err != nil {
		return hello{}, nil, err
	}
	return h, p, nil
}

// confirm accepts incarnation uid as the system at from, an inbound connection's
// claim. A claim that is not the incarnation already known there is checked by
// dialling from and asking who lives there: a stranger cannot replace (quarantine) a
// live peer by claiming its address, nor make this system keep state for addresses
// where nobody answers.
func (r *Remote) confirm(from actor.Address, uid uint64) (*peer, error) {
	r.mu.Lock()
	p := r.peers[from]
	r.mu.Unlock()
	if p == nil || p.currentUID() != uid {
		live, err := r.verify(from)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: cannot confirm incarnation %d at %s: %w", ErrHandshakeRejected, uid, from, err)
		case live != uid:
			return nil, fmt.Errorf("%w: %s claims incarnation %d, but %d lives there", ErrHandshakeRejected, from, uid, live)
		}
		if p, err = r.peerFor(from); err != nil {
			return nil, err
		}
	}
	if !p.observe(uid) {
		return nil, fmt.Errorf("%w: incarnation %d of %s is quarantined", ErrHandshakeRejected, uid, from)
	}
	return p, nil
}

func (r *Remote) inboundStateFor(uid uint64) *inboundState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.inState[uid]
	if st == nil {
		st = &inboundState{}
		r.inState[uid] = st
	}
	return st
}

// ackEvery bounds the system frames read between two acknowledgements while the
// peer keeps the read buffer full.
const ackEvery = 256

// inbound reads one accepted connection.
type inbound struct {
	r       *Remote
	ic      *inConn
	p       *peer
	conn    net.Conn
	uid     uint64
	dict    decDict
	codec   *serialization.Codec
	state   *inboundState // system lane only
	out     []byte        // control frames to send back
	refused error         // a ref refused while decoding the current message
}

func (in *inbound) read(fr *frameReader, br *bufio.Reader) error {
	r := in.r
	lastAck := uint64(0)
	since := 0        // frames since the last answer
	read := uint64(0) // frames read
	for {
		body, err := fr.next()
		if err != nil {
			return err
		}
		r.stats.msgsIn.Add(1)
		r.stats.bytesIn.Add(uint64(len(body) + frameHeaderLen))
		if r.metrics != nil {
			in.p.stats.msgsIn.Add(1)
			in.p.stats.bytesIn.Add(uint64(len(body) + frameHeaderLen))
		}
		switch body[0] {
		case kindUser, kindTraced:
			err = in.deliverUser(body)
		case kindSystem:
			err = in.deliverSystem(body)
		case kindHeartbeat:
			in.out = appendControl(in.out, kindHeartbeatRsp, r.uid)
		case kindFlush:
			err = in.flush(body)
		default:
			err = fmt.Errorf("%w: unexpected frame kind %d", errMalformed, body[0])
		}
		if err != nil {
			return err
		}
		// Progress for a newer connection that waits (takeOver), published every 64
		// frames and when the buffer runs empty: an atomic per frame costs the stream.
		if read++; read%64 == 0 || br.Buffered() == 0 {
			in.ic.frames.Store(read)
		}
		// Answer once the batch read is consumed, before blocking on the next; at once
		// when an answer waits (a flush's, a heartbeat's: the buffer may never empty
		// while the peer streams); and on the system lane at least every ackEvery
		// frames.
		if since++; br.Buffered() > 0 && len(in.out) == 0 && (in.state == nil || since < ackEvery) {
			continue
		}
		since = 0
		if in.state != nil {
			in.state.mu.Lock()
			ack := in.state.rx.Acked()
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

// flush answers a flush frame on the user lane: every user message read before it has
// been handed to its recipient (see deathgate.go).
func (in *inbound) flush(body []byte) error {
	if in.state != nil {
		return fmt.Errorf("%w: flush on the system lane", errMalformed)
	}
	_, id, err := parseControl(body)
	if err != nil {
		return err
	}
	in.out = appendControl(in.out, kindFlushAck, id)
	return nil
}

// deliverUser decodes a user message and hands it to its recipient. A message that
// cannot be decoded, or whose sender is refused, goes to dead letters with a log line;
// the connection stays up.
func (in *inbound) deliverUser(body []byte) error {
	h, err := parseUser(body, &in.dict)
	if err != nil {
		return err
	}
	var sender actor.Ref
	if e := h.sender; e != nil {
		if !e.cached || e.refused != nil { // a refused sender may fit later
			ref, err := in.resolve(e.s)
			switch {
			case errors.Is(err, ErrRefusedSender):
				e.refused = err
			case err != nil:
				return fmt.Errorf("%w: sender %q: %v", errMalformed, sanitize(e.s), err)
			default:
				e.refused = nil
			}
			e.ref, e.cached = ref, true
		}
		sender = e.ref
	}
	rcpt := in.recipient(h.rcpt)
	if h.sender != nil && h.sender.refused != nil {
		in.drop(rcpt, Undecodable{Manifest: h.manifest.s, Size: len(h.payload)}, h.sender.refused)
		return nil
	}
	in.refused = nil
	msg, err := in.decode(h.manifest.s, h.payload)
	if err != nil {
		if in.refused != nil { // a ref inside was refused: say so (the decoder keeps only its text)
			err = fmt.Errorf("%w: %v", in.refused, err)
		}
		in.drop(rcpt, Undecodable{Manifest: h.manifest.s, Size: len(h.payload)}, err)
		return nil
	}
	// A local delivery error means a full bounded mailbox, which has already handled
	// the message as its policy says; a missing recipient publishes a dead letter.
	if h.trace.IsValid() {
		_ = in.r.host.SendTraced(rcpt, msg, sender, h.trace)
		return nil
	}
	_ = rcpt.Send(msg, sender)
	return nil
}

// drop sends an inbound message that cannot be delivered to dead letters, counts it
// and logs it at a bounded rate.
func (in *inbound) drop(rcpt actor.Ref, msg Undecodable, reason error) {
	r := in.r
	r.stats.deadLetters.Add(1)
	if errors.Is(reason, ErrRefusedSender) {
		r.stats.refusedSenders.Add(1)
		in.p.stats.refusedSenders.Add(1)
		r.senderLog.log(r.log, "inbound message dropped: its sender or a ref in it is refused", zap.String("peer", in.p.self),
			zap.Stringer("recipient", rcpt), zap.String("type", sanitize(msg.Manifest)), zap.Error(reason))
	} else {
		r.dropLog.log(r.log, "inbound message dropped", zap.String("peer", in.p.self),
			zap.Stringer("recipient", rcpt), zap.String("type", sanitize(msg.Manifest)), zap.Error(reason))
	}
	r.host.DeadLetter(rcpt, msg, actor.Ref{}, reason)
}

// decode decodes a payload: a registered type, or one of the runtime's messages.
func (in *inbound) decode(manifest string, payload []byte) (any, error) {
	if in.codec == nil {
		in.codec = in.r.cfg.Registry.NewCodec(inboundResolver{in})
	}
	return decodeAny(in.codec, inboundResolver{in}, manifest, payload)
}

// decodeAny decodes a payload with codec, or as one of the runtime's messages.
func decodeAny(codec *serialization.Codec, resolver serialization.RefResolver, manifest string, payload []byte) (any, error) {
	if isRuntimeManifest(manifest) {
		return decodeRuntime(manifest, payload, resolver)
	}
	return codec.Decode(manifest, payload)
}

// inboundResolver resolves the refs inside messages from the peer (see resolve).
type inboundResolver struct{ in *inbound }

// ReceivingSystem implements wirebatch.ReceivingSystem: batches of other packages decode
// their messages on the reader's goroutine with it.
func (i inboundResolver) ReceivingSystem() *actor.System { return i.in.r.sys }

func (i inboundResolver) ResolveRef(uri string) (actor.Ref, error) {
	ref, err := i.in.resolve(uri)
	if errors.Is(err, ErrRefusedSender) {
		i.in.refused = err
	}
	return ref, err
}

// resolve turns a full actor path from the peer into a Ref: a local actor (or an
// absentRef naming the path), an actor of the peer, or an actor of a third system. A
// third system not known yet counts against MaxUnverifiedPeers (ErrRefusedSender
// beyond it); nothing dials it until a message is sent to it.
func (in *inbound) resolve(uri string) (actor.Ref, error) {
	r := in.r
	addr, path, uid, err := actor.ParsePath(uri)
	switch {
	case err != nil:
		return actor.Ref{}, err
	case addr == r.addr:
		return r.localRef(path, uid), nil
	case addr == in.p.addr:
		return newRemoteRefIn(in.p, uri, path, uid).ref(), nil
	case !addr.HasHost():
		return actor.Ref{}, fmt.Errorf("%w: %s has no host", actor.ErrNotFound, addr)
	}
	p, err := r.admitUnverified(addr)
	if err != nil {
		return actor.Ref{}, err
	}
	return newRemoteRef(p, path, uid).ref(), nil
}

// recipient resolves the recipient field, caching refs that name one incarnation. A
// path where no actor lives gives an absentRef naming it.
func (in *inbound) recipient(e *decEntry) actor.Ref {
	if e.cached {
		return e.ref
	}
	path, uid := parseWire(e.s)
	ref, err := in.r.sys.Resolve(e.s)
	if err != nil {
		return absentRef{r: in.r, path: path, uid: uid}.ref()
	}
	if uid != 0 && ref.UID() != 0 && !e.temp {
		// Only a path with a uid stays valid: without one, a later actor at the path
		// is another recipient.
		e.ref, e.cached = ref, true
	}
	return ref
}

// parseWire splits a recipient as the wire names it, path#uid.
func parseWire(s string) (path string, uid uint64) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return s, 0
	}
	u, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return s, 0
	}
	return s[:i], u
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
	v := in.state.rx.Receive(seq)
	in.state.mu.Unlock()
	if v == syslane.Apply {
		in.apply(m)
	}
	return nil
}

func (in *inbound) apply(m sysMessage) {
	r, p := in.r, in.p
	switch m.op {
	case opWatch, opUnwatch:
		// A watcher lives in the system that asks.
		addr, _, _, err := actor.ParsePath(m.other)
		var watcher actor.Ref
		if err == nil && addr == p.addr {
			watcher, err = in.resolve(m.other)
		}
		if err != nil || addr != p.addr {
			r.dropLog.log(r.log, "bad watcher in a watch request", zap.String("peer", p.self), zap.String("watcher", sanitize(m.other)))
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
			rr.peer.deathNotice(sysMessage{op: opDeath, target: rr.wire, other: r.self + m.target})
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
	case opTerminating:
		p.retire(in.uid)
	}
}
