package multinode

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/testkit/multinode/internal/nodeproto"
)

// Line is one line of the node program's output (a JSON object per line; see the
// package documentation for the protocol). Its fields:
//
//   - Time int64: when the node wrote it, in Unix nanoseconds of the machine's clock,
//     so that lines of several processes can be ordered.
//   - Kind string: KindNode, KindState, KindEvent, KindUp, KindDowned, KindStopped,
//     KindTerminated or KindError.
//   - Self *LineMember, Gossip string: the node and its gossip address (KindNode).
//   - Event string, Member *LineMember, Previous string, Role string: a cluster event
//     (KindEvent): one of the Event constants, the member it is about, the status
//     before (removed, margin-passed) and the role (oldest).
//   - Members, Unreachable []LineMember: the state (KindState).
//   - Reason string: why the services stopped (ReasonDowned, ReasonLeft), or what failed.
type Line = nodeproto.Line

// LineMember is a member in a Line: Addr, UID, HostPort, Status (a status name) and
// Age.
type LineMember = nodeproto.Member

// Kinds of lines, in the order a node writes them.
const (
	KindNode       = nodeproto.KindNode
	KindState      = nodeproto.KindState
	KindEvent      = nodeproto.KindEvent
	KindUp         = nodeproto.KindUp
	KindDowned     = nodeproto.KindDowned
	KindStopped    = nodeproto.KindStopped
	KindTerminated = nodeproto.KindTerminated
	KindError      = nodeproto.KindError
)

// Events of KindEvent lines, one per cluster event type.
const (
	EventJoined       = nodeproto.EventJoined
	EventUp           = nodeproto.EventUp
	EventLeaving      = nodeproto.EventLeaving
	EventExiting      = nodeproto.EventExiting
	EventDowned       = nodeproto.EventDowned
	EventRemoved      = nodeproto.EventRemoved
	EventMarginPassed = nodeproto.EventMarginPassed
	EventUnreachable  = nodeproto.EventUnreachable
	EventReachable    = nodeproto.EventReachable
	EventOldest       = nodeproto.EventOldest
)

// Reasons of KindStopped lines.
const (
	ReasonDowned = nodeproto.ReasonDowned
	ReasonLeft   = nodeproto.ReasonLeft
)

// NodeProcess is the node program (NodePackage) running as an OS process.
type NodeProcess struct {
	*Process
	// Unique is the node's remote address and incarnation uid.
	Unique cluster.UniqueAddress
	// HostPort is the node's remote host:port: how lines name it.
	HostPort string
	// Gossip is the node's gossip address, to pass to other nodes with -seed.
	Gossip string
}

// StartNode starts the node binary bin (see BuildNode) on 127.0.0.1, on free ports it
// picks itself, with args after those settings (so args may override them, for example
// with -remote-port and -gossip-port to restart a node on the same addresses). It waits
// up to 10s for the node's first line, which names it.
func StartNode(t testing.TB, bin string, args ...string) *NodeProcess {
	t.Helper()
	all := append([]string{"-host", "127.0.0.1", "-remote-port", "0", "-gossip-port", "0"}, args...)
	return startNode(t, StartProcess(t, bin, all...))
}

// startNode reads the first line of a started node program.
func startNode(t testing.TB, p *Process) *NodeProcess {
	t.Helper()
	n := &NodeProcess{Process: p}
	first := n.WaitLine(10*time.Second, "first line", func(Line) bool { return true })
	if first.Kind != KindNode || first.Self == nil {
		t.Fatalf("multinode: %s: first line %+v, want a %s line", p.name, first, KindNode)
	}
	n.Unique = cluster.UniqueAddress{Addr: first.Self.Addr, UID: first.Self.UID}
	n.HostPort, n.Gossip = first.Self.HostPort, first.Gossip
	return n
}

// parseLine decodes one line of the protocol.
func parseLine(s string) (Line, error) {
	var l Line
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return Line{}, fmt.Errorf("not a protocol line: %q: %w", s, err)
	}
	return l, nil
}

// NodeLines returns the node's lines so far, decoded; it fails the test on a line that
// is not part of the protocol.
func (n *NodeProcess) NodeLines() []Line {
	n.t.Helper()
	var out []Line
	for _, s := range n.Lines() {
		l, err := parseLine(s)
		if err != nil {
			n.t.Fatalf("multinode: %s: %v", n.name, err)
		}
		out = append(out, l)
	}
	return out
}

// WaitLine waits until match accepts a line of the node and returns it. match sees
// every line once, in order, from the first; a KindError line fails the test. It fails
// the test after timeout or when the process exits first.
func (n *NodeProcess) WaitLine(timeout time.Duration, what string, match func(Line) bool) Line {
	n.t.Helper()
	var found Line
	n.WaitFor(timeout, what, func(s string) bool {
		l, err := parseLine(s)
		if err != nil {
			n.t.Fatalf("multinode: %s: %v", n.name, err)
		}
		if l.Kind == KindError {
			n.t.Fatalf("multinode: %s: %s", n.name, l.Reason)
		}
		if match(l) {
			found = l
			return true
		}
		return false
	})
	return found
}

// ExpectNoLine checks that the node writes no line that match accepts, from now for d;
// lines written before are not looked at. It fails the test at the first such line.
func (n *NodeProcess) ExpectNoLine(d time.Duration, match func(Line) bool) {
	n.t.Helper()
	skip := len(n.Lines())
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		n.mu.Lock()
		lines, changed, done := n.lines[skip:], n.changed, n.isExited()
		skip = len(n.lines)
		n.mu.Unlock()
		for _, s := range lines {
			l, err := parseLine(s)
			if err != nil {
				n.t.Fatalf("multinode: %s: %v", n.name, err)
			}
			if match(l) {
				n.t.Fatalf("multinode: %s: unexpected line %s", n.name, s)
			}
		}
		if done {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		}
	}
}

// IsEvent reports whether l is the event about the member at hostPort.
func IsEvent(l Line, event, hostPort string) bool {
	return l.Kind == KindEvent && l.Event == event && l.Member != nil && l.Member.HostPort == hostPort
}

// WaitEvent waits until the node reports event about the member at hostPort and
// returns the line; it fails the test after timeout.
func (n *NodeProcess) WaitEvent(timeout time.Duration, event, hostPort string) Line {
	n.t.Helper()
	return n.WaitLine(timeout, event+" "+hostPort, func(l Line) bool { return IsEvent(l, event, hostPort) })
}

// WaitKind waits until the node writes a line of kind and returns it.
func (n *NodeProcess) WaitKind(timeout time.Duration, kind string) Line {
	n.t.Helper()
	return n.WaitLine(timeout, kind, func(l Line) bool { return l.Kind == kind })
}
