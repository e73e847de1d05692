package multinode

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NodePackage is the program BuildNode builds: the test kit's node program, which runs
// one cluster node and reports what it sees as JSON lines (see Line).
const NodePackage = "github.com/troupe-go/troupe/testkit/multinode/internal/nodeproc"

// BuildNode builds NodePackage with the go command into a temporary directory of the
// test and returns the binary's path. The go build cache makes every build after the
// first in a test run take about a second. It skips the test when the go command is
// not on PATH (go test puts it there).
func BuildNode(t testing.TB) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("multinode: no go command to build %s: %v", NodePackage, err)
	}
	bin := filepath.Join(t.TempDir(), "clusternode")
	out, err := exec.Command(goCmd, "build", "-o", bin, NodePackage).CombinedOutput()
	if err != nil {
		t.Fatalf("multinode: go build %s: %v\n%s", NodePackage, err, out)
	}
	return bin
}

// Process is an OS process started by StartProcess. Its standard output is kept line
// by line for WaitFor, and every line of its output (standard error too) is written to
// the test log. It is killed with SIGKILL, if still running, when the test ends.
type Process struct {
	t    testing.TB
	cmd  *exec.Cmd
	name string

	mu      sync.Mutex
	lines   []string      // standard output so far
	changed chan struct{} // closed and replaced when a line arrives or the process exits

	readers sync.WaitGroup
	exited  chan struct{} // closed once the output is read and the process has exited
	err     error         // from Wait, set before exited is closed
}

// StartProcess starts bin with args and fails the test if it cannot.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	return startProcess(t, filepath.Base(bin), bin, args...)
}

// startProcess is StartProcess with the label its log lines start with (the pid is
// added).
func startProcess(t testing.TB, label, bin string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("multinode: %v", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("multinode: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("multinode: starting %s: %v", bin, err)
	}
	p := &Process{
		t:       t,
		cmd:     cmd,
		name:    label + "[" + strconv.Itoa(cmd.Process.Pid) + "]",
		changed: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	p.readers.Add(2)
	go p.read(stdout, true)
	go p.read(stderr, false)
	go func() {
		p.readers.Wait() // Wait must not close the pipes before they are read
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.notifyLocked()
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// read logs the lines of one output stream and keeps those of standard output.
func (p *Process) read(r io.Reader, keep bool) {
	defer p.readers.Done()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.t.Logf("%s: %s", p.name, line)
		if keep {
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.notifyLocked()
			p.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, r) // a line too long for the scanner: drain the rest
}

func (p *Process) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Lines returns a copy of the standard output lines read so far.
func (p *Process) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// WaitFor waits until match accepts a line of standard output and returns that line.
// match is called once for each line, in order, from the first line the process
// printed, so it may count lines. WaitFor fails the test (naming what it waited for)
// when timeout passes or the process exits first.
func (p *Process) WaitFor(timeout time.Duration, what string, match func(line string) bool) string {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	next := 0
	for {
		p.mu.Lock()
		lines, changed, done := p.lines[next:], p.changed, p.isExited()
		next = len(p.lines)
		p.mu.Unlock()
		for _, line := range lines {
			if match(line) {
				return line
			}
		}
		if done {
			p.t.Fatalf("multinode: %s exited (%v) before %s", p.name, p.ExitErr(), what)
		}
		select {
		case <-changed:
		case <-deadline.C:
			p.t.Fatalf("multinode: %s: no %s within %v", p.name, what, timeout)
		}
	}
}

func (p *Process) isExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Exited is closed once the process has exited and its output has been read.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr returns nil for a process that exited with status 0, the *exec.ExitError
// for another status or a signal, and nil while it is still running.
func (p *Process) ExitErr() error {
	if !p.isExited() {
		return nil
	}
	return p.err
}

// Kill kills the process with SIGKILL, as a crash would, and waits until it has
// exited.
func (p *Process) Kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) && !p.isExited() {
		p.t.Errorf("multinode: killing %s: %v", p.name, err)
	}
	<-p.exited
}

// Stop asks the process to stop gracefully with SIGTERM and waits up to timeout for it
// to exit; then it kills it. It returns the process's exit error (nil for status 0),
// or an error when it had to be killed.
func (p *Process) Stop(timeout time.Duration) error {
	if !p.isExited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.exited:
		return p.ExitErr()
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("multinode: %s did not stop within %v of SIGTERM; killed", p.name, timeout)
	}
}
