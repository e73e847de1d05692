package multinode

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// network decides which gossip addresses can reach which: a partition cuts pairs.
type network struct {
	mu  sync.Mutex
	cut map[[2]string]bool
}

func (n *network) isCut(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[[2]string{from, to}]
}

func (n *network) set(a, b string, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut == nil {
		n.cut = make(map[[2]string]bool)
	}
	if cut {
		n.cut[[2]string{a, b}] = true
		n.cut[[2]string{b, a}] = true
	} else {
		delete(n.cut, [2]string{a, b})
		delete(n.cut, [2]string{b, a})
	}
}

// cutOneWay drops what from sends to to, but not the other way.
func (n *network) cutOneWay(from, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut == nil {
		n.cut = make(map[[2]string]bool)
	}
	n.cut[[2]string{from, to}] = true
}

func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

// faultTransport wraps a node's memberlist transport: packets to a cut address are
// dropped and dials to it fail. Every node's transport applies the same cuts: a pair cut
// both ways exchanges nothing, a pair cut one way only what the other end sends.
type faultTransport struct {
	memberlist.NodeAwareTransport
	net  *network
	self func() string
}

func (f *faultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if f.net.isCut(f.self(), addr) {
		return time.Now(), nil
	}
	return f.NodeAwareTransport.WriteTo(b, addr)
}

func (f *faultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if f.net.isCut(f.self(), a.Addr) {
		return time.Now(), nil
	}
	return f.NodeAwareTransport.WriteToAddress(b, a)
}

func (f *faultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if f.net.isCut(f.self(), addr) {
		return nil, fmt.Errorf("multinode: %s is cut off from %s", addr, f.self())
	}
	return f.NodeAwareTransport.DialTimeout(addr, timeout)
}

func (f *faultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if f.net.isCut(f.self(), a.Addr) {
		return nil, fmt.Errorf("multinode: %s is cut off from %s", a.Addr, f.self())
	}
	return f.NodeAwareTransport.DialAddressTimeout(a, timeout)
}
