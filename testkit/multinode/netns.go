package multinode

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/testkit"
)

// NetOptions configure a cluster of node processes, each in its own Linux network
// namespace (StartNet). Zero fields mean the documented defaults.
type NetOptions struct {
	// Nodes is how many nodes StartNet starts. Default 5.
	Nodes int
	// Segments puts the nodes on network segments, one bridge each; segment 0 is
	// joined to every other segment by a link that SetLink takes down and up, as a
	// partition between the segments would. Default: one segment with every node.
	Segments [][]int
	// Args are more flags for every node program, after the test kit's own (for
	// example "-stable-after", "3s", or "-strategy", "keep-oldest"). The defaults are
	// TestTiming and a stable-after of 2s.
	Args []string
}

// NetCluster is a cluster of node processes (the test kit's node program, see Line),
// each in its own network namespace, connected by veth pairs to one bridge per
// segment. Faults are real kernel faults: SetLink takes the link between two
// segments down, and Blackhole drops, in one namespace, every packet from another
// node (a one-way fault). Everything it creates (namespaces, links, bridges, processes)
// is removed when the test ends, whether it passed or not.
type NetCluster struct {
	t      testing.TB
	prefix string // of every namespace and interface name this cluster creates
	segOf  []int

	mu        sync.Mutex
	nodes     []*NetNode
	created   []string // host-side links and bridges, to delete
	nss       []string // namespaces, to delete
	blackhole map[[2]int]bool
}

// NetNode is one node process of a NetCluster.
type NetNode struct {
	*NodeProcess
	// Index is the node's position in the cluster.
	Index int
	// Namespace is the network namespace the process runs in.
	Namespace string
	// IP is the node's address on the cluster's network.
	IP string
}

// The node program's ports inside each namespace (each namespace has its own).
const (
	netRemotePort = 2552
	netGossipPort = 7946
)

// NetAvailable reports whether this process can create network namespaces (it runs as
// root on Linux, and the ip command works); the reason when it cannot.
func NetAvailable() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "not running as root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false, "no ip command: " + err.Error()
	}
	name := "trprobe" + randomHex(3)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return false, fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return true, ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StartNet builds the node program, creates a namespace per node and the segments'
// bridges, starts the nodes (the first as everybody's seed) and waits until every node
// sees every node Up. It skips the test, loudly, where namespaces cannot be created
// (not root, or not Linux): CI runs these tests as root.
func StartNet(t testing.TB, opts NetOptions) *NetCluster {
	t.Helper()
	if ok, why := NetAvailable(); !ok {
		t.Logf("multinode: SKIPPING a network-namespace test: %s; these tests need root on Linux (CI runs them)", why)
		t.Skipf("multinode: network namespaces unavailable: %s", why)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 5
	}
	if len(opts.Segments) == 0 {
		all := make([]int, opts.Nodes)
		for i := range all {
			all[i] = i
		}
		opts.Segments = [][]int{all}
	}
	if opts.Nodes > 200 || len(opts.Segments) > 9 {
		t.Fatalf("multinode: %d nodes on %d segments: at most 200 and 9", opts.Nodes, len(opts.Segments))
	}
	c := &NetCluster{t: t, prefix: "tr" + randomHex(3)[:5], segOf: make([]int, opts.Nodes), blackhole: make(map[[2]int]bool)}
	for i := range c.segOf {
		c.segOf[i] = -1
	}
	for s, nodes := range opts.Segments {
		for _, i := range nodes {
			if i < 0 || i >= opts.Nodes || c.segOf[i] >= 0 {
				t.Fatalf("multinode: segments %v: node %d out of range or twice", opts.Segments, i)
			}
			c.segOf[i] = s
		}
	}
	for i, s := range c.segOf {
		if s < 0 {
			t.Fatalf("multinode: segments %v leave node %d out", opts.Segments, i)
		}
	}
	bin := BuildNode(t)
	t.Cleanup(c.teardown) // after the processes are killed: cleanups run last first
	c.network(len(opts.Segments), opts.Nodes)
	var seed string
	for i := range opts.Nodes {
		args := []string{"-host", c.ip(i), "-remote-port", strconv.Itoa(netRemotePort),
			"-gossip-port", strconv.Itoa(netGossipPort), "-timing", "test", "-stable-after", "2s"}
		if i > 0 {
			args = append(args, "-seed", seed)
		}
		args = append(args, opts.Args...)
		ns := c.namespace(i)
		// ip execs the node program: the process is the node.
		p := startNode(t, startProcess(t, "node"+strconv.Itoa(i), "ip", append([]string{"netns", "exec", ns, bin}, args...)...))
		if i == 0 {
			seed = p.Gossip
		}
		c.mu.Lock()
		c.nodes = append(c.nodes, &NetNode{NodeProcess: p, Index: i, Namespace: ns, IP: c.ip(i)})
		c.mu.Unlock()
	}
	c.AwaitAllUp(testkit.Dilated(20 * time.Second))
	return c
}

func (c *NetCluster) namespace(i int) string { return c.prefix + "-" + strconv.Itoa(i) }
func (c *NetCluster) ip(i int) string {
	return "10.231." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1)
}
func (c *NetCluster) bridge(s int) string { return c.prefix + "b" + strconv.Itoa(s) }
func (c *NetCluster) link(s int) string   { return c.prefix + "l" + strconv.Itoa(s) }

// network creates the bridges, the links between segment 0 and the others, and a
// namespace per node attached to its segment's bridge. In every namespace the rule
// that looks up local addresses moves behind the rules Blackhole adds, so that those
// can drop packets addressed to the node itself.
func (c *NetCluster) network(segments, nodes int) {
	c.t.Helper()
	for s := range segments {
		c.mustIP("link", "add", c.bridge(s), "type", "bridge")
		c.remember(c.bridge(s))
		c.mustIP("link", "set", c.bridge(s), "up")
	}
	for s := 1; s < segments; s++ {
		a, b := c.link(s), c.prefix+"m"+strconv.Itoa(s)
		c.mustIP("link", "add", a, "type", "veth", "peer", "name", b)
		c.remember(a)
		c.mustIP("link", "set", a, "master", c.bridge(0))
		c.mustIP("link", "set", b, "master", c.bridge(s))
		c.mustIP("link", "set", a, "up")
		c.mustIP("link", "set", b, "up")
	}
	for i := range nodes {
		ns := c.namespace(i)
		c.mustIP("netns", "add", ns)
		c.mu.Lock()
		c.nss = append(c.nss, ns)
		c.mu.Unlock()
		host, peer := c.prefix+"n"+strconv.Itoa(i), c.prefix+"p"+strconv.Itoa(i)
		c.mustIP("link", "add", host, "type", "veth", "peer", "name", peer)
		c.remember(host)
		c.mustIP("link", "set", peer, "netns", ns)
		c.mustIP("-n", ns, "link", "set", peer, "name", "eth0")
		c.mustIP("-n", ns, "addr", "add", c.ip(i)+"/16", "dev", "eth0")
		c.mustIP("-n", ns, "link", "set", "eth0", "up")
		c.mustIP("-n", ns, "link", "set", "lo", "up")
		c.mustIP("-n", ns, "rule", "add", "pref", "100", "lookup", "local")
		c.mustIP("-n", ns, "rule", "del", "pref", "0")
		c.mustIP("link", "set", host, "master", c.bridge(c.segOf[i]))
		c.mustIP("link", "set", host, "up")
	}
}

func (c *NetCluster) remember(link string) {
	c.mu.Lock()
	c.created = append(c.created, link)
	c.mu.Unlock()
}

// runIP runs the ip command.
func runIP(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *NetCluster) mustIP(args ...string) {
	c.t.Helper()
	if err := runIP(args...); err != nil {
		c.t.Fatalf("multinode: %v", err)
	}
}

// teardown deletes the namespaces, links and bridges; deleting the host side of a veth
// pair deletes both ends.
func (c *NetCluster) teardown() {
	c.mu.Lock()
	nss, links := c.nss, c.created
	c.mu.Unlock()
	for _, ns := range nss {
		if err := runIP("netns", "del", ns); err != nil {
			c.t.Errorf("multinode: cleanup: %v", err)
		}
	}
	for i := len(links) - 1; i >= 0; i-- {
		if err := runIP("link", "del", links[i]); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
			c.t.Errorf("multinode: cleanup: %v", err)
		}
	}
}

// Node returns node i.
func (c *NetCluster) Node(i int) *NetNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Nodes returns every node.
func (c *NetCluster) Nodes() []*NetNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*NetNode(nil), c.nodes...)
}

// SetLink takes the link between segment 0 and segment s down (up false) or up: the
// two segments cannot exchange a packet while it is down.
func (c *NetCluster) SetLink(s int, up bool) {
	c.t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	c.mustIP("link", "set", c.link(s), state)
}

// Blackhole makes node to's namespace drop (on) every packet from node from, or stop
// doing so: a one-way fault, since what to sends from still arrives. serf's indirect
// probes route around it; a TCP connection between the two fails both ways.
func (c *NetCluster) Blackhole(from, to int, on bool) {
	c.t.Helper()
	c.mu.Lock()
	if c.blackhole[[2]int{from, to}] == on {
		c.mu.Unlock()
		return
	}
	c.blackhole[[2]int{from, to}] = on
	c.mu.Unlock()
	op := "del"
	if on {
		op = "add"
	}
	c.mustIP("-n", c.namespace(to), "rule", op, "pref", strconv.Itoa(10+from), "from", c.ip(from), "blackhole")
}

// AwaitAllUp waits until every node has reported every node Up.
func (c *NetCluster) AwaitAllUp(timeout time.Duration) {
	c.t.Helper()
	nodes := c.Nodes()
	for _, n := range nodes {
		up := make(map[string]bool)
		n.WaitLine(timeout, fmt.Sprintf("all %d members Up", len(nodes)), func(l Line) bool {
			for _, m := range l.Members {
				if m.Status == "Up" {
					up[m.HostPort] = true
				}
			}
			if l.Kind == KindEvent && l.Event == EventUp && l.Member != nil {
				up[l.Member.HostPort] = true
			}
			for _, m := range nodes {
				if !up[m.HostPort] {
					return false
				}
			}
			return true
		})
	}
}
