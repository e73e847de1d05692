package faultnet

import (
	"errors"
	"sync"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/remote"
)

// ErrCut is the error of a dial or write on a cut link (wrapped in a *net.OpError).
var ErrCut = errors.New("faultnet: link cut")

// remoteFault is what happens to what a node writes to another on remote connections.
type remoteFault int

const (
	remoteOK remoteFault = iota
	remoteRefuse
	remoteBlackhole
)

// fault is the state of one link direction.
type fault struct {
	gossip bool // gossip packets dropped and streams refused
	remote remoteFault
	delay  time.Duration // each remote write waits this long
}

// Network is a set of named nodes and the faults on the links between them. Its
// methods are safe for concurrent use. The zero Network is not usable: call New.
type Network struct {
	mu       sync.RWMutex      // read-locked on every write and packet, locked to change
	remotes  map[string]string // listening "host:port" -> node
	gossips  map[string]string // gossip "host:port" -> node
	dialled  map[string]string // local "host:port" of a dialled connection -> node
	conns    map[*conn]struct{}
	links    map[[2]string]fault
	isolated map[string]bool
}

// New returns a network with no faults.
func New() *Network {
	return &Network{
		remotes:  make(map[string]string),
		gossips:  make(map[string]string),
		dialled:  make(map[string]string),
		conns:    make(map[*conn]struct{}),
		links:    make(map[[2]string]fault),
		isolated: make(map[string]bool),
	}
}

// Node returns the seams of the node called name. A restarted node takes the same
// name again: the faults of its links carry over, its new addresses replace the old.
func (n *Network) Node(name string) *Node { return &Node{n: n, name: name} }

// Node is one node's way into a Network: its dialler, listener and gossip transport.
type Node struct {
	n    *Network
	name string
}

// Name returns the node's name.
func (nd *Node) Name() string { return nd.name }

// Install sets the node's seams in its remote and cluster configurations; either may
// be nil.
func (nd *Node) Install(r *remote.Config, c *cluster.Config) {
	if r != nil {
		r.Dial, r.Listen = nd.Dial, nd.Listen
	}
	if c != nil {
		c.Transport = nd.Transport
	}
}

// Cut loses what from sends to to, in gossip and on remote connections (see the
// package doc), until Restore, Heal, or Reconnect of either.
func (n *Network) Cut(from, to string) {
	n.update(from, to, func(f *fault) { f.gossip, f.remote = true, remoteRefuse })
}

// CutGossip drops what from sends to to in serf's gossip only.
func (n *Network) CutGossip(from, to string) {
	n.update(from, to, func(f *fault) { f.gossip = true })
}

// Blackhole swallows what from sends to to, in gossip and on remote connections,
// without an error (see the package doc).
func (n *Network) Blackhole(from, to string) {
	n.update(from, to, func(f *fault) { f.gossip, f.remote = true, remoteBlackhole })
}

// Slow delays each write from makes to to on a remote connection by delay; 0 ends the
// delay. Gossip is not delayed.
func (n *Network) Slow(from, to string, delay time.Duration) {
	n.update(from, to, func(f *fault) { f.delay = delay })
}

// Restore ends every fault of the direction from to.
func (n *Network) Restore(from, to string) {
	n.update(from, to, func(f *fault) { *f = fault{} })
}

// Heal ends every link's faults (isolated nodes stay isolated: see Reconnect).
func (n *Network) Heal() {
	n.mu.Lock()
	clear(n.links)
	stale := n.matching(func(c *conn) bool { return c.broken.Load() })
	n.mu.Unlock()
	closeAll(stale)
}

// Isolate cuts every link of the node called name, both ways, until Reconnect: its
// remote connections are closed, new ones refused, its gossip dropped.
func (n *Network) Isolate(name string) {
	n.mu.Lock()
	n.isolated[name] = true
	gone := n.matching(func(c *conn) bool { return c.local == name || n.peerOf(c) == name })
	n.mu.Unlock()
	closeAll(gone)
}

// Reconnect ends the isolation of the node called name.
func (n *Network) Reconnect(name string) {
	n.mu.Lock()
	delete(n.isolated, name)
	stale := n.matching(func(c *conn) bool { return c.broken.Load() && (c.local == name || n.peerOf(c) == name) })
	n.mu.Unlock()
	closeAll(stale)
}

// update changes the fault of from to, and closes the remote connections between the
// two that a new cut or black hole concerns, or that swallowed writes before a
// restore.
func (n *Network) update(from, to string, change func(*fault)) {
	n.mu.Lock()
	key := [2]string{from, to}
	f := n.links[key]
	before := f.remote
	change(&f)
	if f == (fault{}) {
		delete(n.links, key)
	} else {
		n.links[key] = f
	}
	between := func(c *conn) bool {
		p := n.peerOf(c)
		return c.local == from && p == to || c.local == to && p == from
	}
	var stale []*conn
	switch {
	case f.remote != remoteOK && f.remote != before:
		stale = n.matching(between)
	case f.remote == remoteOK && before == remoteBlackhole:
		stale = n.matching(func(c *conn) bool { return c.broken.Load() && between(c) })
	}
	n.mu.Unlock()
	closeAll(stale)
}

// faultOf returns the fault of from to; n.mu must be held (read-locked at least).
func (n *Network) faultOf(from, to string) fault {
	if from == "" || to == "" || from == to {
		return fault{}
	}
	if n.isolated[from] || n.isolated[to] {
		return fault{gossip: true, remote: remoteRefuse}
	}
	return n.links[[2]string{from, to}]
}

// matching returns the open connections for which keep holds; n.mu must be held.
func (n *Network) matching(keep func(*conn) bool) []*conn {
	var cs []*conn
	for c := range n.conns {
		if keep(c) {
			cs = append(cs, c)
		}
	}
	return cs
}

func closeAll(cs []*conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}
