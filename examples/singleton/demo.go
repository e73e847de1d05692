package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one node process of the demo.
type child struct {
	cmd      *exec.Cmd
	hostPort string // its remote host:port, the prefix of its lines
	gossip   string
	exited   chan struct{} // closed once its output is read and it has exited
}

// demo starts the nodes and follows their output.
type demo struct {
	mu       sync.Mutex
	children []*child
	running  map[string]bool   // host:port -> the singleton runs there
	reached  map[string]string // host:port -> where its proxy last reached the singleton
	started  map[string]time.Time
	changed  chan struct{} // signalled after every line and every exit
}

// stamp is the time format of every line.
const stamp = "15:04:05.000"

// say prints a line of the demo's own.
func say(format string, args ...any) {
	fmt.Printf(time.Now().Format(stamp)+" --- "+format+"\n", args...)
}

func runDemo(o options) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	d := &demo{running: make(map[string]bool), reached: make(map[string]string), started: make(map[string]time.Time),
		changed: make(chan struct{}, 1)}
	defer d.stopAll()
	begin := time.Now()

	say("starting 3 nodes, each a process running %s -node; the first is the oldest", exe)
	for i := range 3 {
		args := []string{"-node", "-stable-after", o.stableAfter.String(), "-log", o.logLevel}
		if i > 0 {
			args = append(args, "-seed", d.children[0].gossip)
		}
		if err := d.start(exe, args); err != nil {
			return err
		}
	}
	all := d.children
	if err := d.everyProxyReaches(ctx, all, all[0]); err != nil {
		return err
	}

	if err := pause(ctx, time.Second); err != nil {
		return err
	}
	victim, next, last := all[0], all[1], all[2]
	say("every proxy reaches the singleton on %s; killing that node with SIGKILL", victim.hostPort)
	killed := time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		return err
	}
	// The next oldest takes over. The two others may have become Up in the same round
	// of gossip, and then the one with the lower address counts as the older: which of
	// them it is depends on the ports they got.
	if err := d.wait(ctx, 60*time.Second, "the singleton to start on "+next.hostPort+" or "+last.hostPort, func() bool {
		return d.running[next.hostPort] || d.running[last.hostPort]
	}); err != nil {
		return err
	}
	if d.running[last.hostPort] {
		next, last = last, next
	}
	say("the singleton runs on %s, %v after the crash: failure detection, stable-after (%v), then the down-removal margin (%v)",
		next.hostPort, d.startedAt(next).Sub(killed).Round(100*time.Millisecond), o.stableAfter, o.stableAfter)
	if err := d.everyProxyReaches(ctx, []*child{next, last}, next); err != nil {
		return err
	}
	if err := pause(ctx, time.Second); err != nil {
		return err
	}

	say("stopping %s with SIGTERM: it hands the singleton over to %s, then leaves the cluster", next.hostPort, last.hostPort)
	leave := time.Now()
	if err := next.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := d.wait(ctx, 30*time.Second, "the singleton to start on "+last.hostPort, func() bool {
		return d.running[last.hostPort]
	}); err != nil {
		return err
	}
	say("the singleton runs on %s, %v after the SIGTERM", last.hostPort, d.startedAt(last).Sub(leave).Round(time.Millisecond))
	if err := d.everyProxyReaches(ctx, []*child{last}, last); err != nil {
		return err
	}
	if err := d.wait(ctx, 30*time.Second, next.hostPort+" to exit", func() bool { return exited(next) }); err != nil {
		return err
	}

	say("stopping %s", last.hostPort)
	_ = last.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(ctx, 30*time.Second, last.hostPort+" to exit", func() bool { return exited(last) }); err != nil {
		return err
	}
	say("done in %v", time.Since(begin).Round(100*time.Millisecond))
	return nil
}

// everyProxyReaches waits until the proxy of every node of from has reached the
// singleton on node on.
func (d *demo) everyProxyReaches(ctx context.Context, from []*child, on *child) error {
	return d.wait(ctx, 30*time.Second, "every proxy to reach the singleton on "+on.hostPort, func() bool {
		for _, c := range from {
			if d.reached[c.hostPort] != on.hostPort {
				return false
			}
		}
		return true
	})
}

func (d *demo) startedAt(c *child) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started[c.hostPort]
}

// pause lets the singleton count for a while.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start starts one node, reads its first line (its addresses) and follows the rest of
// its output in the background.
func (d *demo) start(exe string, args []string) error {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("node process %d exited before printing its address", cmd.Process.Pid)
	}
	first := lines.Text()
	fmt.Println(first)
	// "TIME [host:port] node ADDRESS gossip HOST:PORT"
	f := strings.Fields(first)
	if len(f) != 6 || f[2] != "node" || f[4] != "gossip" {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		return fmt.Errorf("unexpected first line from a node: %q", first)
	}
	c.hostPort, c.gossip = strings.Trim(f[1], "[]"), f[5]
	d.mu.Lock()
	d.children = append(d.children, c)
	d.mu.Unlock()
	go d.follow(c, lines)
	return nil
}

// follow prints a node's lines and records what the demo waits for, then waits for the
// process to exit.
func (d *demo) follow(c *child, lines *bufio.Scanner) {
	for lines.Scan() {
		line := lines.Text()
		fmt.Println(line)
		f := strings.Fields(line) // TIME [host:port] WHAT ...
		if len(f) < 3 {
			continue
		}
		d.mu.Lock()
		switch f[2] {
		case "singleton-started":
			d.running[c.hostPort] = true
			d.started[c.hostPort] = time.Now()
		case "singleton-stopped":
			d.running[c.hostPort] = false
		case "proxy-reached": // "proxy-reached the singleton on HOST:PORT (count N)"
			if len(f) >= 7 {
				d.reached[c.hostPort] = f[6]
			}
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

func exited(c *child) bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// wait waits until cond holds (checked under the lock after every line), the timeout
// passes, or ctx ends.
func (d *demo) wait(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.After(timeout)
	for {
		d.mu.Lock()
		ok := cond()
		d.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-d.changed:
		case <-deadline:
			return fmt.Errorf("gave up waiting %v for %s", timeout, what)
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s", what)
		}
	}
}

// stopAll stops the nodes still running: SIGTERM, then SIGKILL after 15 seconds.
func (d *demo) stopAll() {
	d.mu.Lock()
	children := d.children
	d.mu.Unlock()
	for _, c := range children {
		if !exited(c) {
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, c := range children {
		select {
		case <-c.exited:
		case <-time.After(15 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
}
