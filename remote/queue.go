package remote

import (
	"encoding/binary"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/tracewire"
	"go.opentelemetry.io/otel/trace"
)

// userQueue is a user lane's queue: frames encoded for the connection the writer
// writes them on next, with the writer's half of that connection's dictionary. It
// is a plain value without locks or I/O; the lane holds its mutex around every call.
//
// Frames refer to dictionary entries defined by the frames before them, so a frame
// can only be written after those. When a connection fails, the frames not yet
// written are read back (with the entries as they were when each was encoded, kept
// by the dictionary's undo log) and encoded again for the next connection, which
// starts with an empty dictionary.
type userQueue struct {
	self     actor.Address // this system's address (see encDict.appendRef)
	selfStr  string
	buf      []byte
	frames   int    // user frames in buf (flush frames are not counted)
	added    uint64 // user frames ever added
	dict     encDict
	takenLog int // undo records that belong to the batch the writer took last
}

// add appends a frame: a traced one when sc is not nil.
func (q *userQueue) add(rcpt string, sender actor.Ref, manifest string, payload []byte, sc *trace.SpanContext) {
	q.reserve(frameOverhead + len(rcpt) + len(manifest) + len(payload))
	var buf []byte
	var start int
	if sc == nil {
		buf, start = beginFrame(q.buf, kindUser)
	} else {
		buf, start = beginFrame(q.buf, kindTraced)
		buf = tracewire.Append(buf, sc)
	}
	q.dict.startFrame()
	buf = q.dict.appendRcpt(buf, rcpt)
	buf = q.dict.appendRef(buf, sender, q.self, q.selfStr)
	buf = q.dict.appendStr(buf, manifest)
	buf = append(buf, payload...)
	endFrame(buf, start)
	q.buf = buf
	q.frames++
	q.added++
}

// addFlush appends flush frame id (see deathgate.go). It defines nothing in the
// dictionary, and restart does not keep it.
func (q *userQueue) addFlush(id uint64) {
	q.reserve(16)
	q.buf = appendControl(q.buf, kindFlush, id)
}

// reserve makes room for n more bytes, doubling the buffer when it grows. (append
// grows a large slice by a quarter at a time: a queue that fills up to megabytes
// would be copied, and its fresh memory faulted in, dozens of times.)
func (q *userQueue) reserve(n int) {
	if len(q.buf)+n <= cap(q.buf) {
		return
	}
	grown := make([]byte, len(q.buf), max(2*cap(q.buf), len(q.buf)+n, 4096))
	copy(grown, q.buf)
	q.buf = grown
}

// addFields appends a frame whose sender is given as a string (read back from an
// earlier frame).
func (q *userQueue) addFields(dst []byte, f userFields) []byte {
	var buf []byte
	var start int
	if f.trace == nil {
		buf, start = beginFrame(dst, kindUser)
	} else {
		buf, start = beginFrame(dst, kindTraced)
		buf = append(buf, f.trace...)
	}
	q.dict.startFrame()
	buf = q.dict.appendRcpt(buf, f.rcpt)
	switch {
	case f.sender == "":
		buf = append(buf, 0)
	case f.temp:
		buf = q.dict.appendLiteral(buf, f.sender)
	default:
		buf = q.dict.appendStr(buf, f.sender)
	}
	buf = q.dict.appendStr(buf, f.manifest)
	buf = append(buf, f.payload...)
	endFrame(buf, start)
	return buf
}

// take hands the queued frames to the writer and keeps spare as the new queue. The
// batch taken before, if any, was written whole.
func (q *userQueue) take(spare []byte) (batch []byte, frames int) {
	q.dict.forget(q.takenLog)
	q.takenLog = len(q.dict.undo)
	batch, frames = q.buf, q.frames
	q.buf, q.frames = spare[:0], 0
	return batch, frames
}

// restart prepares the queue for a new connection after the last one ended. batch
// is what the writer took last and failed to write whole (nil when every batch was
// written), of which written bytes went out. The frames of batch that the write
// reached, even in part, are lost: restart returns how many. The others, and the
// queued ones, are encoded again, in order, for the next connection's empty
// dictionary. Flush frames are not kept: the lane queues a new one after them when
// a death notice waits (deathGate.requeued).
func (q *userQueue) restart(batch []byte, written int) (lost int) {
	var table []string
	if batch != nil {
		table = q.dict.tableAt(0)
	} else {
		table = q.dict.tableAt(q.takenLog)
	}
	off := 0
	for off < written && off+frameHeaderLen <= len(batch) {
		n := frameHeaderLen + int(binary.BigEndian.Uint32(batch[off:]))
		if body := batch[off+frameHeaderLen : off+n]; isUserKind(body[0]) {
			readBack(body, table) // its definitions count for the rest
			lost++
		}
		off += n
	}
	rest := batch[min(off, len(batch)):]
	q.dict.clear()
	q.takenLog = 0
	if len(rest) == 0 && len(q.buf) == 0 {
		q.frames = 0
		return lost
	}
	out := make([]byte, 0, len(rest)+len(q.buf)+len(q.buf)/4)
	frames := 0
	for _, part := range [][]byte{rest, q.buf} {
		eachFrame(part, func(body []byte) {
			f, ok := readBack(body, table)
			if !ok {
				return // never happens: this side wrote it
			}
			out = q.addFields(out, f)
			frames++
		})
	}
	q.buf, q.frames = out, frames
	return lost
}

// drain empties the queue, while no connection is open, and returns its frames read
// back, so that they can go to dead letters. Their payloads alias the old queue.
func (q *userQueue) drain() []userFields {
	if len(q.buf) == 0 {
		return nil
	}
	table := q.dict.tableAt(q.takenLog)
	out := make([]userFields, 0, q.frames)
	eachFrame(q.buf, func(body []byte) {
		if f, ok := readBack(body, table); ok {
			out = append(out, f)
		}
	})
	q.buf, q.frames, q.takenLog = nil, 0, 0
	q.dict.clear()
	return out
}

// eachFrame calls f with the body of each user frame in frames.
func eachFrame(frames []byte, f func(body []byte)) {
	for len(frames) >= frameHeaderLen {
		n := frameHeaderLen + int(binary.BigEndian.Uint32(frames))
		if n > len(frames) {
			return
		}
		if body := frames[frameHeaderLen:n]; len(body) > 0 && isUserKind(body[0]) {
			f(body)
		}
		frames = frames[n:]
	}
}
