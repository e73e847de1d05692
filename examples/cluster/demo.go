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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// child is one node process of the demo.
type child struct {
	cmd      *exec.Cmd
	hostPort string // its remote host:port, the prefix of its lines
	unique   cluster.UniqueAddress
	gossip   string
	exited   chan struct{} // closed once its output is read and it has exited
}

// demo starts the nodes and follows their output.
type demo struct {
	mu       sync.Mutex
	children []*child
	up       map[[2]string]bool // [observer, member] host:ports seen "up"
	removed  map[[2]string]bool // [observer, member] host:ports seen "removed"
	passed   map[[2]string]bool // [observer, member] host:ports seen "margin-passed"
	changed  chan struct{}      // signalled after every line and every exit
}

// say prints a line of the demo's own.
func say(format string, args ...any) {
	fmt.Printf("--- "+format+"\n", args...)
}

func runDemo(o options) error {
	if o.nodes < 3 {
		return errors.New("-nodes must be at least 3")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	d := &demo{up: make(map[[2]string]bool), removed: make(map[[2]string]bool), passed: make(map[[2]string]bool),
		changed: make(chan struct{}, 1)}
	defer d.stopAll()
	start := time.Now()

	say("starting %d nodes, each a process running %s -node", o.nodes, exe)
	for i := range o.nodes {
		args := o.childArgs()
		if i > 0 {
			args = append(args, "-seed", d.children[0].gossip)
		}
		if err := d.start(exe, args); err != nil {
			return err
		}
	}
	all := d.children
	if err := d.wait(ctx, 30*time.Second, "every node to see every node Up", func() bool {
		for _, a := range all {
			for _, b := range all {
				if !d.up[[2]string{a.hostPort, b.hostPort}] {
					return false
				}
			}
		}
		return true
	}); err != nil {
		return err
	}

	leaver := all[len(all)-1]
	rest := all[:len(all)-1]
	say("every node sees %d members Up; stopping %s with SIGTERM: it leaves gracefully", len(all), leaver.hostPort)
	if err := leaver.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := d.waitRemoved(ctx, rest, leaver, true); err != nil {
		return err
	}

	// Kill the member with the highest address: on an equal split (-nodes 3) the side
	// with the lowest address survives, so there is always a survivor to watch.
	victim := rest[0]
	for _, c := range rest[1:] {
		if c.unique.Compare(victim.unique) > 0 {
			victim = c
		}
	}
	var survivors []*child
	for _, c := range rest {
		if c != victim {
			survivors = append(survivors, c)
		}
	}
	say("%s has left; killing %s with SIGKILL: the others see it unreachable, and after %v of no change the split-brain resolver downs it",
		leaver.hostPort, victim.hostPort, o.stableAfter)
	if err := victim.cmd.Process.Kill(); err != nil {
		return err
	}
	if err := d.waitRemoved(ctx, survivors, victim, false); err != nil {
		return err
	}
	say("%s was downed and removed; its work may be taken over once the down-removal margin (%v) has passed",
		victim.hostPort, o.stableAfter)
	if err := d.wait(ctx, 60*time.Second, "the margin to pass", func() bool {
		for _, c := range survivors {
			if !d.passed[[2]string{c.hostPort, victim.hostPort}] {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}

	say("the margin passed; stopping the survivors with SIGTERM")
	for _, c := range survivors {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	if err := d.wait(ctx, 30*time.Second, "the survivors to stop", func() bool {
		for _, c := range survivors {
			if !exited(c) {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	say("done in %v", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// waitRemoved waits until every observer has printed that member was removed, and,
// with andExit, until member's process has exited.
func (d *demo) waitRemoved(ctx context.Context, observers []*child, member *child, andExit bool) error {
	return d.wait(ctx, 60*time.Second, member.hostPort+" to be removed", func() bool {
		if andExit && !exited(member) {
			return false
		}
		for _, c := range observers {
			if !d.removed[[2]string{c.hostPort, member.hostPort}] {
				return false
			}
		}
		return true
	})
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
	if err := parseFirstLine(first, c); err != nil {
		_ = cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		return err
	}
	d.mu.Lock()
	d.children = append(d.children, c)
	d.mu.Unlock()
	go d.follow(c, lines)
	return nil
}

// parseFirstLine reads "[host:port] node ADDRESS uid UID gossip HOST:PORT".
func parseFirstLine(line string, c *child) error {
	f := strings.Fields(line)
	if len(f) != 7 || f[1] != "node" || f[3] != "uid" || f[5] != "gossip" {
		return fmt.Errorf("unexpected first line from a node: %q", line)
	}
	uid, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		return fmt.Errorf("first line %q: %w", line, err)
	}
	c.hostPort = strings.Trim(f[0], "[]")
	c.unique = cluster.UniqueAddress{Addr: f[2], UID: uid}
	c.gossip = f[6]
	return nil
}

// follow prints a node's lines and records the events the demo waits for, then waits
// for the process to exit.
func (d *demo) follow(c *child, lines *bufio.Scanner) {
	for lines.Scan() {
		line := lines.Text()
		fmt.Println(line)
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == "state:" { // "state: members hp=Up(up for 2s) ...; oldest hp"
			d.mu.Lock()
			for _, m := range f[3:] {
				if hp, status, ok := strings.Cut(strings.TrimSuffix(m, ";"), "="); ok && strings.HasPrefix(status, "Up") {
					d.up[[2]string{strings.Trim(f[0], "[]"), hp}] = true
				}
			}
			d.mu.Unlock()
		} else if len(f) >= 3 {
			key := [2]string{strings.Trim(f[0], "[]"), f[2]}
			d.mu.Lock()
			switch f[1] {
			case "up":
				d.up[key] = true
			case "removed":
				d.removed[key] = true
			case "margin-passed":
				d.passed[key] = true
			}
			d.mu.Unlock()
		}
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
