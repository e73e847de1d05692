package sim

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// errReset is the error of a read or write on a connection that a fault broke.
var errReset = errors.New("sim: connection reset by a network fault")

// chunk is what one Write put on a connection, and when it may be read.
type chunk struct {
	data []byte
	at   time.Time
}

// half is one direction of a connection: what one end writes and the other reads.
type half struct {
	mu       sync.Mutex
	chunks   []chunk
	last     time.Time // the delivery time of the newest chunk: order is kept
	eof      bool      // the writer closed: the reader sees io.EOF once it drained
	gone     bool      // the reader closed: the writer's writes fail
	reset    bool      // a fault broke the connection: both ends fail at once
	deadline time.Time // the reader's deadline; zero for none
	wake     chan struct{}
}

func newHalf() *half { return &half{wake: make(chan struct{}, 1)} }

// signal wakes the reader, if it waits.
func (h *half) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// conn is one end of an in-memory connection between two hosts of a Network. Writes
// never block; each is delivered after the delay of its link (in order), and a write
// on a cut link resets the connection, as TCP does once one direction drops its
// packets.
type conn struct {
	net           *Network
	local, remote *net.TCPAddr
	in, out       *half
	closeOnce     sync.Once
}

func (c *conn) Read(b []byte) (int, error) {
	h := c.in
	for {
		h.mu.Lock()
		switch {
		case h.reset:
			h.mu.Unlock()
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.local, Addr: c.remote, Err: errReset}
		case h.gone:
			h.mu.Unlock()
			return 0, net.ErrClosed
		}
		now := time.Now()
		if !h.deadline.IsZero() && !now.Before(h.deadline) {
			h.mu.Unlock()
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.local, Addr: c.remote, Err: os.ErrDeadlineExceeded}
		}
		var wait time.Duration = -1
		if len(h.chunks) > 0 {
			head := &h.chunks[0]
			if !now.Before(head.at) {
				n := copy(b, head.data)
				head.data = head.data[n:]
				if len(head.data) == 0 {
					h.chunks[0] = chunk{}
					h.chunks = h.chunks[1:]
				}
				h.mu.Unlock()
				return n, nil
			}
			wait = head.at.Sub(now)
		} else if h.eof {
			h.mu.Unlock()
			return 0, io.EOF
		}
		if !h.deadline.IsZero() {
			if d := h.deadline.Sub(now); wait < 0 || d < wait {
				wait = d
			}
		}
		h.mu.Unlock()
		if wait < 0 {
			<-h.wake
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-h.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (c *conn) Write(b []byte) (int, error) {
	delay, cut := c.net.link(c.local.IP.String(), c.remote.IP.String())
	if cut {
		c.net.reset(c)
	}
	h := c.out
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.reset:
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.local, Addr: c.remote, Err: errReset}
	case h.eof:
		return 0, net.ErrClosed
	case h.gone:
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.local, Addr: c.remote, Err: errReset}
	}
	at := time.Now().Add(delay)
	if at.Before(h.last) {
		at = h.last
	}
	h.last = at
	h.chunks = append(h.chunks, chunk{data: append([]byte(nil), b...), at: at})
	h.signal()
	return len(b), nil
}

// Close closes this end: the other reads what was written, then io.EOF.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.out.mu.Lock()
		c.out.eof = true
		c.out.mu.Unlock()
		c.out.signal()
		c.in.mu.Lock()
		c.in.gone = true
		c.in.chunks = nil
		c.in.mu.Unlock()
		c.in.signal()
		c.net.forget(c)
	})
	return nil
}

// breakDown resets both directions.
func (c *conn) breakDown() {
	for _, h := range [2]*half{c.in, c.out} {
		h.mu.Lock()
		h.reset = true
		h.chunks = nil
		h.mu.Unlock()
		h.signal()
	}
}

func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetDeadline(t time.Time) error {
	_ = c.SetWriteDeadline(t)
	return c.SetReadDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.in.mu.Lock()
	c.in.deadline = t
	c.in.mu.Unlock()
	c.in.signal()
	return nil
}

// SetWriteDeadline is accepted and has no effect: writes never block.
func (c *conn) SetWriteDeadline(time.Time) error { return nil }

// pipe returns the two ends of a new connection from a to b.
func pipe(n *Network, a, b *net.TCPAddr) (*conn, *conn) {
	ab, ba := newHalf(), newHalf()
	return &conn{net: n, local: a, remote: b, in: ba, out: ab},
		&conn{net: n, local: b, remote: a, in: ab, out: ba}
}
