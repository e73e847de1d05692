package faultnet

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dial opens a connection from this node, for remote.Config.Dial: refused on a cut
// link, hanging until ctx ends on a black-holed one.
func (nd *Node) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n := nd.n
	n.mu.RLock()
	to := n.remotes[address]
	f := n.faultOf(nd.name, to)
	n.mu.RUnlock()
	switch f.remote {
	case remoteRefuse:
		return nil, &net.OpError{Op: "dial", Net: network, Err: ErrCut}
	case remoteBlackhole:
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	c := newConn(n, raw, nd.name, to)
	n.mu.Lock()
	if n.faultOf(nd.name, to).remote == remoteRefuse { // cut while dialling
		n.mu.Unlock()
		_ = raw.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Err: ErrCut}
	}
	local := raw.LocalAddr().String()
	n.dialled[local] = nd.name
	c.dialledFrom = local
	n.conns[c] = struct{}{}
	n.mu.Unlock()
	return c, nil
}

// Listen opens this node's listener, for remote.Config.Listen. The connections it
// accepts from a node of the network are faulted as that node's links say.
func (nd *Node) Listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	nd.n.mu.Lock()
	nd.n.remotes[ln.Addr().String()] = nd.name
	nd.n.mu.Unlock()
	return &listener{Listener: ln, nd: nd}, nil
}

type listener struct {
	net.Listener
	nd *Node
}

// Accept returns the next connection; one that arrives while this node is isolated
// is closed at once (refused).
func (l *listener) Accept() (net.Conn, error) {
	n := l.nd.n
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := newConn(n, raw, l.nd.name, "")
		n.mu.Lock()
		if n.isolated[l.nd.name] {
			n.mu.Unlock()
			_ = raw.Close()
			continue
		}
		n.conns[c] = struct{}{}
		n.mu.Unlock()
		return c, nil
	}
}

// conn is one end of a connection between two nodes, at node local.
type conn struct {
	net.Conn
	n           *Network
	local       string
	peer        atomic.Pointer[string] // the node at the other end, once known
	dialledFrom string                 // the local address registered in n.dialled
	broken      atomic.Bool            // a write was swallowed: it stays silent
	wmu         sync.Mutex             // keeps delayed writes in order
	closeOnce   sync.Once
	done        chan struct{}
}

func newConn(n *Network, raw net.Conn, local, peer string) *conn {
	c := &conn{Conn: raw, n: n, local: local, done: make(chan struct{})}
	if peer != "" {
		c.peer.Store(&peer)
	}
	return c
}

// peerOf returns the node at the other end of c, "" while unknown (an accepted
// connection whose dialler is not a node of n); n.mu must be held (read-locked at
// least). The dialler
// registers its end before it writes, so an accepted end knows its peer by the time
// anything arrives.
func (n *Network) peerOf(c *conn) string {
	if p := c.peer.Load(); p != nil {
		return *p
	}
	if p, ok := n.dialled[c.Conn.RemoteAddr().String()]; ok {
		c.peer.Store(&p)
		return p
	}
	return ""
}

// Write applies the fault of the link from this end's node to the other's.
func (c *conn) Write(b []byte) (int, error) {
	if c.broken.Load() {
		return len(b), nil
	}
	c.n.mu.RLock()
	f := c.n.faultOf(c.local, c.n.peerOf(c))
	c.n.mu.RUnlock()
	switch f.remote {
	case remoteRefuse:
		_ = c.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: ErrCut}
	case remoteBlackhole:
		c.broken.Store(true)
		return len(b), nil
	}
	if f.delay <= 0 {
		return c.Conn.Write(b)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.done:
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

// SyscallConn gives the socket to a writer that writes to it directly (the remote
// transport does when the socket takes its bytes at once). Its Write writes nothing
// while the link from this end has a fault (or the connection swallowed a write):
// the writer then falls back to the connection's Write, where the fault applies.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("faultnet: the connection has no socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return rawConn{RawConn: rc, c: c}, nil
}

type rawConn struct {
	syscall.RawConn
	c *conn
}

func (r rawConn) Write(f func(fd uintptr) bool) error {
	if r.c.faulty() {
		return nil
	}
	return r.RawConn.Write(f)
}

// faulty reports whether what this end writes is subject to a fault.
func (c *conn) faulty() bool {
	if c.broken.Load() {
		return true
	}
	c.n.mu.RLock()
	defer c.n.mu.RUnlock()
	f := c.n.faultOf(c.local, c.n.peerOf(c))
	return f.remote != remoteOK || f.delay > 0
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.n.mu.Lock()
		delete(c.n.conns, c)
		if c.dialledFrom != "" {
			delete(c.n.dialled, c.dialledFrom)
		}
		c.n.mu.Unlock()
	})
	return c.Conn.Close()
}
