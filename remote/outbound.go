package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/syslane"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// outLane is one outbound connection to a peer and its queue. Senders append encoded
// frames to the queue under mu; the lane's writer goroutine takes the queue as a batch
// and writes it, so frames batch by themselves whenever senders outpace the socket,
// and a sender that finds the lane idle writes its frame itself (see writer.go).
//
// The user lane's queue is bounded in bytes (Config.OutboundQueueBytes, counting the
// batch being written). The system lane carries the reliable system messages, whose
// numbering, acknowledgement and resending a syslane.Sender decides, and heartbeats.
type outLane struct {
	p       *peer
	lane    byte
	wake    chan struct{}
	started atomic.Bool // the writer goroutine runs

	mu       sync.Mutex
	q        userQueue // user lane: frames queued for the writer
	inflight int       // user lane: bytes of the batch being written, not yet written
	waiters  int       // senders waiting for room
	room     chan struct{}
	scratch  []byte // user lane: a message's payload before its header is known
	codec    *serialization.Codec
	conn     net.Conn
	raw      *rawWriter // for writes that never wait; nil for TLS
	probe    bool       // a send to a blocked peer asks the writer to look for a new incarnation
	failing  bool       // the last connection attempt failed, and none has succeeded since

	// The batch being written (see writer.go).
	out        []byte
	outOff     int           // bytes of out written
	outFrames  int           // frames in out, until it is written whole
	writing    bool          // someone writes out: the writer, or a sender directly
	parked     bool          // the writer goroutine waits for l.wake
	lastWrite  int64         // user lane: when the last write ended (monotonic)
	directDone chan struct{} // closed when a direct write ends, for a writer waiting on it
	written    uint64        // messages written on the current connection

	// User lane only: the death notices for the peer that wait for a flush, and the
	// hand-overs of released ones to the system lane under way (see handingLocked).
	gate    deathGate
	handing int

	// System lane only.
	ctrl      []byte // control frames queued
	heartbeat bool   // a heartbeat is among them
	sys       *syslane.Sender[sysMessage]
	batch     []syslane.Message[sysMessage]

	// Connection attempts, used by the writer only (and by tests, under mu).
	everConnected bool
	failingSince  time.Time // first failure of the current run of failed attempts
	backoff       time.Duration
	nextDial      time.Time
	// redial cuts a backoff wait short: the peer has just connected to us, so the
	// network between us works again (see redialNow).
	redial chan struct{}
}

func newOutLane(p *peer, lane byte) *outLane {
	l := &outLane{p: p, lane: lane, wake: make(chan struct{}, 1), redial: make(chan struct{}, 1)}
	l.q.dict.size = dictSize
	l.gate.timeout = p.r.cfg.DeathNoticeFlushTimeout
	l.q.self, l.q.selfStr = p.r.addr, p.r.self
	return l
}

// signal wakes the lane's writer, starting it if it is not running: a peer that is
// only named (in a Ref) costs no goroutine until something is sent to it.
func (l *outLane) signal() {
	if !l.started.Load() && l.started.CompareAndSwap(false, true) {
		r := l.p.r
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			l.started.Store(false)
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

// fieldsOverhead bounds what a user frame adds to its fields and payload: the length,
// the kind, and a tag and a length for each field.
const fieldsOverhead = frameHeaderLen + 1 + 3*(3+2)

// fits reports whether a user frame fits in max bytes, and its size at most. The
// sender's path is only computed when a long one could matter.
func fits(max int, rcpt string, sender actor.Ref, manifest string, payload []byte) (int, bool) {
	if len(rcpt) > maxStringLen {
		return len(rcpt), false
	}
	size := fieldsOverhead + len(rcpt) + len(manifest) + len(payload)
	if size+maxStringLen <= max {
		return size, true
	}
	if !sender.IsZero() {
		if n := len(sender.URI()); n <= maxStringLen { // a longer one is sent as no sender
			size += n
		}
	}
	return size, size <= max
}

// frameOverhead estimates the bytes a user frame adds to its payload, recipient and
// manifest: the length, kind, tags and a sender.
const frameOverhead = 32

// sendUser encodes a user message into the queue. When the queue is full it fails
// with ErrOverloaded, unless it may wait: until ctx ends when ctx is not nil, or for
// Config.BackpressureTimeout. A message with a trace context sc goes as a traced frame.
func (l *outLane) sendUser(rr remoteRef, msg any, sender actor.Ref, ctx context.Context, sc *trace.SpanContext) error {
	r := l.p.r
	var (
		waiting bool
		expired <-chan time.Time
		ended   <-chan struct{}
	)
	if r.closing.Load() {
		err := fmt.Errorf("%w: sending to %s%s", ErrClosed, l.p.self, rr.wire)
		r.deadLetter(rr, msg, sender, err)
		return err
	}
	l.mu.Lock()
	for {
		// A peer whose incarnation has ended refuses sends at once, unless the cluster
		// counts a member at its address: that is a new incarnation (the cluster
		// quarantines a member's incarnation when it removes it), not yet reached. The
		// send is queued then, and the writer looks: it delivers the queue to the
		// incarnation that answers, or drops it as quarantined when none new does
		// (connectFailed).
		if l.p.blocked.Load() && !r.isManaged(l.p.addr) {
			l.probe = true
			l.mu.Unlock()
			l.signal()
			err := fmt.Errorf("%w: %s", ErrQuarantined, l.p.self)
			r.deadLetter(rr, msg, sender, err)
			return err
		}
		manifest, payload, err := l.encode(msg)
		if err != nil {
			l.mu.Unlock()
			r.refuse(rr, msg, sender, err)
			return err
		}
		extra := 0
		if sc != nil {
			extra = 1 + tracewire.Len(sc)
		}
		if size, ok := fits(r.cfg.MaxFrameSize-extra, rr.wire, sender, manifest, payload); !ok {
			l.mu.Unlock()
			err := fmt.Errorf("%w: %d bytes for %s%s (maximum %d)", ErrFrameTooLarge, size, l.p.self, rr.wire, r.cfg.MaxFrameSize)
			r.refuse(rr, msg, sender, err)
			return err
		}
		used := len(l.q.buf) + l.inflight
		if used == 0 || used+len(payload)+len(rr.wire)+len(manifest)+frameOverhead <= r.cfg.OutboundQueueBytes {
			l.q.add(rr.wire, sender, manifest, payload, sc)
			l.queued()
			return nil
		}
		// The queue is full.
		if !waiting {
			switch {
			case ctx != nil:
				ended = ctx.Done()
			case r.cfg.BackpressureTimeout > 0:
				t := time.NewTimer(r.cfg.BackpressureTimeout)
				defer t.Stop()
				expired = t.C
			default:
				l.mu.Unlock()
				return l.overloaded(rr, msg, sender, used, nil)
			}
			waiting = true
		}
		if l.room == nil {
			l.room = make(chan struct{})
		}
		room := l.room
		l.waiters++
		l.mu.Unlock()
		var cause error
		select {
		case <-room:
		case <-expired:
			cause = fmt.Errorf("no room within %v", r.cfg.BackpressureTimeout)
		case <-ended:
			cause = context.Cause(ctx)
		case <-r.done:
			cause = ErrClosed
		}
		l.mu.Lock()
		l.waiters--
		if cause != nil {
			l.mu.Unlock()
			return l.overloaded(rr, msg, sender, used, cause)
		}
	}
}

// queued gets a frame just queued written, with mu held, which it unlocks: by the
// sender itself when the lane is idle, else by the writer, woken if it is parked and
// nobody else writes, or started if it does not run.
func (l *outLane) queued() {
	if l.parked && !l.writing {
		if l.directLocked() {
			l.writeDirect()
			return
		}
		l.parked = false
		l.mu.Unlock()
		l.wakeWriter()
		return
	}
	l.mu.Unlock()
	if !l.started.Load() {
		l.signal()
	}
}

// encode encodes msg into the lane's scratch buffer: a registered type, or one of the
// runtime's own messages.
func (l *outLane) encode(msg any) (manifest string, payload []byte, err error) {
	r := l.p.r
	if l.codec == nil {
		l.codec = r.cfg.Registry.NewCodec(localResolver{r})
	}
	manifest, payload, err = l.codec.Append(l.scratch[:0], msg)
	if err != nil && errors.Is(err, serialization.ErrUnregistered) {
		manifest, payload, err = appendRuntime(l.scratch[:0], msg)
		if errors.Is(err, serialization.ErrUnregistered) {
			err = fmt.Errorf("%w: %T", ErrUnregistered, msg)
		}
	}
	if err == nil {
		l.scratch = payload
	}
	return manifest, payload, err
}

// overloaded refuses a message for a full queue: an error naming the recipient, a
// dead letter, the counters and a rate-limited log line.
func (l *outLane) overloaded(rr remoteRef, msg any, sender actor.Ref, used int, cause error) error {
	r := l.p.r
	r.stats.overloaded.Add(1)
	rr.peer.stats.overloaded.Add(1)
	var err error
	if cause != nil {
		err = fmt.Errorf("%w: %s%s (%d bytes queued): %w", ErrOverloaded, l.p.self, rr.wire, used, cause)
	} else {
		err = fmt.Errorf("%w: %s%s (%d bytes queued)", ErrOverloaded, l.p.self, rr.wire, used)
	}
	r.overloadLog.log(r.log, "outbound queue full: message refused", zap.String("recipient", l.p.self+rr.wire),
		zap.String("type", fmt.Sprintf("%T", msg)), zap.Int("queued_bytes", used))
	r.deadLetter(rr, msg, sender, err)
	return err
}

// wakeWaiters lets the senders waiting for room look again.
func (l *outLane) wakeWaiters() {
	l.mu.Lock()
	l.wakeWaitersLocked()
	l.mu.Unlock()
}

func (l *outLane) wakeWaitersLocked() {
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
}

// queuedBytes returns the bytes queued and being written.
func (l *outLane) queuedBytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.q.buf) + l.inflight
}

// sendSystem numbers m and queues it for reliable delivery. When the peer has left
// SystemBufferSize messages unacknowledged, its incarnation is quarantined.
func (l *outLane) sendSystem(m sysMessage) {
	r := l.p.r
	l.mu.Lock()
	if l.sys == nil {
		l.sys = syslane.NewSender[sysMessage](syslane.Config{Capacity: r.cfg.SystemBufferSize, ResendAfter: r.cfg.SystemResendInterval})
	}
	_, ok := l.sys.Send(m)
	l.mu.Unlock()
	if !ok {
		uid := l.p.currentUID()
		r.log.Error("system message buffer overflow: system message dropped", zap.String("peer", l.p.self),
			zap.Int("size", r.cfg.SystemBufferSize), zap.String("target", sanitize(m.target)))
		if uid != 0 {
			l.p.quarantine(uid, "system message buffer overflow")
		}
		return
	}
	l.signal()
}

// sendControl queues a heartbeat on the system lane, unless one is queued already.
func (l *outLane) sendControl(kind byte) {
	l.mu.Lock()
	if l.heartbeat {
		l.mu.Unlock()
		return
	}
	l.ctrl = appendControl(l.ctrl, kind, 0)
	l.heartbeat = true
	l.mu.Unlock()
	l.signal()
}

// acknowledge records the peer's ack of system messages up to seq.
func (l *outLane) acknowledge(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sys != nil {
		l.sys.Ack(seq, time.Now())
	}
}

// tickSystem writes unacknowledged system messages again when acks have stalled.
func (l *outLane) tickSystem(now time.Time) {
	l.mu.Lock()
	resend := l.sys != nil && l.sys.Tick(now)
	l.mu.Unlock()
	if resend {
		l.signal()
	}
}

// dropUnacked forgets the system messages of an incarnation that is gone; the next
// incarnation starts at sequence 1.
func (l *outLane) dropUnacked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sys == nil {
		return 0
	}
	return len(l.sys.Reset())
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

// run is the lane's writer: it connects when there is something to send, writes
// batches, and reconnects with backoff when the connection fails. It ends when the
// transport closes, and when a connection attempt fails and nothing is left to send
// (the next send starts it again, after the backoff).
func (l *outLane) run() {
	r := l.p.r
	defer r.wg.Done()
	l.failingSince = time.Time{} // GiveUpAfter counts from the first failure of this run
	for {
		for !l.parkUnlessPending() {
			select {
			case <-l.wake:
			case <-r.done:
				l.abandon()
				return
			}
		}
		if !l.waitBackoff() {
			l.abandon()
			return
		}
		l.mu.Lock()
		l.probe = false
		l.mu.Unlock()
		conn, br, err := l.connect()
		if err != nil {
			if errors.Is(err, ErrClosed) {
				l.abandon()
				return
			}
			l.connectFailed(err)
			if !l.pending() {
				l.started.Store(false)
				if !l.pending() || !l.started.CompareAndSwap(false, true) {
					return
				}
			}
			continue
		}
		if l.everConnected {
			r.stats.reconnects.Add(1)
		}
		l.everConnected = true
		l.failingSince, l.backoff, l.nextDial = time.Time{}, 0, time.Time{}
		l.serve(conn, br)
		select { // a nudge from while this connection stood means nothing now
		case <-l.redial:
		default:
		}
	}
}

// parkUnlessPending reports whether the writer has something to do; when it has not,
// it marks the writer parked, so that the next send wakes it.
func (l *outLane) parkUnlessPending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pendingLocked() {
		l.parked = false
		return true
	}
	l.parked = true
	return false
}

// waitBackoff waits until the next connection attempt is due, or until redialNow
// says the peer is back; false when the transport closes first.
func (l *outLane) waitBackoff() bool {
	d := time.Until(l.nextDial)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.redial:
		return true
	case <-l.p.r.done:
		return false
	}
}

// redialNow ends the lane's backoff wait, if it waits: the peer has just completed a
// handshake with this system, so a connection attempt is likely to succeed now.
// Without it, a lane whose backoff grew during a long cut would stay down for up to
// ReconnectBackoffMax after the network healed, while the peer's messages already
// arrive: the cluster would see that peer as unreachable from this side alone.
func (l *outLane) redialNow() {
	select {
	case l.redial <- struct{}{}:
	default:
	}
}

// connectFailed schedules the next attempt and gives up on what is queued when the
// peer is quarantined, or has not been reachable for GiveUpAfter.
func (l *outLane) connectFailed(err error) {
	r := l.p.r
	now := time.Now()
	if l.failingSince.IsZero() {
		l.failingSince = now
	}
	l.backoff = min(max(2*l.backoff, r.cfg.ReconnectBackoffMin), r.cfg.ReconnectBackoffMax)
	l.nextDial = now.Add(l.backoff)
	l.mu.Lock()
	l.failing = true
	l.mu.Unlock()
	r.connectLog.info(r.log, "connect failed", zap.String("peer", l.p.self), zap.Uint8("lane", l.lane),
		zap.Error(err), zap.Duration("retry_in", l.backoff))
	switch {
	case l.p.blocked.Load():
		// No new incarnation answered: what waited for one (at a member's address, see
		// sendUser and peer.watch) ends as for the quarantined one.
		l.dropQueued(fmt.Errorf("%w: %s", ErrQuarantined, l.p.self))
		if l.lane == laneSystem {
			l.dropUnacked()
			l.p.addressTerminated()
		}
	case now.Sub(l.failingSince) < r.cfg.GiveUpAfter:
	case l.lane == laneUser:
		l.dropQueued(fmt.Errorf("%w: no connection to %s for %v: %w", ErrUnreachable, l.p.self, r.cfg.GiveUpAfter, err))
	case l.p.currentUID() == 0:
		if n := l.dropUnacked(); n > 0 {
			r.lossLog.log(r.log, "system messages dropped: the peer was never reached", zap.String("peer", l.p.self),
				zap.Int("count", n), zap.Duration("after", r.cfg.GiveUpAfter))
		}
	}
}

// dropQueued sends the user messages queued for the peer to dead letters with reason.
// It runs on the writer, between connections.
func (l *outLane) dropQueued(reason error) {
	if l.lane != laneUser {
		return
	}
	l.mu.Lock()
	frames := l.q.drain()
	l.inflight = 0
	l.wakeWaitersLocked()
	notices := l.handingLocked(l.gate.emptied(l.q.added))
	l.mu.Unlock()
	l.sendNotices(notices) // nothing is ahead of them any more
	if len(frames) == 0 {
		return
	}
	r := l.p.r
	codec := r.cfg.Registry.NewCodec(localResolver{r})
	internal := 0
	defer func() {
		// Troupe's own messages (heartbeats, gossip, acknowledgements) for a peer that
		// went away are expected dead letters: counted, and logged at debug when no
		// message of the application died with them.
		fields := []zap.Field{zap.String("peer", l.p.self), zap.Int("count", len(frames)-internal),
			zap.Int("internal", internal), zap.Error(reason)}
		if internal == len(frames) {
			r.log.Debug("queued messages dropped to dead letters", fields...)
			return
		}
		r.lossLog.log(r.log, "queued messages dropped to dead letters", fields...)
	}()
	for _, f := range frames {
		path, uid := parseWire(f.rcpt)
		var sender actor.Ref
		if f.sender != "" {
			sender, _ = localResolver{r}.ResolveRef(f.sender)
		}
		msg, err := decodeAny(codec, localResolver{r}, f.manifest, f.payload)
		if err != nil {
			msg = Undecodable{Manifest: f.manifest, Size: len(f.payload)}
		}
		if expectedDeadLetter(msg) {
			internal++
		}
		r.deadLetter(newRemoteRef(l.p, path, uid), msg, sender, reason)
	}
}

// abandon counts and logs the user messages still queued when the transport closes.
// When all of them are Troupe's own (expectedDeadLetter: heartbeats, gossip for a
// peer that has quarantined this node as it left), the line is at debug.
func (l *outLane) abandon() {
	l.mu.Lock()
	n := l.q.frames
	frames := l.q.drain()
	l.q.buf, l.q.frames, l.inflight = nil, 0, 0
	l.wakeWaitersLocked()
	l.mu.Unlock()
	internal := 0
	if len(frames) == n {
		r := l.p.r
		codec := r.cfg.Registry.NewCodec(localResolver{r})
		for _, f := range frames {
			if msg, err := decodeAny(codec, localResolver{r}, f.manifest, f.payload); err == nil && expectedDeadLetter(msg) {
				internal++
			}
		}
	}
	if n > 0 && internal == n {
		l.count(n)
		l.p.r.log.Debug("messages not sent before the transport closed", zap.String("peer", l.p.self), zap.Int("count", n), zap.Int("internal", n))
		return
	}
	l.lost(n, "messages not sent before the transport closed")
}

// lost counts messages lost for the peer, with a rate-limited log line.
func (l *outLane) lost(n int, why string) {
	if n <= 0 {
		return
	}
	l.count(n)
	r := l.p.r
	r.lossLog.log(r.log, why, zap.String("peer", l.p.self), zap.Int("count", n))
}

// count counts n messages lost for the peer.
func (l *outLane) count(n int) {
	r := l.p.r
	r.stats.lost.Add(uint64(n))
	r.stats.deadLetters.Add(uint64(n))
	l.p.stats.lost.Add(uint64(n))
	l.p.stats.deadLetters.Add(uint64(n))
}

// expectedDeadLetter reports whether msg, as a dead letter, is one the actor system
// counts but does not log (actor.DeadLetterSuppression): Troupe's own messages whose
// loss at a peer that goes away is expected.
func expectedDeadLetter(msg any) bool {
	if w, ok := msg.(actor.MessageWrapper); ok {
		msg = w.UserMessage()
	}
	_, ok := msg.(actor.DeadLetterSuppression)
	return ok
}
