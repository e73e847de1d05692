package remote

import (
	"bufio"
	"encoding/binary"
	"net"

	"github.com/troupe-go/troupe/actor"
)

// BreakConnections closes every connection r has; both sides reconnect on their own.
func BreakConnections(r *Remote) {
	r.mu.Lock()
	var peers []*peer
	for _, p := range r.peers {
		peers = append(peers, p)
	}
	for c := range r.inbound {
		_ = c.conn.Close()
	}
	r.mu.Unlock()
	for _, p := range peers {
		p.user.closeConn()
		p.sys.closeConn()
	}
}

// AppendHelloForTest encodes a handshake hello as a dialer would send it.
func AppendHelloForTest(uid uint64, from, to string) []byte {
	return appendHello(nil, hello{version: protocolVersion, lane: laneUser, from: from, fromUID: uid, to: to})
}

// HandshakeForTest runs the dialler's side of a handshake on conn, as the system at
// from with incarnation uid, asking for to, on the user lane. It returns the
// acceptor's uid and the reader to go on with.
func HandshakeForTest(conn net.Conn, from string, uid uint64, to string) (uint64, *bufio.Reader, error) {
	if _, err := conn.Write(appendHello(nil, hello{version: protocolVersion, lane: laneUser, from: from, fromUID: uid, to: to})); err != nil {
		return 0, nil, err
	}
	br := bufio.NewReader(conn)
	fr := frameReader{br: br, max: maxHandshakeFrame}
	body, err := fr.next()
	if err != nil {
		return 0, nil, err
	}
	w, err := parseWelcome(body)
	if err != nil {
		return 0, nil, err
	}
	if _, err := conn.Write(appendProof(nil, nil)); err != nil {
		return 0, nil, err
	}
	return w.uid, br, nil
}

// AppendUserForTest appends a user frame whose fields are literals that define no
// dictionary entry; an empty sender is none.
func AppendUserForTest(dst []byte, rcpt, sender, manifest string, payload []byte) []byte {
	dst, start := beginFrame(dst, kindUser)
	for _, f := range []string{rcpt, sender, manifest} {
		if f == "" {
			dst = append(dst, 0)
			continue
		}
		dst = binary.AppendUvarint(dst, 2*dictSize+1)
		dst = appendString(dst, f)
	}
	dst = append(dst, payload...)
	endFrame(dst, start)
	return dst
}

// AppendHeartbeatForTest appends a heartbeat frame, which any inbound connection
// answers.
func AppendHeartbeatForTest(dst []byte) []byte { return appendControl(dst, kindHeartbeat, 0) }

// PendingConnections returns how many accepted connections have not finished their
// handshake.
func PendingConnections(r *Remote) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Len()
}

// PeerCount returns how many peer systems r keeps state for.
func PeerCount(r *Remote) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.peers)
}

// AcceptedConnections returns how many connections r has accepted.
func AcceptedConnections(r *Remote) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}

func appendLiteralForTest(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, 2*dictSize+1)
	return appendString(dst, s)
}

// WriterRunning reports whether the user lane towards addr has a writer goroutine.
func WriterRunning(r *Remote, addr actor.Address) bool {
	r.mu.Lock()
	p := r.peers[addr]
	r.mu.Unlock()
	return p != nil && p.user.started.Load()
}

// AppendFlushForTest appends a flush frame numbered id.
func AppendFlushForTest(dst []byte, id uint64) []byte { return appendControl(dst, kindFlush, id) }
