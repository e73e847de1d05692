package remote

import (
	"bufio"
	"encoding/binary"
	"net"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Writing a lane's connection. The frames to write go out as batches: a batch is
// everything queued when it is taken (l.out), and whoever holds l.writing writes it,
// from l.outOff on, with the lane's mutex released. Usually that is the lane's writer
// goroutine, which loops while there is something to write and parks on l.wake when
// there is not (l.parked), so frames queued during a write leave together in the next
// one: under load a write carries hundreds of frames.
//
// A hand-off to a parked goroutine costs a wake-up, which, between two processes, is
// much of a round trip. So a sender that finds the user lane idle (the writer parked,
// nothing in flight, and nothing written for idleBeforeDirect) writes the batch
// itself, with one write that never waits: the socket takes what fits, and whatever
// is left, or was queued meanwhile, is handed to the writer. A stream keeps the
// lane busy and so keeps the hand-off and its batching; a request that follows a
// pause is written by its sender.

// idleBeforeDirect is how long the user lane must have been idle before a sender
// writes to the socket itself: about the time a small write takes, below which the
// frames of a stream are better batched by the writer.
const idleBeforeDirect = 5 * time.Microsecond

// writeChunk bounds one blocking write call: WriteTimeout applies to each, and
// waiting senders get room as each completes.
const writeChunk = 256 << 10

// epoch is the origin of the lane's monotonic clock (see lastWrite).
var epoch = time.Now()

// monotonic returns nanoseconds since epoch, from the monotonic clock.
func monotonic() int64 { return int64(time.Since(epoch)) }

// rawWriter writes to a plain TCP connection without ever waiting for the socket.
// Only the holder of the lane's l.writing uses it.
type rawWriter struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // w.write, made once: a func value per call would allocate
	b  []byte
	n  int
}

// newRawWriter returns a rawWriter for a connection that gives its socket
// (syscall.Conn: a plain TCP connection, or one of Config.Dial's that passes its
// socket on); nil for other connections (TLS), which only the writer goroutine
// writes.
func newRawWriter(c net.Conn) *rawWriter {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawWriter{rc: rc}
	w.fn = w.write
	return w
}

// try writes what the socket takes of b at once, and returns how many bytes that
// was: 0 when the socket buffer is full, the connection is closed or broken, or its
// write deadline has passed. It never waits.
func (w *rawWriter) try(b []byte) int {
	w.b, w.n = b, 0
	_ = w.rc.Write(w.fn)
	w.b = nil
	return w.n
}

func (w *rawWriter) write(fd uintptr) bool {
	for {
		m, err := syscall.Write(int(fd), w.b)
		if err == syscall.EINTR {
			continue
		}
		if m > 0 {
			w.n = m
		}
		return true // done, whatever happened: never wait for the socket
	}
}

// takeLocked makes what is queued the batch to write next. The batch before it was
// written whole; its buffer becomes the new queue's.
func (l *outLane) takeLocked() {
	spare := l.out[:0]
	l.outOff = 0
	if l.lane == laneUser {
		l.out, l.outFrames = l.q.take(spare)
		l.inflight = len(l.out)
		return
	}
	l.out, l.ctrl, l.heartbeat = l.ctrl, spare, false
	l.outFrames = 0
	if l.sys != nil && l.sys.HasNext() {
		l.batch = l.sys.Next(time.Now(), l.batch[:0])
		for _, m := range l.batch {
			l.out = appendSystem(l.out, m.Seq, m.Msg)
			l.outFrames++
		}
		clear(l.batch)
	}
}

// claimLocked makes the caller the lane's writer when there is something to write and
// nobody writes: it takes a new batch if the last one is written, and reports whether
// there is one.
func (l *outLane) claimLocked() bool {
	if l.writing {
		return false
	}
	if l.outOff == len(l.out) {
		l.takeLocked()
	}
	if l.outOff == len(l.out) {
		return false
	}
	l.writing = true
	return true
}

// advanceLocked records that the holder of l.writing wrote n more bytes of the batch
// and gives l.writing up.
func (l *outLane) advanceLocked(n int) {
	l.writing = false
	l.outOff += n
	if n > 0 {
		l.p.r.stats.bytesOut.Add(uint64(n))
		if l.p.r.metrics != nil {
			l.p.stats.bytesOut.Add(uint64(n))
		}
	}
	if l.outOff == len(l.out) && l.outFrames > 0 {
		l.p.r.stats.msgsOut.Add(uint64(l.outFrames))
		if l.p.r.metrics != nil {
			l.p.stats.msgsOut.Add(uint64(l.outFrames))
		}
		l.written += uint64(l.outFrames)
		l.outFrames = 0
	}
	if l.lane == laneUser {
		l.lastWrite = monotonic()
	}
}

// wrote records n more bytes of the batch written: room for waiting senders.
func (l *outLane) wrote(n int) {
	if l.lane != laneUser || n == 0 {
		return
	}
	l.mu.Lock()
	l.wroteLocked(n)
	l.mu.Unlock()
}

func (l *outLane) wroteLocked(n int) {
	l.inflight -= n
	if l.waiters > 0 {
		l.wakeWaitersLocked()
	}
}

// pendingLocked reports whether the writer has something to do.
func (l *outLane) pendingLocked() bool {
	if l.probe || l.outOff < len(l.out) {
		return true
	}
	if l.lane == laneUser {
		return len(l.q.buf) > 0
	}
	return len(l.ctrl) > 0 || l.sys != nil && l.sys.HasNext()
}

func (l *outLane) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pendingLocked()
}

// directLocked reports whether a sender should write the queue itself: the user lane
// is connected over plain TCP, idle, and has been for idleBeforeDirect.
func (l *outLane) directLocked() bool {
	return l.raw != nil && l.parked && !l.writing && l.outOff == len(l.out) &&
		monotonic()-l.lastWrite >= int64(l.p.r.directAfter)
}

// writeDirect writes the queue from the sender's goroutine; it is called with mu held
// when directLocked, and unlocks it. What the socket does not take at once, and what
// other senders queue meanwhile, is left to the writer, which is woken for it.
func (l *outLane) writeDirect() {
	l.claimLocked()
	out, raw := l.out, l.raw
	l.mu.Unlock()
	n := raw.try(out)
	l.mu.Lock()
	if n > 0 {
		l.wroteLocked(n)
	}
	l.advanceLocked(n)
	if l.directDone != nil {
		close(l.directDone)
		l.directDone = nil
	}
	wake := l.parked && l.pendingLocked()
	if wake {
		l.parked = false
	}
	l.mu.Unlock()
	if wake {
		l.wakeWriter()
	}
}

// wakeWriter wakes the writer goroutine.
func (l *outLane) wakeWriter() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// waitDirectLocked waits, with mu held, until a sender that writes directly is done
// (a write that never waits), so that the writer may use the batch and the
// connection.
func (l *outLane) waitDirectLocked() {
	for l.writing {
		if l.directDone == nil {
			l.directDone = make(chan struct{})
		}
		done := l.directDone
		l.mu.Unlock()
		<-done
		l.mu.Lock()
	}
}

// writeOut writes out, the rest of the batch: first what the socket takes at once,
// then, waiting for the socket, in chunks under WriteTimeout. It returns how many
// bytes went out.
func (l *outLane) writeOut(conn net.Conn, raw *rawWriter, out []byte) (int, error) {
	off := 0
	if raw != nil {
		off = raw.try(out)
		l.wrote(off)
		if off == len(out) {
			return off, nil
		}
	}
	r := l.p.r
	timeout := r.cfg.WriteTimeout
	if r.isClosed() {
		timeout = time.Second // shutdown does not wait long for a stuck peer
	}
	for off < len(out) {
		end := min(off+writeChunk, len(out))
		if timeout > 0 {
			_ = conn.SetWriteDeadline(time.Now().Add(timeout))
		}
		n, err := conn.Write(out[off:end])
		off += n
		l.wrote(n)
		if err != nil {
			return off, err
		}
	}
	if timeout > 0 && raw != nil && !r.isClosed() {
		// A sender's direct write must not meet this deadline once it has passed.
		_ = conn.SetWriteDeadline(time.Time{})
	}
	return off, nil
}

// serve writes batches until the connection fails or the transport closes. A reader
// goroutine takes acks and heartbeat responses, and notices a closed connection.
func (l *outLane) serve(conn net.Conn, br *bufio.Reader) {
	r := l.p.r
	readErr := make(chan error, 1)
	go func() { readErr <- l.readControl(br) }()
	for {
		l.mu.Lock()
		if !l.claimLocked() {
			l.parked = true
			l.mu.Unlock()
			select {
			case <-l.wake:
				continue
			case err := <-readErr:
				l.broken(conn, err)
				return
			case <-r.done:
				l.finish(conn)
				<-readErr
				return
			}
		}
		l.parked = false
		out, raw := l.out[l.outOff:], l.raw
		l.mu.Unlock()
		n, err := l.writeOut(conn, raw, out)
		l.mu.Lock()
		l.advanceLocked(n)
		l.mu.Unlock()
		if err != nil {
			l.broken(conn, err)
			<-readErr
			return
		}
	}
}

// finish writes what was queued last, when the transport closes (death notices of
// stopping actors, say), for at most a second, and closes the connection. The user
// messages it cannot write are counted lost.
func (l *outLane) finish(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parked = false
	l.waitDirectLocked()
	for l.claimLocked() {
		out := l.out[l.outOff:]
		l.mu.Unlock()
		n, err := conn.Write(out)
		l.mu.Lock()
		if l.lane == laneUser {
			l.wroteLocked(n)
		}
		l.advanceLocked(n)
		if err != nil {
			if l.lane == laneUser {
				lost := l.outFrames - framesWithin(l.out, l.outOff) + l.q.frames
				l.out, l.outOff, l.outFrames = l.out[:0], 0, 0
				l.q.buf, l.q.frames, l.inflight = nil, 0, 0
				l.mu.Unlock()
				l.lost(lost, "messages not sent before the transport closed")
				l.mu.Lock()
			}
			return
		}
	}
}

// broken closes a failed connection and prepares the lane for the next one: of the
// batch being written, the frames the write reached are lost and the others are
// queued again, ahead of the frames queued since (in order).
func (l *outLane) broken(conn net.Conn, err error) {
	r := l.p.r
	_ = conn.Close() // a sender writing directly fails at once
	l.mu.Lock()
	l.parked = false
	l.waitDirectLocked()
	written := l.written
	l.conn, l.raw = nil, nil
	if l.lane != laneUser {
		if l.sys != nil {
			l.sys.Disconnected()
		}
		l.ctrl, l.heartbeat = l.ctrl[:0], false
		l.out, l.outOff, l.outFrames = l.out[:0], 0, 0
		l.mu.Unlock()
		l.logBroken(written, err)
		return
	}
	var batch []byte
	if l.outOff < len(l.out) {
		batch = l.out
	}
	var lost int
	if r.isClosed() {
		lost = l.outFrames - framesWithin(batch, l.outOff) + l.q.frames
		l.q.buf, l.q.frames = nil, 0
	} else {
		lost = l.q.restart(batch, l.outOff)
		if flush := l.gate.requeued(); flush != 0 {
			l.q.addFlush(flush)
		}
	}
	l.out, l.outOff, l.outFrames = l.out[:0], 0, 0
	l.inflight = 0
	l.wakeWaitersLocked()
	l.mu.Unlock()
	l.logBroken(written, err)
	l.lost(lost, "messages lost with a broken connection")
}

func (l *outLane) logBroken(written uint64, err error) {
	r := l.p.r
	r.connectLog.info(r.log, "connection lost; what the system accepted last on it may not have arrived",
		zap.String("peer", l.p.self), zap.Uint8("lane", l.lane), zap.Uint64("written_on_it", written), zap.Error(err))
}

// framesWithin counts the user frames of b that its first n bytes contain whole
// (flush frames are not messages).
func framesWithin(b []byte, n int) int {
	frames, off := 0, 0
	for off+frameHeaderLen <= len(b) {
		end := off + frameHeaderLen + int(binary.BigEndian.Uint32(b[off:]))
		if end > n {
			break
		}
		if isUserKind(b[off+frameHeaderLen]) {
			frames++
		}
		off = end
	}
	return frames
}

// readControl reads what the acceptor sends back: acks, heartbeat responses and
// flush acknowledgements.
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
		case kindFlushAck:
			l.flushAcked(n)
		}
	}
}
