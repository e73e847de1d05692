package rollingtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one node process, restarted with the same environment each time.
type proc struct {
	name   string
	env    []string
	gossip string

	cmd    *exec.Cmd
	unique string        // the running incarnation's unique address, from its first line
	bound  time.Duration // its shutdown bound, from its first line
	exited chan struct{} // closed when the running incarnation has exited
	stderr *lockedBuffer
}

// start starts an incarnation and waits for its first line.
func (p *proc) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), p.env...)
	p.stderr = &lockedBuffer{}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	lines := bufio.NewScanner(out)
	first := make(chan string, 1)
	go func() {
		defer close(p.exited)
		if lines.Scan() {
			first <- lines.Text()
		}
		close(first)
		for lines.Scan() {
		}
		_ = cmd.Wait()
	}()
	select {
	case line, ok := <-first:
		var bound string
		if !ok {
			t.Fatalf("%s exited before it was ready: %s", p.name, p.stderr)
		}
		if _, err := fmt.Sscanf(line, "ready %s bound %s", &p.unique, &bound); err != nil {
			t.Fatalf("%s: first line %q: %v", p.name, line, err)
		}
		if p.bound, err = time.ParseDuration(bound); err != nil {
			t.Fatalf("%s: bound %q: %v", p.name, bound, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s not ready within a minute: %s", p.name, p.stderr)
	}
}

// terminate sends SIGTERM and waits for the exit; it returns how long that took.
func (p *proc) terminate(t *testing.T) time.Duration {
	t.Helper()
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(p.bound + 10*time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("%s did not exit within its bound %v after SIGTERM: %s", p.name, p.bound, p.stderr)
	}
	took := time.Since(began)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited with status %d after SIGTERM: %s", p.name, code, p.stderr)
	}
	if took > p.bound {
		t.Fatalf("%s took %v to exit, above its bound %v", p.name, took, p.bound)
	}
	return took
}

// kill ends the process at once (cleanup).
func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// lockedBuffer is a bytes.Buffer safe for the process's writer and the test's reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.b.String())
}

// freePort returns a port free for TCP and UDP on 127.0.0.1 (gossip uses both).
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}
