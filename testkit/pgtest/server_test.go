package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func query(ctx context.Context, connString string) (int, error) {
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n)
	return n, err
}

// TestServer starts a throwaway server, stops and restarts it, and closes
// it: the folder is gone afterwards.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if errors.Is(err, ErrNoPostgres) {
		if Required() {
			t.Fatal(err)
		}
		t.Skip("SKIP: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := query(ctx, s.ConnString); err != nil || n != 42 {
		t.Fatalf("query over TCP: %d, %v", n, err)
	}
	socket := "host=" + s.SocketDir + " port=" + strconv.Itoa(s.Port) + " user=" + User + " dbname=postgres"
	if n, err := query(ctx, socket); err != nil || n != 42 {
		t.Fatalf("query over the Unix socket: %d, %v", n, err)
	}

	if err := s.Halt(); err != nil {
		t.Fatal(err)
	}
	if err := s.Halt(); err != nil {
		t.Fatalf("second Halt: %v", err)
	}
	if _, err := query(ctx, s.ConnString); err == nil {
		t.Fatal("a halted server answered")
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatalf("second Resume: %v", err)
	}
	if n, err := query(ctx, s.ConnString); err != nil || n != 42 {
		t.Fatalf("query after Resume: %d, %v", n, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(s.base); !os.IsNotExist(err) {
		t.Errorf("the server's folder survived Close: %v", err)
	}
}

type fakeM struct{ runs int }

func (m *fakeM) Run() int { m.runs++; return 0 }

// TestMainWithoutPostgres: with no binaries and no connection string, Main
// skips the package, or fails it when EnvRequire asks for the tests.
func TestMainWithoutPostgres(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvConnString, "")
	saved := installDirs
	installDirs = filepath.Join(t.TempDir(), "*", "bin")
	defer func() { installDirs = saved }()
	if _, err := FindBinDir(); !errors.Is(err, ErrNoPostgres) {
		t.Fatalf("FindBinDir = %v, want ErrNoPostgres", err)
	}
	for _, required := range []string{"", "1"} {
		t.Setenv(EnvRequire, required)
		m := &fakeM{}
		var target Target
		code := Main(m, &target)
		want := 0
		if required == "1" {
			want = 1
		}
		if code != want || m.runs != 0 {
			t.Errorf("Main with %s=%q: code %d after %d runs, want %d without running", EnvRequire, required, code, m.runs, want)
		}
	}
}

// TestMainWithConnString: a connection string in the environment is used
// as it is, and no server is started.
func TestMainWithConnString(t *testing.T) {
	t.Setenv(EnvConnString, "postgres://elsewhere/db")
	m := &fakeM{}
	var target Target
	if code := Main(m, &target); code != 0 || m.runs != 1 {
		t.Fatalf("Main: code %d, %d runs", code, m.runs)
	}
	if target.ConnString != "postgres://elsewhere/db" || target.Server != nil {
		t.Errorf("target %+v", target)
	}
}
