package remote

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// outLane is one outbound connection to a peer and its queue. Senders append encoded
// frames to buf under mu; the lane's writer goroutine swaps buf out and writes it with
// one call, so frames batch by themselves whenever senders outpace the socket, and a
// lone frame is written as soon as the writer is free.
//
// The system lane also keeps every sequenced system message until the peer
// acknowledges it, and sends it again after a reconnect or when acks stall.
type outLane struct {
	p       *peer
	lane    byte
	wake    chan struct{}
	started atomic.Bool // the writer goroutine runs

	mu      sync.Mutex
	buf     []byte  // frames queued for the writer
	n       int     // user frames in buf
	dict    encDict // user lane: the writer's half of the dictionary
	scratch []byte  // user lane: a message's payload before its header is known
	codec   *serialization.Codec
	conn    net.Conn
	probe   bool // a send to a blocked peer asks the writer to look for a new incarnation

	// System lane only.
	seq     uint64       // last sequence number assigned
	unacked []sysPending // sent or not, not yet acknowledged, in sequence order
	sentTo  uint64       // highest seq written on the current connection
	acked   uint64
	ackedAt time.Time
}

type sysPending struct {
	seq   uint64
	frame []byte
}

func newOutLane(p *peer, lane byte) *outLane {
	return &outLane{p: p, lane: lane, wake: make(chan struct{}, 1)}
}

// signal wakes the lane's writer, starting it on first use: a peer that is only
// named (in a Ref) costs no goroutine until something is sent to it.
func (l *outLane) signal() {
	if !l.started.Load() && l.started.CompareAndSwap(false, true) {
		r := l.p.r
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return
		}
		r.wg.Add(1)
		r.mu.Unlock()
		go l.run()
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// headerReserve is the room a user frame's header may take: three fields of at most
// maxStringLen bytes with their tags. A payload must fit in MaxFrameSize minus this.
const headerReserve = 3*(maxStringLen+20) + frameHeaderLen + 1

// sendUser encodes a user message into the queue.
func (l *outLane) sendUser(rr remoteRef, msg any, sender actor.Ref) error {
	r := l.p.r
	if l.p.blocked.Load() {
		l.mu.Lock()
		l.probe = true
		l.mu.Unlock()
		l.signal()
		err := fmt.Errorf("%w: %s", ErrQuarantined, l.p.self)
		r.deadLetter(rr, msg, sender, err)
		return err
	}
	l.mu.Lock()
	if l.n >= r.cfg.OutboundQueueSize {
		l.mu.Unlock()
		err := fmt.Errorf("%w: %d messages queued for %s", ErrOverloaded, r.cfg.OutboundQueueSize, l.p.self)
		r.deadLetter(rr, msg, sender, err)
		return err
	}
	if l.codec == nil {
		l.codec = r.cfg.Registry.NewCodec(r)
	}
	manifest, payload, err := l.codec.Append(l.scratch[:0], msg)
	if err != nil {
		l.mu.Unlock()
		if errors.Is(err, serialization.ErrUnregistered) {
			err = fmt.Errorf("%w: %T", ErrUnregistered, msg)
		}
		r.refuse(rr, msg, sender, err)
		return err
	}
	l.scratch = payload
	if len(payload) > r.cfg.MaxFrameSize-headerReserve || len(rr.wire) > maxStringLen {
		l.mu.Unlock()
		err := fmt.Errorf("%w: %d bytes (maximum %d)", ErrFrameTooLarge, len(payload), r.cfg.MaxFrameSize-headerReserve)
		r.refuse(rr, msg, sender, err)
		return err
	}
	buf, start := beginFrame(l.buf, kindUser)
	buf = l.dict.appendStr(buf, rr.wire)
	buf = l.dict.appendRef(buf, sender)
	buf = l.dict.appendStr(buf, manifest)
	buf = append(buf, payload...)
	endFrame(buf, start)
	l.buf = buf
	l.n++
	first := l.n == 1
	l.mu.Unlock()
	if first {
		l.signal()
	}
	return nil
}

// sendSystem assigns the next sequence number to m and queues it for reliable
// delivery.
func (l *outLane) sendSystem(m sysMessage) {
	r := l.p.r
	l.mu.Lock()
	if len(l.unacked) >= r.cfg.SystemBufferSize {
		l.mu.Unlock()
		l.p.mu.Lock()
		uid := l.p.uid
		l.p.mu.Unlock()
		r.log.Error("system message buffer overflow", zap.String("peer", l.p.self), zap.Int("size", r.cfg.SystemBufferSize))
		if uid != 0 {
			l.p.quarantine(uid, "system message buffer overflow")
		}
		return
	}
	l.seq++
	l.unacked = append(l.unacked, sysPending{seq: l.seq, frame: appendSystem(nil, l.seq, m)})
	if len(l.unacked) == 1 {
		l.ackedAt = time.Now()
	}
	l.mu.Unlock()
	l.signal()
}

// sendControl queues a control frame (a heartbeat) on the system lane.
func (l *outLane) sendControl(kind byte) {
	l.mu.Lock()
	l.buf = appendControl(l.buf, kind, 0)
	l.mu.Unlock()
	l.signal()
}

// acknowledge drops system messages up to seq.
func (l *outLane) acknowledge(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq <= l.acked || seq > l.seq {
		return
	}
	i := 0
	for i < len(l.unacked) && l.unacked[i].seq <= seq {
		i++
	}
	l.unacked = append(l.unacked[:0], l.unacked[i:]...)
	l.acked, l.ackedAt = seq, time.Now()
}

// resendIfStale rewinds to the last ack when acks have stalled, so that the writer
// sends the unacknowledged messages again.
func (l *outLane) resendIfStale(now time.Time) {
	l.mu.Lock()
	stale := len(l.unacked) > 0 && now.Sub(l.ackedAt) >= l.p.r.cfg.SystemResendInterval && l.sentTo > l.acked
	if stale {
		l.sentTo, l.ackedAt = l.acked, now
	}
	l.mu.Unlock()
	if stale {
		l.signal()
	}
}

// dropUnacked forgets the system messages of an incarnation that is gone; the next
// incarnation starts at sequence 1.
func (l *outLane) dropUnacked() {
	l.mu.Lock()
	l.unacked, l.seq, l.sentTo, l.acked = nil, 0, 0, 0
	l.mu.Unlock()
}

// requeue puts back, ahead of the queue, the user frames of a failed batch that the
// write did not reach (written is how many bytes it did), and returns how many frames
// that was. A frame the failure cut is lost with those before it.
func (l *outLane) requeue(batch []byte, written int) int {
	if l.lane != laneUser {
		return 0
	}
	off := 0
	for off < written && off+frameHeaderLen <= len(batch) {
		off += frameHeaderLen + int(binary.BigEndian.Uint32(batch[off:]))
	}
	rest := batch[min(off, len(batch)):]
	frames := 0
	for i := 0; i+frameHeaderLen <= len(rest); i += frameHeaderLen + int(binary.BigEndian.Uint32(rest[i:])) {
		frames++
	}
	if frames == 0 {
		return 0
	}
	l.mu.Lock()
	l.buf = append(append(make([]byte, 0, len(rest)+len(l.buf)), rest...), l.buf...)
	l.n += frames
	l.mu.Unlock()
	return frames
}

// drop discards the queued user messages, counting them as dead letters.
func (l *outLane) drop() {
	l.mu.Lock()
	lost := l.n
	l.buf, l.n = l.dict.reset(nil), 0
	l.mu.Unlock()
	l.p.r.stats.deadLetters.Add(uint64(lost))
}

// shutdownDeadline bounds a write in progress when the transport closes: a peer that
// does not read cannot hold the shutdown up.
func (l *outLane) shutdownDeadline(d time.Duration) {
	if c := l.currentConn(); c != nil {
		_ = c.SetWriteDeadline(time.Now().Add(d))
	}
}

func (l *outLane) closeConn() {
	if c := l.currentConn(); c != nil {
		_ = c.Close()
	}
}

// currentConn returns the lane's connection, nil while it has none.
func (l *outLane) currentConn() net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

// take returns the bytes to write next, swapping in spare as the new queue.
func (l *outLane) take(spare []byte) (out []byte, frames int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, frames = l.buf, l.n
	l.buf, l.n = spare[:0], 0
	if l.lane == laneSystem {
		for _, m := range l.unacked {
			if m.seq > l.sentTo {
				out = append(out, m.frame...)
				frames++
				l.sentTo = m.seq
			}
		}
	}
	return out, frames
}

// pending reports whether the writer has something to do.
func (l *outLane) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buf) > 0 || l.probe || l.lane == laneSystem && len(l.unacked) > 0 && l.unacked[len(l.unacked)-1].seq > l.sentTo
}

// reset runs when a connection ends: user frames queued for it are rewritten for the
// next connection's dictionary, those in flight (inFlight) are lost, and system
// messages will be sent again.
func (l *outLane) reset(inFlight int) {
	l.mu.Lock()
	lost := inFlight
	l.buf = l.dict.reset(l.buf)
	l.conn = nil
	l.sentTo = l.acked
	l.mu.Unlock()
	if lost > 0 {
		l.p.r.stats.deadLetters.Add(uint64(lost))
		l.p.r.log.Info("messages lost with a broken connection", zap.String("peer", l.p.self), zap.Int("count", lost))
	}
}

// run is the lane's writer: it connects when there is something to send, writes
// batches, and reconnects with backoff when the connection fails.
func (l *outLane) run() {
	r := l.p.r
	defer r.wg.Done()
	backoff := r.cfg.ReconnectBackoffMin
	connected := false
	for {
		for !l.pending() {
			select {
			case <-l.wake:
			case <-r.done:
				return
			}
		}
		l.mu.Lock()
		l.probe = false
		l.mu.Unlock()
		conn, br, err := l.connect()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return
			}
			r.log.Info("connect failed", zap.String("peer", l.p.self), zap.Uint8("lane", l.lane), zap.Error(err), zap.Duration("retry_in", backoff))
			if l.p.blocked.Load() {
				l.drop() // queued for a quarantined incarnation
			}
			select {
			case <-time.After(backoff):
			case <-r.done:
				return
			}
			backoff = min(2*backoff, r.cfg.ReconnectBackoffMax)
			continue
		}
		if connected {
			r.stats.reconnects.Add(1)
		}
		connected = true
		backoff = r.cfg.ReconnectBackoffMin
		l.serve(conn, br)
	}
}

// serve writes batches until the connection fails or the transport closes. A reader
// goroutine takes acks and heartbeat responses, and notices a closed connection.
func (l *outLane) serve(conn net.Conn, br *bufio.Reader) {
	r := l.p.r
	readErr := make(chan error, 1)
	go func() { readErr <- l.readControl(br) }()
	var spare []byte
	for {
		out, frames := l.take(spare)
		if len(out) == 0 {
			spare = out
			select {
			case <-l.wake:
				continue
			case err := <-readErr:
				l.broken(conn, err, 0)
				return
			case <-r.done:
				// Write what was queued last (death notices of stopping actors).
				if out, frames := l.take(spare); len(out) > 0 {
					_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := conn.Write(out); err == nil {
						r.stats.msgsOut.Add(uint64(frames))
						r.stats.bytesOut.Add(uint64(len(out)))
					}
				}
				_ = conn.Close()
				<-readErr
				return
			}
		}
		if r.cfg.WriteTimeout > 0 {
			_ = conn.SetWriteDeadline(time.Now().Add(r.cfg.WriteTimeout))
		}
		if n, err := conn.Write(out); err != nil {
			_ = conn.Close()
			l.broken(conn, err, frames-l.requeue(out, n))
			<-readErr
			return
		}
		r.stats.msgsOut.Add(uint64(frames))
		r.stats.bytesOut.Add(uint64(len(out)))
		spare = out
	}
}

// broken closes a failed connection and resets the lane.
func (l *outLane) broken(conn net.Conn, err error, inFlight int) {
	_ = conn.Close()
	if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
		l.p.r.log.Info("connection lost", zap.String("peer", l.p.self), zap.Uint8("lane", l.lane), zap.Error(err))
	}
	if l.lane == laneUser {
		l.reset(inFlight)
		return
	}
	l.reset(0)
}

// readControl reads what the acceptor sends back: acks and heartbeat responses.
func (l *outLane) readControl(br *bufio.Reader) error {
	fr := frameReader{br: br, max: maxHandshakeFrame}
	for {
		body, err := fr.next()
		if err != nil {
			return err
		}
		kind, n, err := parseControl(body)
		if err != nil {
			return err
		}
		switch kind {
		case kindAck:
			l.acknowledge(n)
		case kindHeartbeatRsp:
			l.p.heartbeatFrom(n, time.Now())
		}
	}
}
