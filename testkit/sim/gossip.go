package sim

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// packetQueue is how many gossip packets a transport holds unread; more are dropped,
// as a full UDP socket buffer drops them.
const packetQueue = 1024

// Transport makes this host's gossip transport, for cluster.Config.Transport: packets
// and streams over the network, on the port cfg asks for (an ephemeral one for 0).
func (h *Host) Transport(cfg *memberlist.NetTransportConfig) (memberlist.NodeAwareTransport, error) {
	n := h.n
	n.mu.Lock()
	defer n.mu.Unlock()
	addr := &net.TCPAddr{IP: net.ParseIP(h.ip), Port: cfg.BindPort}
	if addr.Port == 0 {
		addr = n.ephemeral(h.ip)
	}
	if n.gossips[addr.String()] != nil {
		return nil, errors.New("sim: gossip address " + addr.String() + " in use")
	}
	t := &transport{
		n:       n,
		addr:    addr,
		packets: make(chan *memberlist.Packet, packetQueue),
		streams: make(chan net.Conn),
		done:    make(chan struct{}),
	}
	n.gossips[addr.String()] = t
	return t, nil
}

// transport is a host's memberlist transport on the network.
type transport struct {
	n        *Network
	addr     *net.TCPAddr
	packets  chan *memberlist.Packet
	streams  chan net.Conn
	done     chan struct{}
	shutdown sync.Once
}

// GetAutoBindPort returns the port the transport is on (the cluster advertises it).
func (t *transport) GetAutoBindPort() int { return t.addr.Port }

func (t *transport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		if a := net.ParseIP(ip); a != nil {
			return a, port, nil
		}
		return nil, 0, errors.New("sim: advertise address " + ip + " is not an IP")
	}
	return t.addr.IP, t.addr.Port, nil
}

func (t *transport) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	to, err := tcpAddr(addr)
	if err != nil {
		return now, err
	}
	n := t.n
	n.mu.Lock()
	n.counts.Packets++
	l := n.fault(t.addr.IP.String(), to.IP.String())
	dst := n.gossips[to.String()]
	lost := l.Cut || dst == nil || l.Loss > 0 && n.rng.Float64() < l.Loss
	if lost {
		n.counts.PacketsLost++
	}
	if base := n.latency[[2]string{t.addr.IP.String(), to.IP.String()}]; base > 0 {
		l.Delay += time.Duration(n.rng.Int64N(int64(base))) - base/2 // jitter
	}
	n.mu.Unlock()
	if lost {
		return now, nil // as UDP: sent, and nobody knows it was lost
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: t.addr, Timestamp: now}
	if l.Delay <= 0 {
		dst.deliver(p)
	} else {
		time.AfterFunc(l.Delay, func() { p.Timestamp = time.Now(); dst.deliver(p) })
	}
	return now, nil
}

// deliver queues a packet, or drops it when the queue is full or the transport shut down.
func (t *transport) deliver(p *memberlist.Packet) {
	select {
	case <-t.done:
		return
	default:
	}
	select {
	case t.packets <- p:
	default:
		t.n.mu.Lock()
		t.n.counts.PacketsDropped++
		t.n.mu.Unlock()
	}
}

func (t *transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

func (t *transport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	to, err := tcpAddr(addr)
	if err != nil {
		return nil, err
	}
	n := t.n
	from, peer := t.addr.IP.String(), to.IP.String()
	n.mu.Lock()
	n.counts.Dials++
	dst := n.gossips[to.String()]
	there, back := n.fault(from, peer), n.fault(peer, from)
	if dst == nil || there.Cut || back.Cut {
		n.counts.DialsRefused++
		n.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: to, Err: ErrUnreachable}
	}
	a, b := pipe(n, n.ephemeral(from), to)
	n.conns[a], n.conns[b] = struct{}{}, struct{}{}
	n.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if d := there.Delay + back.Delay; d > 0 {
		select {
		case <-time.After(d):
		case <-timer.C:
			_, _ = a.Close(), b.Close()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: to, Err: errors.New("i/o timeout")}
		}
	}
	select {
	case dst.streams <- b:
		return a, nil
	case <-dst.done:
	case <-timer.C:
	}
	_, _ = a.Close(), b.Close()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: to, Err: ErrUnreachable}
}

func (t *transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

func (t *transport) StreamCh() <-chan net.Conn { return t.streams }

// Shutdown takes the transport off the network.
func (t *transport) Shutdown() error {
	t.shutdown.Do(func() {
		t.n.mu.Lock()
		if t.n.gossips[t.addr.String()] == t {
			delete(t.n.gossips, t.addr.String())
		}
		t.n.mu.Unlock()
		close(t.done)
	})
	return nil
}
