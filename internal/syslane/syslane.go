package syslane

import "time"

// Config configures a Sender.
type Config struct {
	// Capacity bounds the messages sent and not yet acknowledged; it must be positive.
	Capacity int
	// ResendAfter is how long acknowledgements may stall, while messages written are
	// unacknowledged, before those messages are written again; it must be positive.
	ResendAfter time.Duration
}

// Message is one numbered message.
type Message[T any] struct {
	Seq uint64
	Msg T
}

// Sender is the sending side of the lane towards one receiver incarnation. Its zero
// value is not usable; call NewSender. It is not safe for concurrent use.
type Sender[T any] struct {
	cfg      Config
	seq      uint64       // last number assigned
	unacked  []Message[T] // in number order
	written  uint64       // highest number written on the current connection
	acked    uint64       // highest number acknowledged
	progress time.Time    // last ack, or the first write with nothing in flight
}

// NewSender returns a Sender whose first message is number 1.
func NewSender[T any](cfg Config) *Sender[T] {
	return &Sender[T]{cfg: cfg}
}

// Send numbers m and keeps it until it is acknowledged. It reports false, and keeps
// nothing, when Capacity messages are already unacknowledged: the caller gives up on
// the receiver.
func (s *Sender[T]) Send(m T) (seq uint64, ok bool) {
	if len(s.unacked) >= s.cfg.Capacity {
		return 0, false
	}
	s.seq++
	s.unacked = append(s.unacked, Message[T]{Seq: s.seq, Msg: m})
	return s.seq, true
}

// HasNext reports whether Next would return anything.
func (s *Sender[T]) HasNext() bool {
	return len(s.unacked) > 0 && s.unacked[len(s.unacked)-1].Seq > s.written
}

// Next appends to dst, in order, the messages to write at now (those not yet written
// on the current connection) and records them as written.
func (s *Sender[T]) Next(now time.Time, dst []Message[T]) []Message[T] {
	if !s.HasNext() {
		return dst
	}
	if s.written == s.acked {
		s.progress = now // nothing was in flight: the wait for an ack starts now
	}
	for _, m := range s.unacked {
		if m.Seq > s.written {
			dst = append(dst, m)
		}
	}
	s.written = s.seq
	return dst
}

// Ack records that the receiver has applied every message up to seq. It reports false
// for an ack of a number never sent or older than an earlier ack, which changes
// nothing.
func (s *Sender[T]) Ack(seq uint64, now time.Time) bool {
	if seq <= s.acked || seq > s.seq {
		return false
	}
	i := 0
	for i < len(s.unacked) && s.unacked[i].Seq <= seq {
		i++
	}
	s.unacked = append(s.unacked[:0], s.unacked[i:]...)
	s.acked, s.progress = seq, now
	s.written = max(s.written, seq)
	return true
}

// Tick decides at now whether acknowledgements have stalled: when messages written
// have waited ResendAfter without an ack, they count as unwritten again (Next returns
// them) and Tick reports true.
func (s *Sender[T]) Tick(now time.Time) (resend bool) {
	if s.written <= s.acked || now.Sub(s.progress) < s.cfg.ResendAfter {
		return false
	}
	s.written, s.progress = s.acked, now
	return true
}

// Disconnected records that the connection ended: whatever is unacknowledged is
// written again on the next one.
func (s *Sender[T]) Disconnected() { s.written = s.acked }

// Reset forgets the receiver incarnation (it is gone) and returns the messages it never
// acknowledged; the next incarnation's first message is number 1 again.
func (s *Sender[T]) Reset() []Message[T] {
	dropped := s.unacked
	*s = Sender[T]{cfg: s.cfg}
	return dropped
}

// Unacked returns how many messages wait for an acknowledgement.
func (s *Sender[T]) Unacked() int { return len(s.unacked) }

// Verdict is what a Receiver decides about an arriving message.
type Verdict int

const (
	// Apply: the message is the next in order; apply it.
	Apply Verdict = iota
	// Duplicate: the message was applied before (it was written again); ignore it.
	Duplicate
	// Gap: messages before this one are missing; ignore it, the sender writes it
	// again after the missing ones.
	Gap
)

// Receiver is the receiving side of the lane from one sender incarnation. Its zero
// value expects message 1. It outlives connections, so that a message written again on
// a new connection is recognised. It is not safe for concurrent use.
type Receiver struct {
	applied uint64 // highest number applied, with all before it
}

// Receive decides about message seq.
func (r *Receiver) Receive(seq uint64) Verdict {
	switch {
	case seq == r.applied+1:
		r.applied = seq
		return Apply
	case seq <= r.applied:
		return Duplicate
	default:
		return Gap
	}
}

// Acked returns the number to acknowledge: every message up to it was applied.
func (r *Receiver) Acked() uint64 { return r.applied }
