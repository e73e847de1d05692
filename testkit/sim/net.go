package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"
)

// ErrUnreachable is the error of a dial to an address nothing listens on, or across a
// cut link (wrapped in a *net.OpError).
var ErrUnreachable = errors.New("sim: host unreachable")

// Link is the state of one direction of the link between two hosts.
type Link struct {
	// Cut drops the gossip packets sent this way, refuses new connections between the
	// two hosts, and resets a connection when something is written on it this way.
	Cut bool
	// Delay is added to every packet and every write sent this way.
	Delay time.Duration
	// Loss is the probability (0 to 1) that a gossip packet sent this way is lost.
	Loss float64
}

// Network is an in-memory network of hosts, each named by an IP address, that the
// nodes of a simulation reach each other through: remote's connections (Dial and
// Listen) and serf's gossip (Transport). It has no goroutine of its own, so it runs in
// a testing/synctest bubble with the nodes, and every delay is virtual time. Its
// methods are safe for concurrent use.
type Network struct {
	mu        sync.Mutex
	rng       *rand.Rand
	listeners map[string]*listener        // "ip:port" -> remote listener
	gossips   map[string]*transport       // "ip:port" -> gossip transport
	links     map[[2]string]Link          // [from, to] host -> fault
	conns     map[*conn]struct{}          // open connection ends
	ports     map[string]int              // host -> last ephemeral port given
	isolated  map[string]bool             // hosts cut from every other
	latency   map[[2]string]time.Duration // [from, to] host -> base one-way latency
	counts    Counts
}

// Counts are what the network did, for a test to check its faults took effect.
type Counts struct {
	Packets, PacketsLost, PacketsDropped, Dials, DialsRefused, Resets int
}

// NewNetwork returns a network with no faults; seed drives its packet losses.
func NewNetwork(seed uint64) *Network {
	return &Network{
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		listeners: make(map[string]*listener),
		gossips:   make(map[string]*transport),
		links:     make(map[[2]string]Link),
		conns:     make(map[*conn]struct{}),
		ports:     make(map[string]int),
		isolated:  make(map[string]bool),
		latency:   make(map[[2]string]time.Duration),
	}
}

// SetLink sets the state of the direction from to of the link between two hosts. A
// cut resets the connections between them at once.
func (n *Network) SetLink(from, to string, l Link) {
	n.update(from, to, func(*Link) Link { return l })
}

// AddFault adds l's faults to the direction from to: a cut stays cut, and a delay or a
// loss in l replaces the one there was.
func (n *Network) AddFault(from, to string, l Link) {
	n.update(from, to, func(cur *Link) Link {
		next := *cur
		next.Cut = next.Cut || l.Cut
		if l.Delay > 0 {
			next.Delay = l.Delay
		}
		if l.Loss > 0 {
			next.Loss = l.Loss
		}
		return next
	})
}

// update sets the direction from to to what change makes of its state.
func (n *Network) update(from, to string, change func(*Link) Link) {
	n.mu.Lock()
	cur := n.links[[2]string{from, to}]
	l := change(&cur)
	if l == (Link{}) {
		delete(n.links, [2]string{from, to})
	} else {
		n.links[[2]string{from, to}] = l
	}
	var broken []*conn
	if l.Cut {
		broken = n.between(from, to)
	}
	n.mu.Unlock()
	for _, c := range broken {
		c.breakDown()
	}
}

// SetLatency sets the base latency of the direction from to: every packet and write
// takes that long, on top of a fault's Delay. Gossip packets vary by up to half of it
// either way (and may arrive out of order, as UDP's do).
func (n *Network) SetLatency(from, to string, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.latency[[2]string{from, to}] = d
}

// LinkOf returns the state of the direction from to.
func (n *Network) LinkOf(from, to string) Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[[2]string{from, to}]
}

// Isolate cuts every link of host both ways, and resets its connections, until
// Reconnect: a pulled cable, or a process that died.
func (n *Network) Isolate(host string) {
	n.mu.Lock()
	n.isolated[host] = true
	var broken []*conn
	for c := range n.conns {
		if c.local.IP.String() == host || c.remote.IP.String() == host {
			broken = append(broken, c)
		}
	}
	n.mu.Unlock()
	for _, c := range broken {
		c.breakDown()
	}
}

// Reconnect ends the isolation of host.
func (n *Network) Reconnect(host string) {
	n.mu.Lock()
	delete(n.isolated, host)
	n.mu.Unlock()
}

// fault returns the state of the direction from to, isolation included; n.mu is held.
func (n *Network) fault(from, to string) Link {
	l := n.links[[2]string{from, to}]
	if n.isolated[from] || n.isolated[to] {
		l.Cut = true
	}
	l.Delay += n.latency[[2]string{from, to}]
	return l
}

// linked reports whether the links between a and b are not cut either way (whether
// either host is isolated aside).
func (n *Network) linked(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.links[[2]string{a, b}].Cut && !n.links[[2]string{b, a}].Cut
}

// listening reports whether anything still listens on address, for remote or gossip.
func (n *Network) listening(addresses ...string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range addresses {
		if n.listeners[a] != nil || n.gossips[a] != nil {
			return true
		}
	}
	return false
}

// Heal ends every link's faults (isolated hosts stay isolated).
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.links)
	n.mu.Unlock()
}

// Counts returns what the network did so far.
func (n *Network) Counts() Counts {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts
}

// between returns the open connection ends between hosts a and b; n.mu is held.
func (n *Network) between(a, b string) []*conn {
	var cs []*conn
	for c := range n.conns {
		l, r := c.local.IP.String(), c.remote.IP.String()
		if l == a && r == b || l == b && r == a {
			cs = append(cs, c)
		}
	}
	return cs
}

// link returns the delay of the direction from to, and whether it is cut.
func (n *Network) link(from, to string) (time.Duration, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.fault(from, to)
	return l.Delay, l.Cut
}

// reset breaks a connection (both ends).
func (n *Network) reset(c *conn) {
	n.mu.Lock()
	n.counts.Resets++
	n.mu.Unlock()
	c.breakDown()
}

func (n *Network) forget(c *conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// ephemeral returns a new local address on host, for a connection it dials.
func (n *Network) ephemeral(host string) *net.TCPAddr {
	n.ports[host]++
	return &net.TCPAddr{IP: net.ParseIP(host), Port: 32768 + n.ports[host]%28000}
}

func tcpAddr(address string) (*net.TCPAddr, error) {
	h, p, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(p)
	ip := net.ParseIP(h)
	if err != nil || ip == nil {
		return nil, &net.AddrError{Err: "not an ip:port", Addr: address}
	}
	return &net.TCPAddr{IP: ip, Port: port}, nil
}

// Host is one host of the network: its dialler, listener and gossip transport.
type Host struct {
	n  *Network
	ip string
}

// Host returns the host with address ip ("10.0.0.1").
func (n *Network) Host(ip string) *Host { return &Host{n: n, ip: ip} }

// IP returns the host's address.
func (h *Host) IP() string { return h.ip }

// Dial connects to a listener, for remote.Config.Dial. It is refused across a cut
// link (either way: TCP's handshake needs both) and when nothing listens.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	to, err := tcpAddr(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	n := h.n
	n.mu.Lock()
	n.counts.Dials++
	l := n.listeners[to.String()]
	peer := to.IP.String()
	there, back := n.fault(h.ip, peer), n.fault(peer, h.ip)
	delay := there.Delay + back.Delay
	if l == nil || there.Cut || back.Cut {
		n.counts.DialsRefused++
		n.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: network, Addr: to, Err: ErrUnreachable}
	}
	a, b := pipe(n, n.ephemeral(h.ip), to)
	n.conns[a], n.conns[b] = struct{}{}, struct{}{}
	n.mu.Unlock()
	if delay > 0 { // the handshake's round trip
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			_ = a.Close()
			_ = b.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: to, Err: ctx.Err()}
		}
	}
	select {
	case l.accept <- b:
		return a, nil
	case <-l.done:
	case <-ctx.Done():
	}
	_ = a.Close()
	_ = b.Close()
	return nil, &net.OpError{Op: "dial", Net: network, Addr: to, Err: ErrUnreachable}
}

// Listen listens on address (this host's IP and a port), for remote.Config.Listen.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	a, err := tcpAddr(address)
	if err != nil {
		return nil, err
	}
	if a.IP.String() != h.ip {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: a, Err: errors.New("sim: not this host's address")}
	}
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if a.Port == 0 {
		a = n.ephemeral(h.ip)
	}
	if n.listeners[a.String()] != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: a, Err: errors.New("sim: address in use")}
	}
	l := &listener{n: n, addr: a, accept: make(chan *conn), done: make(chan struct{})}
	n.listeners[a.String()] = l
	return l, nil
}

type listener struct {
	n         *Network
	addr      *net.TCPAddr
	accept    chan *conn
	done      chan struct{}
	closeOnce sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		l.n.mu.Lock()
		if l.n.listeners[l.addr.String()] == l {
			delete(l.n.listeners, l.addr.String())
		}
		l.n.mu.Unlock()
		close(l.done)
	})
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }
