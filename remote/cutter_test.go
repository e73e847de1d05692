package remote_test

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/troupe-go/troupe/remote"
)

// errCut is the error of a dial on a cut link.
var errCut = errors.New("test: link cut")

// cutter is one system's network, through the Dial and Listen seams of its Config,
// that a test can cut: while cut, every connection the system has is closed and new
// ones are refused, both ways, as when its machine drops off the network.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func newCutter() *cutter { return &cutter{conns: make(map[net.Conn]struct{})} }

// seams installs the cutter in a system's remote config.
func (c *cutter) seams(cfg *remote.Config) {
	cfg.Dial = c.dial
	cfg.Listen = c.listen
}

// set cuts (true) or restores (false) the system's links.
func (c *cutter) set(cut bool) {
	c.mu.Lock()
	c.cut = cut
	var open []net.Conn
	if cut {
		for conn := range c.conns {
			open = append(open, conn)
		}
		clear(c.conns)
	}
	c.mu.Unlock()
	for _, conn := range open {
		_ = conn.Close()
	}
}

func (c *cutter) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c.mu.Lock()
	cut := c.cut
	c.mu.Unlock()
	if cut {
		return nil, errCut
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c.track(conn)
}

func (c *cutter) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return cutListener{Listener: ln, c: c}, nil
}

// track registers conn, or closes it when the link is cut.
func (c *cutter) track(conn net.Conn) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		_ = conn.Close()
		return nil, errCut
	}
	tc := &cutConn{Conn: conn, c: c}
	c.conns[tc] = struct{}{}
	return tc, nil
}

type cutListener struct {
	net.Listener
	c *cutter
}

// Accept refuses (closes) the connections that arrive while the link is cut.
func (l cutListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc, err := l.c.track(conn); err == nil {
			return tc, nil
		}
	}
}

type cutConn struct {
	net.Conn
	c *cutter
}

func (t *cutConn) Close() error {
	t.c.mu.Lock()
	delete(t.c.conns, t)
	t.c.mu.Unlock()
	return t.Conn.Close()
}
