package remote

import "github.com/troupe-go/troupe/actor"

// SetBlocked, Abort and Quarantine reach the hooks that internal/hooks exposes.
func SetBlocked(r *Remote, addr actor.Address, blocked bool) { r.setBlocked(addr, blocked) }
func Abort(r *Remote)                                        { r.abort() }
func Quarantine(r *Remote, addr actor.Address, uid uint64, reason string) {
	r.quarantine(addr, uid, reason)
}

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
