package faultnet

import (
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Transport makes this node's gossip transport, for cluster.Config.Transport: a
// memberlist.NetTransport of cfg whose packets and stream dials to other nodes of the
// network follow the links' faults.
func (nd *Node) Transport(cfg *memberlist.NetTransportConfig) (memberlist.NodeAwareTransport, error) {
	nt, err := memberlist.NewNetTransport(cfg)
	if err != nil {
		return nil, err
	}
	host := "127.0.0.1"
	if len(cfg.BindAddrs) > 0 {
		host = cfg.BindAddrs[0]
	}
	nd.n.mu.Lock()
	nd.n.gossips[net.JoinHostPort(host, strconv.Itoa(nt.GetAutoBindPort()))] = nd.name
	nd.n.mu.Unlock()
	return &gossip{NodeAwareTransport: nt, nt: nt, nd: nd}, nil
}

// gossip is a node's memberlist transport: packets on a cut link are dropped and
// stream dials refused. Every node applies the faults of its own outgoing links, so a
// link cut both ways carries nothing, and a link cut one way only what the other end
// sends.
type gossip struct {
	memberlist.NodeAwareTransport
	nt *memberlist.NetTransport
	nd *Node
}

// GetAutoBindPort returns the port the transport bound (the cluster advertises it).
func (g *gossip) GetAutoBindPort() int { return g.nt.GetAutoBindPort() }

func (g *gossip) cut(addr string) bool {
	n := g.nd.n
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.faultOf(g.nd.name, n.gossips[addr]).gossip
}

func (g *gossip) WriteTo(b []byte, addr string) (time.Time, error) {
	if g.cut(addr) {
		return time.Now(), nil
	}
	return g.NodeAwareTransport.WriteTo(b, addr)
}

func (g *gossip) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if g.cut(a.Addr) {
		return time.Now(), nil
	}
	return g.NodeAwareTransport.WriteToAddress(b, a)
}

func (g *gossip) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if g.cut(addr) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrCut}
	}
	return g.NodeAwareTransport.DialTimeout(addr, timeout)
}

func (g *gossip) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if g.cut(a.Addr) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrCut}
	}
	return g.NodeAwareTransport.DialAddressTimeout(a, timeout)
}
