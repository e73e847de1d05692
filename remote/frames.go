package remote

import (
	"encoding/binary"
	"fmt"
)

// System-message operations.
const (
	opWatch   byte = 1 // target: the watchee (path#uid here); other: the watcher's URI
	opUnwatch byte = 2 // as opWatch
	opDeath   byte = 3 // target: the watcher (path#uid here); other: the dead actor's URI
	opStop    byte = 4 // target: the actor to stop (path#uid here); other: empty
	// opTerminating says the sending incarnation shuts down, after every other
	// system message it sent: target and other empty.
	opTerminating byte = 5
)

// sysMessage is the payload of a system frame.
type sysMessage struct {
	op                byte
	target, other     string
	addressTerminated bool
}

// appendSystem appends a complete system frame.
func appendSystem(dst []byte, seq uint64, m sysMessage) []byte {
	dst, start := beginFrame(dst, kindSystem)
	dst = binary.AppendUvarint(dst, seq)
	dst = append(dst, m.op)
	dst = appendString(dst, m.target)
	dst = appendString(dst, m.other)
	flag := byte(0)
	if m.addressTerminated {
		flag = 1
	}
	dst = append(dst, flag)
	endFrame(dst, start)
	return dst
}

func parseSystem(body []byte) (uint64, sysMessage, error) {
	d := decoder{b: body[1:]}
	seq := d.uvarint("seq")
	m := sysMessage{op: d.byte("op")}
	m.target = d.string("target", maxStringLen)
	m.other = d.string("other", maxStringLen)
	flag := d.byte("flag")
	if err := d.done(); err != nil {
		return 0, sysMessage{}, err
	}
	if m.op < opWatch || m.op > opTerminating || flag > 1 || seq == 0 {
		return 0, sysMessage{}, fmt.Errorf("%w: system message op %d flag %d seq %d", errMalformed, m.op, flag, seq)
	}
	m.addressTerminated = flag == 1
	return seq, m, nil
}

// appendControl appends a control frame: an ack (n = seq), a heartbeat (no n), a
// heartbeat response (n = uid), or a flush or its acknowledgement (n = the flush).
func appendControl(dst []byte, kind byte, n uint64) []byte {
	dst, start := beginFrame(dst, kind)
	switch kind {
	case kindAck, kindFlush, kindFlushAck:
		dst = binary.AppendUvarint(dst, n)
	case kindHeartbeatRsp:
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	endFrame(dst, start)
	return dst
}

func parseControl(body []byte) (kind byte, n uint64, err error) {
	d := decoder{b: body}
	kind = d.byte("kind")
	switch kind {
	case kindAck:
		n = d.uvarint("seq")
	case kindFlush, kindFlushAck:
		n = d.uvarint("flush")
	case kindHeartbeatRsp:
		n = d.uint64("uid")
	case kindHeartbeat:
	default:
		return 0, 0, fmt.Errorf("%w: unexpected frame kind %d", errMalformed, kind)
	}
	return kind, n, d.done()
}
