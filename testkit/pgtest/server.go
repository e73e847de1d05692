package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoPostgres reports that no PostgreSQL server binaries (initdb and
// postgres) were found in PATH or in /usr/lib/postgresql/*/bin.
var ErrNoPostgres = errors.New("pgtest: no PostgreSQL binaries (initdb, postgres) in PATH or /usr/lib/postgresql/*/bin")

// User is the superuser of a throwaway server. It logs in without a
// password, over TCP on 127.0.0.1 and over the Unix socket.
const User = "troupe"

// Options configure a throwaway server. The zero value is meant for tests.
type Options struct {
	// Fsync keeps PostgreSQL's fsync on, so that commits wait for the disk
	// as they do in production; benchmarks want it. Off by default, which
	// keeps tests fast: a commit still waits for the server to write its
	// log, it just does not wait for the disk.
	Fsync bool
}

// Server is a throwaway PostgreSQL server: a data folder made with initdb in
// a temporary folder, and a postgres process listening on 127.0.0.1 at a
// free port and on a Unix socket in that folder. Close stops it and deletes
// the folder.
type Server struct {
	// ConnString reaches the server over TCP as User, database postgres.
	ConnString string
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// SocketDir is the folder of the server's Unix socket.
	SocketDir string

	bin   string // folder of initdb and postgres
	base  string // the temporary folder: data/ and sock/
	data  string
	opts  Options
	cred  *syscall.Credential // the postgres user's, when running as root
	mu    sync.Mutex
	proc  *process // nil while halted
	close sync.Once
}

// process is one run of postgres.
type process struct {
	cmd    *exec.Cmd
	log    *logWriter
	exited chan struct{} // closed when the process has exited and its output is read
	err    error         // of Wait, set before exited closes
}

// installDirs is where FindBinDir looks after PATH: Debian's and Ubuntu's
// packages install each major version there.
var installDirs = "/usr/lib/postgresql/*/bin"

// FindBinDir returns the folder holding initdb and postgres: the one in
// PATH, or else the newest /usr/lib/postgresql/<version>/bin.
func FindBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(installDirs)
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoPostgres
}

// versionOf reads the major version out of /usr/lib/postgresql/<v>/bin.
func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start creates a data folder with initdb and starts postgres on it. When
// the process runs as root, both run as the postgres user (PostgreSQL
// refuses to run as root), which owns the temporary folder. It fails with
// ErrNoPostgres when FindBinDir does.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, opts: opts}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresCredential(); err != nil {
			return nil, err
		}
	}
	if s.base, err = os.MkdirTemp("", "troupe-pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s.data = filepath.Join(s.base, "data")
	s.SocketDir = filepath.Join(s.base, "sock")
	if err := s.prepare(ctx); err != nil {
		_ = os.RemoveAll(s.base)
		return nil, err
	}
	// A free port may be taken between choosing and binding it: try again.
	for attempt := 0; ; attempt++ {
		if s.Port, err = freePort(); err == nil {
			err = s.start(ctx)
		}
		if err == nil || attempt == 2 || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(s.base)
		return nil, err
	}
	s.ConnString = fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", User, s.Port)
	return s, nil
}

// postgresCredential returns the credential of the postgres user.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses to: no postgres user to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pgtest: postgres user has uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// prepare makes the socket folder and runs initdb.
func (s *Server) prepare(ctx context.Context) error {
	if err := os.Mkdir(s.SocketDir, 0o700); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		for _, p := range []string{s.base, s.SocketDir} {
			if err := os.Chown(p, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
				return fmt.Errorf("pgtest: giving %s to the postgres user: %w", p, err)
			}
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "initdb"),
		"-D", s.data, "-U", User, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Env = childEnv()
	cmd.Dir = s.base
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

// childEnv is the environment of initdb and postgres: this process's, with
// messages in English (start waits for one) and no PG* variables that could
// point the tools elsewhere.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readyLine is what postgres logs once it accepts connections.
const readyLine = "database system is ready to accept connections"

// start runs postgres and waits until it logs that it accepts connections,
// or exits.
func (s *Server) start(ctx context.Context) error {
	fsync := "off"
	if s.opts.Fsync {
		fsync = "on"
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"),
		"-D", s.data,
		"-p", strconv.Itoa(s.Port),
		"-k", s.SocketDir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync="+fsync,
		"-c", "full_page_writes="+fsync,
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
		"-c", "logging_collector=off",
		"-c", "log_destination=stderr",
		"-c", "lc_messages=C",
	)
	// Pdeathsig: a test binary that dies without stopping the server (a
	// panic, a kill) takes the server with it; SIGINT is a fast shutdown.
	// Setpgid keeps a terminal's Ctrl-C from reaching the server before the
	// tests have stopped it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGINT, Setpgid: true}
	cmd.Env = childEnv()
	cmd.Dir = s.base
	p := &process{cmd: cmd, log: newLogWriter(readyLine), exited: make(chan struct{})}
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-p.log.ready:
		s.mu.Lock()
		s.proc = p
		s.mu.Unlock()
		return nil
	case <-p.exited:
		return fmt.Errorf("pgtest: postgres exited before accepting connections: %v\n%s", p.err, p.log.tail())
	case <-ctx.Done():
		_ = stopProcess(p, time.Second)
		return fmt.Errorf("pgtest: waiting for postgres to accept connections: %w\n%s", ctx.Err(), p.log.tail())
	}
}

// stopProcess asks postgres for a fast shutdown (SIGINT: clients are
// disconnected, the log is flushed) and waits up to grace before killing
// the process group.
func stopProcess(p *process, grace time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("pgtest: postgres did not stop within %v and was killed\n%s", grace, p.log.tail())
}

// Halt stops the server with a fast shutdown, as an operator or a crash of
// the database host would, keeping its data: open connections break and new
// ones are refused until Resume. Halting a halted server does nothing.
func (s *Server) Halt() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return stopProcess(p, 30*time.Second)
}

// Resume starts a halted server again on the same port and data. Resuming a
// running server does nothing.
func (s *Server) Resume(ctx context.Context) error {
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		return nil
	}
	return s.start(ctx)
}

// Close stops the server and deletes its folder. Calling it again does
// nothing.
func (s *Server) Close() error {
	var err error
	s.close.Do(func() {
		err = s.Halt()
		if rerr := os.RemoveAll(s.base); err == nil && rerr != nil {
			err = fmt.Errorf("pgtest: %w", rerr)
		}
	})
	return err
}

// logWriter collects the server's output, keeps its last lines for error
// messages, and closes ready when a line contains the ready text.
type logWriter struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	want    string
	ready   chan struct{}
	isReady bool
}

const keptLines = 40

func newLogWriter(want string) *logWriter {
	return &logWriter{want: want, ready: make(chan struct{})}
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if len(w.lines) == keptLines {
			copy(w.lines, w.lines[1:])
			w.lines = w.lines[:keptLines-1]
		}
		w.lines = append(w.lines, line)
		if !w.isReady && strings.Contains(line, w.want) {
			w.isReady = true
			close(w.ready)
		}
	}
	return len(b), nil
}

// tail returns the last lines the server wrote.
func (w *logWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(append(w.lines, string(w.partial)), "\n")
}
