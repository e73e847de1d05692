package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one node process of the demo.
type child struct {
	cmd        *exec.Cmd
	stdin      io.WriteCloser
	hostPort   string // its remote host:port, the prefix of its lines
	remotePort string
	gossip     string
	dir        string
	exited     chan struct{} // closed once its output is read and it has exited
}

// view is what a node last printed about the values and the cluster.
type view struct {
	members int
	cart    string
	hits    string
}

// demo starts the nodes and follows their output.
type demo struct {
	exe     string
	mu      sync.Mutex
	views   map[string]*view // by host:port
	changed chan struct{}    // signalled after every line and every exit
}

// say prints a line of the demo's own.
func say(format string, args ...any) {
	fmt.Printf("--- "+format+"\n", args...)
}

func runDemo(o options) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	base, err := os.MkdirTemp("", "troupe-ddata-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	d := &demo{exe: exe, views: make(map[string]*view), changed: make(chan struct{}, 1)}
	start := time.Now()

	say("starting 3 nodes, each a process running %s -node; the cart is durable (stored under %s), the hit counter is not", exe, base)
	var nodes []*child
	for i := range 3 {
		args := []string{"-host", o.host, "-log", o.logLevel}
		if i > 0 {
			args = append(args, "-seed", nodes[0].gossip)
		}
		c, err := d.start(filepath.Join(base, "node"+strconv.Itoa(i)), args)
		if err != nil {
			d.stopAll(nodes)
			return err
		}
		nodes = append(nodes, c)
	}
	defer func() { d.stopAll(nodes) }()
	if err := d.wait(ctx, nodes, 30*time.Second, "every node to see 3 members Up", func(v *view) bool { return v.members == 3 }); err != nil {
		return err
	}

	say("changing the values on every node: add apples (on node 0), add pears (node 1), hit 5 (node 2), hit 2 (node 0)")
	d.send(nodes[0], "add apples")
	d.send(nodes[1], "add pears")
	d.send(nodes[2], "hit 5")
	d.send(nodes[0], "hit 2")
	if err := d.waitValues(ctx, nodes, "[apples pears]", "7"); err != nil {
		return err
	}

	victim := nodes[2]
	survivors := nodes[:2]
	say("every node shows the same values; killing %s with SIGKILL", victim.hostPort)
	_ = victim.cmd.Process.Kill()
	<-victim.exited
	say("while it is down: add plums (node 0), remove pears (node 1), hit 3 (node 1)")
	d.send(nodes[0], "add plums")
	d.send(nodes[1], "remove pears")
	d.send(nodes[1], "hit 3")
	if err := d.waitValues(ctx, survivors, "[apples plums]", "10"); err != nil {
		return err
	}

	say("restarting %s on the same addresses: it loads its cart from disk, then catches up by gossip", victim.hostPort)
	args := []string{"-host", o.host, "-log", o.logLevel, "-remote-port", victim.remotePort,
		"-gossip-port", strings.TrimPrefix(victim.gossip[strings.LastIndex(victim.gossip, ":"):], ":"), "-seed", nodes[0].gossip}
	restarted, err := d.start(victim.dir, args)
	if err != nil {
		return err
	}
	nodes[2] = restarted
	if err := d.waitValues(ctx, nodes, "[apples plums]", "10"); err != nil {
		return err
	}
	say("all three agree again; add figs and hit 1 on the restarted node")
	d.send(restarted, "add figs")
	d.send(restarted, "hit 1")
	if err := d.waitValues(ctx, nodes, "[apples figs plums]", "11"); err != nil {
		return err
	}
	say("converged: every node shows cart [apples figs plums] and hits 11; stopping the nodes")
	d.stopAll(nodes)
	say("done in %v", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// start starts one node with its durable store in dir, reads its first line (its
// addresses) and follows the rest of its output in the background.
func (d *demo) start(dir string, args []string) (*child, error) {
	cmd := exec.Command(d.exe, append([]string{"-node", "-dir", dir}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, stdin: stdin, dir: dir, exited: make(chan struct{})}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("node process %d exited before printing its address", cmd.Process.Pid)
	}
	first := lines.Text()
	fmt.Println(first)
	// "[host:port] node ADDRESS uid UID gossip HOST:PORT"
	f := strings.Fields(first)
	if len(f) != 7 || f[1] != "node" || f[5] != "gossip" {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		return nil, fmt.Errorf("unexpected first line from a node: %q", first)
	}
	c.hostPort, c.gossip = strings.Trim(f[0], "[]"), f[6]
	c.remotePort = c.hostPort[strings.LastIndex(c.hostPort, ":")+1:]
	d.mu.Lock()
	d.views[c.hostPort] = &view{}
	d.mu.Unlock()
	go d.follow(c, lines)
	return c, nil
}

// send writes a command to a node's standard input.
func (d *demo) send(c *child, cmd string) {
	_, _ = io.WriteString(c.stdin, cmd+"\n")
}

// follow prints a node's lines and records its view, then waits for the process.
func (d *demo) follow(c *child, lines *bufio.Scanner) {
	for lines.Scan() {
		line := lines.Text()
		fmt.Println(line)
		_, rest, _ := strings.Cut(line, "] ")
		kind, value, _ := strings.Cut(rest, " ")
		d.mu.Lock()
		v := d.views[c.hostPort]
		switch kind {
		case "members":
			v.members, _ = strconv.Atoi(value)
		case "cart":
			v.cart = value
		case "hits":
			v.hits = value
		}
		d.mu.Unlock()
		d.signal()
	}
	_ = c.cmd.Wait()
	close(c.exited)
	d.signal()
}

func (d *demo) signal() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// waitValues waits until every node of nodes shows the cart and the hits.
func (d *demo) waitValues(ctx context.Context, nodes []*child, cart, hits string) error {
	return d.wait(ctx, nodes, 30*time.Second, "cart "+cart+" and hits "+hits+" everywhere", func(v *view) bool {
		return v.cart == cart && v.hits == hits
	})
}

// wait waits until cond holds for the view of every node in nodes (checked after
// every line), the timeout passes, ctx ends, or a node exits.
func (d *demo) wait(ctx context.Context, nodes []*child, timeout time.Duration, what string, cond func(*view) bool) error {
	deadline := time.After(timeout)
	for {
		d.mu.Lock()
		ok := true
		for _, c := range nodes {
			ok = ok && cond(d.views[c.hostPort])
		}
		d.mu.Unlock()
		if ok {
			return nil
		}
		for _, c := range nodes {
			select {
			case <-c.exited:
				return fmt.Errorf("%s exited while waiting for %s", c.hostPort, what)
			default:
			}
		}
		select {
		case <-d.changed:
		case <-deadline:
			return fmt.Errorf("gave up waiting %v for %s", timeout, what)
		case <-ctx.Done():
			return errors.New("interrupted while waiting for " + what)
		}
	}
}

// stopAll stops the nodes still running: SIGTERM, then SIGKILL after 15 seconds.
func (d *demo) stopAll(nodes []*child) {
	for _, c := range nodes {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, c := range nodes {
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
}
